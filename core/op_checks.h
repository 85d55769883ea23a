// Argument checks shared by every backend and by the reference's callers, so that an impossible
// shape or a null pointer gets the same clear INVALID_ARGUMENT everywhere, before any kernel runs.
#pragma once

#include <cstring>

#include <twinbit/backend.h>
#include "core/precision.h"  // check_precision: every tb_prec arriving from outside
#include <twinbit/status.hpp>

namespace twinbit {

// Largest dimension accepted anywhere (artifact or call): 2^24 rows/cols, far beyond any LLM
// projection, small enough that every byte count below fits comfortably in 64 bits.
constexpr int64_t kMaxDim = int64_t{1} << 24;

// Byte sizes of a strip set's payloads, computed from the shape (never read from a file).
uint64_t strip_codes_bytes(tb_prec prec, int64_t n, int64_t k);
uint64_t strip_scales_bytes(int64_t n, int64_t k);

const char* prec_name(tb_prec prec);        // the table's name: "q8", "q4"
const char* act_mode_name(tb_act_mode m);   // "f32", "i8"
const char* op_name(tb_op op);              // "gemm", "gemv_f32", ...

// The int a C enum field holds, read as bytes: a C caller or plugin may store any int there, and
// loading a value that names no enumerator as the enum type is undefined behaviour in C++. Every
// enum field that arrives from outside is checked through this before it is compared.
template <class Enum>
int enum_field_value(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "the ABI's enums are int-sized C enums");
  int raw;
  std::memcpy(&raw, &field, sizeof raw);
  return raw;
}

// What supports() is asked for a gemm y[m][n] = x[m][k] * W (tb_op_desc: other fields 0).
inline tb_op_desc gemm_op_desc(tb_prec prec, tb_act_mode mode, int64_t m, int64_t n, int64_t k) {
  tb_op_desc d{};
  d.op = TB_OP_GEMM;
  d.prec = prec;
  d.mode = mode;
  d.m = m;
  d.n = n;
  d.k = k;
  return d;
}

// An op descriptor's enum fields name known values (op; for a gemm, prec and mode).
Status check_op_desc_fields(const tb_op_desc& op);

// The strip view is self-consistent: prec known, 1 <= n,k <= kMaxDim, np/kp the padded sizes,
// payload sizes as computed, pointers non-null, and its columns inside its projection:
// 1 <= n_total <= kMaxDim, 0 <= n_begin, n_begin % 32 == 0, n_begin + n <= n_total.
Status check_strips(const tb_strips& w);
Status check_matrix(const tb_matrix_f32& w);
// A gemm call on w: M in range (check_rows, core/rows.h), pointers for the mode non-null, leading dims large enough.
Status check_gemm_args(const tb_strips& w, const tb_gemm_args& a);
Status check_gdn_args(const tb_gdn_args& a);
// A quantize_i8 call: M in range (check_rows), 1 <= K <= kMaxDim, pointers non-null, ldx >= K,
// ldxq >= Kp, ldxd >= Kp/32.
Status check_quantize_args(const tb_quantize_args& a);

}  // namespace twinbit
