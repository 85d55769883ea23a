// twinbit.TwinbitError and the array helpers every binding uses (common.h).
#include <cstring>

#include "common.h"

namespace twinbit::py {
namespace {
PyObject* g_error_type = nullptr;  // twinbit.TwinbitError, created once at import

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const StatusError& e) {
    // An instance with .code and .message, raised as the error's own type.
    nb::object err = nb::handle(g_error_type)(nb::str(e.what()));
    err.attr("code") = nb::str(tb_code_name(e.code));
    err.attr("message") = nb::str(e.what());
    PyErr_SetObject(g_error_type, err.ptr());
  }
}

// Memory owned by a capsule that frees it with the numpy array.
template <class T>
nb::capsule owner_of(T* p) {
  return nb::capsule(p, [](void* q) noexcept { delete[] static_cast<T*>(q); });
}
}  // namespace

FloatRows float_rows(const AnyArray& a, const char* what, int64_t want_cols) {
  if (a.dtype() != nb::dtype<float>()) {
    throw nb::type_error(
        (std::string(what) + " must be float32 (numpy.float32 / torch.float32); convert it with .astype(numpy.float32)").c_str());
  }
  if (a.device_type() != nb::device::cpu::value) {
    throw nb::value_error((std::string(what) + " must be in host memory (move a device tensor with .cpu())").c_str());
  }
  if (a.ndim() != 1 && a.ndim() != 2) {
    throw nb::value_error((std::string(what) + " must have 1 or 2 dimensions (K,) or (M, K), got " +
                           std::to_string(a.ndim())).c_str());
  }
  FloatRows r;
  r.one_d = a.ndim() == 1;
  r.rows = r.one_d ? 1 : static_cast<int64_t>(a.shape(0));
  r.cols = static_cast<int64_t>(a.shape(a.ndim() - 1));
  if (r.rows < 1 || r.cols < 1) throw nb::value_error((std::string(what) + " is empty").c_str());
  // Row-major with no gaps: the library reads rows of exactly `cols` floats.
  const bool contiguous = (a.shape(a.ndim() - 1) <= 1 || a.stride(a.ndim() - 1) == 1) &&
                          (r.one_d || a.shape(0) <= 1 || a.stride(0) == r.cols);
  if (!contiguous) {
    throw nb::value_error((std::string(what) + " must be C-contiguous (row-major); pass numpy.ascontiguousarray(x) or x.contiguous()").c_str());
  }
  if (want_cols >= 0 && r.cols != want_cols) {
    throw nb::value_error((std::string(what) + " has " + std::to_string(r.cols) + " columns; this entry takes K = " +
                           std::to_string(want_cols)).c_str());
  }
  r.data = static_cast<const float*>(a.data());
  return r;
}

NumpyF32 new_f32(int64_t rows, int64_t cols, bool one_d, float** data) {
  if (one_d) return new_f32_shape({static_cast<size_t>(cols)}, data);
  return new_f32_shape({static_cast<size_t>(rows), static_cast<size_t>(cols)}, data);
}

NumpyF32 new_f32_shape(std::initializer_list<size_t> shape, float** data) {
  size_t n = 1;
  for (size_t s : shape) n *= s;
  float* p = new float[n]();
  *data = p;
  return NumpyF32(p, shape.size(), shape.begin(), owner_of(p));
}

NumpyI8 new_i8(int64_t rows, int64_t cols, int8_t** data) {
  int8_t* p = new int8_t[static_cast<size_t>(rows * cols)]();
  *data = p;
  size_t shape[2] = {static_cast<size_t>(rows), static_cast<size_t>(cols)};
  return NumpyI8(p, 2, shape, owner_of(p));
}

NumpyU8 new_u8(int64_t rows, int64_t cols, uint8_t** data) {
  uint8_t* p = new uint8_t[static_cast<size_t>(rows * cols)]();
  *data = p;
  size_t shape[2] = {static_cast<size_t>(rows), static_cast<size_t>(cols)};
  return NumpyU8(p, 2, shape, owner_of(p));
}

tb_act_mode parse_mode(const std::string& mode) {
  if (mode == "f32") return TB_ACT_F32;
  if (mode == "i8") return TB_ACT_I8;
  throw nb::value_error(("mode must be 'f32' or 'i8', got '" + mode + "'").c_str());
}

void init_errors(nb::module_& m) {
  g_error_type = PyErr_NewExceptionWithDoc(
      "twinbit.TwinbitError",
      "An error of the twinbit library: .code is the status name (e.g. 'INVALID_ARGUMENT', "
      "'DATA_LOSS'), .message the library's message.",
      PyExc_RuntimeError, nullptr);
  m.attr("TwinbitError") = nb::handle(g_error_type);
  nb::register_exception_translator(translate);
}

}  // namespace twinbit::py
