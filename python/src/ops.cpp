// twinbit.Bound: the operations of a bound entry (gemm on strips, gemv on float rows) and the
// gated-delta step, on host float32 arrays read in place (no copy) and results in new arrays.
// The GIL is released while a backend computes.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <vector>

#include "core/reference.h"
#include "objects.h"

namespace twinbit::py {

const tb_strips& strips_of(const PyBound& b, const char* op) {
  if (b.entry.kind != TB_WEIGHTS_STRIPS) {
    throw nb::type_error(("entry '" + b.entry.name + "' is a float matrix; " + op + " takes strip entries (use gemv)").c_str());
  }
  return b.weights.view().strips;
}

const tb_matrix_f32& matrix_of(const PyBound& b, const char* op) {
  if (b.entry.kind != TB_WEIGHTS_F32) {
    throw nb::type_error(("entry '" + b.entry.name + "' is a strip set; " + op + " takes float matrices (use gemm)").c_str());
  }
  return b.weights.view().matrix;
}

I8Rows quantize_rows(const float* x, int64_t rows, int64_t k, int64_t kp) {
  // The contract's quantiser, as `twinbit run` and any engine following NUMERICS.md.
  I8Rows q;
  q.ldq = kp;
  q.ldd = kp / 32;
  q.codes.resize(static_cast<size_t>(rows * q.ldq));
  q.scales.resize(static_cast<size_t>(rows * q.ldd));
  ref::quantize_activations(rows, k, x, k, q.codes.data(), q.ldq, q.scales.data(), q.ldd);
  return q;
}

namespace {

NumpyF32 gemm(const PyBound& b, const AnyArray& x_in, const std::string& mode_name) {
  const tb_strips& w = strips_of(b, "gemm");
  const tb_act_mode mode = parse_mode(mode_name);
  FloatRows x = float_rows(x_in, "x", w.k);
  float* y = nullptr;
  NumpyF32 out = new_f32(x.rows, w.n, x.one_d, &y);
  {
    nb::gil_scoped_release release;
    I8Rows q;
    tb_gemm_args a{};
    a.mode = mode;
    a.m = x.rows;
    a.x = x.data;
    a.ldx = w.k;
    if (mode == TB_ACT_I8) {
      q = quantize_rows(x.data, x.rows, w.k, w.kp);
      a.xq = q.codes.data();
      a.ldxq = q.ldq;
      a.xd = q.scales.data();
      a.ldxd = q.ldd;
    }
    a.y = y;
    a.ldy = w.n;
    check(b.backend->gemm(b.weights, a));
  }
  return out;
}

NumpyF32 gemv(const PyBound& b, const AnyArray& x_in) {
  const tb_matrix_f32& w = matrix_of(b, "gemv");
  FloatRows x = float_rows(x_in, "x", w.cols);
  if (!x.one_d) throw nb::value_error("x of gemv must be one vector (cols,)");
  float* y = nullptr;
  NumpyF32 out = new_f32(1, w.rows, true, &y);
  {
    nb::gil_scoped_release release;
    check(b.backend->gemv_f32(b.weights, x.data, y));
  }
  return out;
}

// A float32 input of exactly `count` values (any shape, C-contiguous).
const float* values(const AnyArray& a, const char* what, int64_t count) {
  if (a.dtype() != nb::dtype<float>()) throw nb::type_error((std::string(what) + " must be float32").c_str());
  if (a.device_type() != nb::device::cpu::value) throw nb::value_error((std::string(what) + " must be in host memory").c_str());
  int64_t size = 1, expect = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) > 1 && a.stride(d) != expect) {
      throw nb::value_error((std::string(what) + " must be C-contiguous").c_str());
    }
    expect *= static_cast<int64_t>(a.shape(d));
    size *= static_cast<int64_t>(a.shape(d));
  }
  if (size != count) {
    throw nb::value_error((std::string(what) + " has " + std::to_string(size) + " values; the shapes of the other inputs need " +
                           std::to_string(count)).c_str());
  }
  return static_cast<const float*>(a.data());
}

void init_bound(nb::module_& m) {
  nb::class_<PyBound>(m, "Bound", "An artifact entry bound on a backend (Backend.bind); keeps both alive.")
      .def_prop_ro("entry", [](const PyBound& b) { return b.entry.name; })
      .def_prop_ro("kind", [](const PyBound& b) { return std::string(kind_name(b.entry.kind)); })
      .def_prop_ro("shape", [](const PyBound& b) { return std::make_tuple(b.entry.n, b.entry.k); },
                   "strips: (N, K); a float matrix: (rows, cols)")
      .def_prop_ro("backend", [](const PyBound& b) { return b.backend->name(); })
      .def("gemm", &gemm, nb::arg("x"), nb::arg("mode") = "f32",
           "y = x W^T for x (M, K) or (K,) float32 (numpy, or anything with __dlpack__, read in place); "
           "mode 'f32' or 'i8' (x quantised with the contract's quantiser). Returns a new float32 array "
           "(M, N) or (N,).")
      .def("gemv", &gemv, nb::arg("x"), "y = W x for a float-matrix entry: x (cols,) -> y (rows,).")
      .def("__repr__", [](const PyBound& b) {
        return "Bound('" + b.entry.name + "' on " + b.backend->name() + ")";
      });
}
}  // namespace

nb::tuple gdn_delta(const Backend* backend, const AnyArray& state, const AnyArray& q, const AnyArray& k,
                    const AnyArray& v, const AnyArray& g, const AnyArray& beta) {
  // Shapes from q (kh, kd) and v (vh, vd); the rest must agree (state vh*kd*vd, g and beta vh).
  if (q.ndim() != 2 || v.ndim() != 2) throw nb::value_error("q must be (kh, kd) and v (vh, vd)");
  tb_gdn_args a{};
  a.kh = static_cast<int64_t>(q.shape(0));
  a.kd = static_cast<int64_t>(q.shape(1));
  a.vh = static_cast<int64_t>(v.shape(0));
  a.vd = static_cast<int64_t>(v.shape(1));
  const float* s_in = values(state, "state", a.vh * a.kd * a.vd);
  a.q = values(q, "q", a.kh * a.kd);
  a.k = values(k, "k", a.kh * a.kd);
  a.v = values(v, "v", a.vh * a.vd);
  a.g = values(g, "g", a.vh);
  a.beta = values(beta, "beta", a.vh);
  float *s_out = nullptr, *o = nullptr;
  NumpyF32 state_out = new_f32_shape({static_cast<size_t>(a.vh), static_cast<size_t>(a.kd), static_cast<size_t>(a.vd)}, &s_out);
  NumpyF32 o_out = new_f32(a.vh, a.vd, false, &o);
  std::copy(s_in, s_in + a.vh * a.kd * a.vd, s_out);
  a.state = s_out;
  a.o = o;
  {
    nb::gil_scoped_release release;
    if (backend) {
      check(backend->gdn_delta(a));
    } else {
      ref::gdn_delta(a);
    }
  }
  return nb::make_tuple(state_out, o_out);
}

void init_ops(nb::module_& m) {
  init_bound(m);
}

}  // namespace twinbit::py
