// twinbit.reference: the scalar reference (core/reference.h) on numpy inputs, the weights taken
// from a Bound. What every backend must equal bit for bit.
#include <nanobind/stl/tuple.h>

#include "core/reference.h"
#include "objects.h"

namespace twinbit::py {
namespace {

nb::tuple quantize_activations(const AnyArray& x_in) {
  FloatRows x = float_rows(x_in, "x");
  const int64_t kp = (x.cols + 31) / 32 * 32, ng = kp / 32;
  int8_t* xq = nullptr;
  float* xd = nullptr;
  NumpyI8 q = new_i8(x.rows, kp, &xq);
  NumpyF32 d = new_f32(x.rows, ng, false, &xd);
  {
    nb::gil_scoped_release release;
    ref::quantize_activations(x.rows, x.cols, x.data, x.cols, xq, kp, xd, ng);
  }
  return nb::make_tuple(q, d);
}

NumpyF32 gemm(const PyBound& b, const AnyArray& x_in, tb_act_mode mode) {
  const tb_strips& w = strips_of(b, mode == TB_ACT_F32 ? "reference.gemm_f32" : "reference.gemm_i8");
  FloatRows x = float_rows(x_in, "x", w.k);
  float* y = nullptr;
  NumpyF32 out = new_f32(x.rows, w.n, x.one_d, &y);
  nb::gil_scoped_release release;
  if (mode == TB_ACT_F32) {
    ref::gemm_f32(w, x.rows, x.data, w.k, y, w.n);
  } else {
    const I8Rows q = quantize_rows(x.data, x.rows, w.k, w.kp);
    ref::gemm_i8(w, x.rows, q.codes.data(), q.ldq, q.scales.data(), q.ldd, y, w.n);
  }
  return out;
}

NumpyF32 gemv(const PyBound& b, const AnyArray& x_in) {
  const tb_matrix_f32& w = matrix_of(b, "reference.gemv_f32");
  FloatRows x = float_rows(x_in, "x", w.cols);
  if (!x.one_d) throw nb::value_error("x of gemv_f32 must be one vector (cols,)");
  float* y = nullptr;
  NumpyF32 out = new_f32(1, w.rows, true, &y);
  nb::gil_scoped_release release;
  ref::gemv_f32(w, x.data, y);
  return out;
}
}  // namespace

void init_reference(nb::module_& m) {
  nb::module_ r = m.def_submodule("reference", "The scalar reference: the contract every backend equals bit for bit.");
  r.def("gemm_f32", [](const PyBound& b, const AnyArray& x) { return gemm(b, x, TB_ACT_F32); }, nb::arg("bound"),
        nb::arg("x"), "The reference gemm in activation mode F32 on the weights of `bound`: x (M, K) or (K,).");
  r.def("gemm_i8", [](const PyBound& b, const AnyArray& x) { return gemm(b, x, TB_ACT_I8); }, nb::arg("bound"),
        nb::arg("x"), "The reference gemm in activation mode I8: x is quantised with quantize_activations first.");
  r.def("quantize_activations", &quantize_activations, nb::arg("x"),
        "The I8 activation quantiser: x (M, K) -> (codes int8 (M, Kp), scales float32 (M, Kp/32)), Kp = 32*ceil(K/32).");
  r.def("gemv_f32", &gemv, nb::arg("bound"), nb::arg("x"), "The reference gemv of a float-matrix entry: x (cols,) -> (rows,).");
  r.def("gdn_delta", [](const AnyArray& state, const AnyArray& q, const AnyArray& k, const AnyArray& v,
                        const AnyArray& g, const AnyArray& beta) { return gdn_delta(nullptr, state, q, k, v, g, beta); },
        nb::arg("state"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g"), nb::arg("beta"),
        "The reference gated-delta step (same arguments and results as Backend.gdn_delta).");
}

}  // namespace twinbit::py
