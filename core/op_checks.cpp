#include "core/op_checks.h"

#include "core/numerics.h"
#include "core/rows.h"
#include "core/strip_layout.h"

namespace twinbit {

uint64_t strip_codes_bytes(tb_prec prec, int64_t n, int64_t k) {
  return StripLayout{prec, n, k}.codes_bytes();
}
uint64_t strip_scales_bytes(int64_t n, int64_t k) {
  return StripLayout{TB_PREC_Q8, n, k}.scales_bytes();  // the scales do not depend on prec
}

const char* prec_name(tb_prec prec) {
  return precision_known(prec) ? precision_traits(prec).name : "unknown-prec";
}
const char* act_mode_name(tb_act_mode m) {
  switch (m) {
    case TB_ACT_F32: return "f32";
    case TB_ACT_I8: return "i8";
  }
  return "unknown-mode";
}
const char* op_name(tb_op op) {
  switch (op) {
    case TB_OP_GEMM: return "gemm";
    case TB_OP_GEMV_F32: return "gemv_f32";
    case TB_OP_GEMV_F32_PAIR: return "gemv_f32_pair";
    case TB_OP_GDN_DELTA: return "gdn_delta";
    case TB_OP_QUANTIZE_I8: return "quantize_i8";
  }
  return "unknown-op";
}

namespace {
Status check_dim(const char* what, int64_t v) {
  if (v < 1 || v > kMaxDim) {
    return Error(TB_INVALID_ARGUMENT, "%s = %lld is out of range (expected 1 .. %lld)", what,
                 static_cast<long long>(v), static_cast<long long>(kMaxDim));
  }
  return Status();
}
}  // namespace

Status check_strips(const tb_strips& w) {
  TB_RETURN_IF_ERROR(check_precision_field(w.prec));
  TB_RETURN_IF_ERROR(check_dim("N", w.n));
  TB_RETURN_IF_ERROR(check_dim("K", w.k));
  if (w.np != pad32(w.n) || w.kp != pad32(w.k)) {
    return Error(TB_INVALID_ARGUMENT, "padded sizes Np = %lld, Kp = %lld do not match N = %lld, "
                 "K = %lld (expected Np = %lld, Kp = %lld)", (long long)w.np, (long long)w.kp,
                 (long long)w.n, (long long)w.k, (long long)pad32(w.n), (long long)pad32(w.k));
  }
  const uint64_t want_codes = strip_codes_bytes(w.prec, w.n, w.k);
  const uint64_t want_scales = strip_scales_bytes(w.n, w.k);
  if (w.codes_bytes != want_codes || w.scales_bytes != want_scales) {
    return Error(TB_INVALID_ARGUMENT, "strip payloads are %llu + %llu bytes; a %s strip set of "
                 "N = %lld, K = %lld needs %llu + %llu", (unsigned long long)w.codes_bytes,
                 (unsigned long long)w.scales_bytes, prec_name(w.prec), (long long)w.n,
                 (long long)w.k, (unsigned long long)want_codes, (unsigned long long)want_scales);
  }
  if (!w.codes || !w.scales) return Error(TB_INVALID_ARGUMENT, "strip codes or scales pointer is null");
  // The projection the view belongs to (its fold plan is split_plan(n_total, K)).
  if (w.n_total == 0) {
    return Error(TB_INVALID_ARGUMENT, "strip view has n_total = 0: fill n_total with the "
                 "projection's N and n_begin with the view's first column (StripLayout::view and "
                 "StripLayout::columns in core/strip_layout.h do)");
  }
  TB_RETURN_IF_ERROR(check_dim("n_total", w.n_total));
  if (w.n_begin < 0 || w.n_begin % 32 != 0 || w.n_begin > w.n_total - w.n) {
    return Error(TB_INVALID_ARGUMENT, "strip view columns [n_begin, n_begin + N) = [%lld, %lld) "
                 "do not lie inside the projection's n_total = %lld columns at a strip boundary "
                 "(expected n_begin >= 0, a multiple of 32, n_begin + N <= n_total)",
                 (long long)w.n_begin, (long long)(w.n_begin + w.n), (long long)w.n_total);
  }
  return Status();
}

Status check_matrix(const tb_matrix_f32& w) {
  TB_RETURN_IF_ERROR(check_dim("rows", w.rows));
  TB_RETURN_IF_ERROR(check_dim("cols", w.cols));
  if (!w.data) return Error(TB_INVALID_ARGUMENT, "matrix data pointer is null");
  return Status();
}

Status check_op_desc_fields(const tb_op_desc& op) {
  const int kind = enum_field_value(op.op);
  if (kind < TB_OP_GEMM || kind > TB_OP_QUANTIZE_I8) {
    return Error(TB_INVALID_ARGUMENT, "op %d is unknown (expected 0 = gemm .. 4 = quantize_i8)", kind);
  }
  if (kind != TB_OP_GEMM) return Status();
  TB_RETURN_IF_ERROR(check_precision_field(op.prec));
  const int mode = enum_field_value(op.mode);
  if (mode != TB_ACT_F32 && mode != TB_ACT_I8) {
    return Error(TB_INVALID_ARGUMENT, "activation mode %d is unknown (expected 0 = f32, 1 = i8)", mode);
  }
  return Status();
}

Status check_gemm_args(const tb_strips& w, const tb_gemm_args& a) {
  TB_RETURN_IF_ERROR(check_rows(a.m));
  const int mode = enum_field_value(a.mode);
  if (mode != TB_ACT_F32 && mode != TB_ACT_I8) {
    return Error(TB_INVALID_ARGUMENT, "activation mode %d is unknown (expected 0 = f32, 1 = i8)", mode);
  }
  if (!a.y) return Error(TB_INVALID_ARGUMENT, "gemm output y is null");
  if (a.ldy < w.n) {
    return Error(TB_INVALID_ARGUMENT, "ldy = %lld is smaller than N = %lld", (long long)a.ldy,
                 (long long)w.n);
  }
  if (a.mode == TB_ACT_F32) {
    if (!a.x) return Error(TB_INVALID_ARGUMENT, "gemm mode f32 needs x, got null");
    if (a.ldx < w.k) {
      return Error(TB_INVALID_ARGUMENT, "ldx = %lld is smaller than K = %lld", (long long)a.ldx,
                   (long long)w.k);
    }
    return Status();
  }
  if (a.mode == TB_ACT_I8) {
    if (!a.xq || !a.xd) return Error(TB_INVALID_ARGUMENT, "gemm mode i8 needs xq and xd, got null");
    if (a.ldxq < w.kp || a.ldxd < w.kp / 32) {
      return Error(TB_INVALID_ARGUMENT, "ldxq = %lld, ldxd = %lld are smaller than Kp = %lld, "
                   "Kp/32 = %lld", (long long)a.ldxq, (long long)a.ldxd, (long long)w.kp,
                   (long long)(w.kp / 32));
    }
  }
  return Status();
}

Status check_gdn_args(const tb_gdn_args& a) {
  TB_RETURN_IF_ERROR(check_dim("vh", a.vh));
  TB_RETURN_IF_ERROR(check_dim("kh", a.kh));
  TB_RETURN_IF_ERROR(check_dim("kd", a.kd));
  TB_RETURN_IF_ERROR(check_dim("vd", a.vd));
  if (a.vh % a.kh != 0) {
    return Error(TB_INVALID_ARGUMENT, "value heads vh = %lld are not a multiple of key heads "
                 "kh = %lld", (long long)a.vh, (long long)a.kh);
  }
  if (a.vh * a.kd > kMaxDim * 16 || a.vh * a.kd * a.vd > (int64_t{1} << 32)) {
    return Error(TB_INVALID_ARGUMENT, "gdn state %lld x %lld x %lld is too large",
                 (long long)a.vh, (long long)a.kd, (long long)a.vd);
  }
  if (!a.state || !a.q || !a.k || !a.v || !a.g || !a.beta || !a.o) {
    return Error(TB_INVALID_ARGUMENT, "gdn_delta: a state/input/output pointer is null");
  }
  return Status();
}

Status check_quantize_args(const tb_quantize_args& a) {
  TB_RETURN_IF_ERROR(check_rows(a.m));
  TB_RETURN_IF_ERROR(check_dim("K", a.k));
  if (!a.x || !a.xq || !a.xd) {
    return Error(TB_INVALID_ARGUMENT, "quantize_i8: x, xq or xd is null");
  }
  const int64_t kp = pad32(a.k);
  if (a.ldx < a.k || a.ldxq < kp || a.ldxd < kp / 32) {
    return Error(TB_INVALID_ARGUMENT, "quantize_i8: ldx = %lld, ldxq = %lld, ldxd = %lld are "
                 "smaller than K = %lld, Kp = %lld, Kp/32 = %lld", (long long)a.ldx,
                 (long long)a.ldxq, (long long)a.ldxd, (long long)a.k, (long long)kp,
                 (long long)(kp / 32));
  }
  return Status();
}

}  // namespace twinbit
