// What the binding files share: the status -> exception path, array checks and array makers.
//
// Errors: a library Status becomes twinbit.TwinbitError (a RuntimeError) carrying .code, the
// tb_code name ("INVALID_ARGUMENT", ...), and the library's message. Mistakes Python itself has a
// convention for are raised as such before the library is called: a wrong dtype is TypeError; a
// wrong shape, non-contiguous or device memory, an unknown mode is ValueError.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit::py {
namespace nb = nanobind;

// Thrown by the bindings; translated into twinbit.TwinbitError (errors.cpp).
struct StatusError : std::runtime_error {
  explicit StatusError(const Status& s) : std::runtime_error(s.message()), code(s.code()) {}
  tb_code code;
};

inline void check(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}
template <class T>
T take(Result<T>&& r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(r).value();
}

// Any array: numpy, or anything with __dlpack__ (torch tensors); checked by the functions below.
using AnyArray = nb::ndarray<nb::ro>;
using NumpyF32 = nb::ndarray<nb::numpy, float>;
using NumpyI8 = nb::ndarray<nb::numpy, int8_t>;
using NumpyU8 = nb::ndarray<nb::numpy, uint8_t>;

// A host, C-contiguous float32 array seen as rows x cols (a 1-D array is one row); `cols` must
// equal `want_cols` when it is >= 0. Raises TypeError / ValueError naming `what`.
struct FloatRows {
  const float* data = nullptr;
  int64_t rows = 0, cols = 0;
  bool one_d = false;
};
FloatRows float_rows(const AnyArray& a, const char* what, int64_t want_cols = -1);

// A new numpy float32 array of shape (rows, cols), or (cols,) when one_d; zero-filled.
NumpyF32 new_f32(int64_t rows, int64_t cols, bool one_d, float** data);
NumpyF32 new_f32_shape(std::initializer_list<size_t> shape, float** data);
NumpyI8 new_i8(int64_t rows, int64_t cols, int8_t** data);
NumpyU8 new_u8(int64_t rows, int64_t cols, uint8_t** data);

// Rows of x (rows x k, row stride k) quantised by the contract's activation quantiser, as every
// I8 caller must: codes (rows x kp, stride kp) and group scales (rows x kp/32, stride kp/32).
struct I8Rows {
  std::vector<int8_t> codes;
  std::vector<float> scales;
  int64_t ldq = 0, ldd = 0;
};
I8Rows quantize_rows(const float* x, int64_t rows, int64_t k, int64_t kp);

// "f32" / "i8" -> tb_act_mode; ValueError otherwise.
tb_act_mode parse_mode(const std::string& mode);

void init_errors(nb::module_& m);
void init_artifact(nb::module_& m);
void init_backend(nb::module_& m);
void init_ops(nb::module_& m);
void init_reference(nb::module_& m);
void init_compare(nb::module_& m);
void init_conformance(nb::module_& m);
void init_runtime(nb::module_& m);

}  // namespace twinbit::py
