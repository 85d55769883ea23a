#include "core/backend.hpp"

#include "core/op_checks.h"
#include "core/rows.h"

namespace twinbit {

BoundWeights& BoundWeights::operator=(BoundWeights&& o) noexcept {
  if (this != &o) {
    reset();
    backend_ = o.backend_;
    handle_ = o.handle_;
    view_ = o.view_;
    o.backend_ = {};
    o.handle_ = nullptr;
  }
  return *this;
}

void BoundWeights::reset() {
  if (backend_.iface && handle_) backend_.iface->weights_release(backend_.ctx, handle_);
  backend_ = {};
  handle_ = nullptr;
}

Result<Backend> Backend::adopt(tb_backend raw) {
  if (!raw.iface) return Error(TB_INVALID_ARGUMENT, "backend has no function table");
  Backend b(raw);  // owns it from here: destroyed on any early return
  const tb_backend_iface& f = *raw.iface;
  if (f.abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "backend speaks ABI version %u, this library speaks %u",
                 f.abi_version, TB_BACKEND_ABI_VERSION);
  }
  if (f.struct_size < sizeof(tb_backend_iface)) {
    return Error(TB_FAILED_PRECONDITION, "backend function table is %u bytes, expected %zu",
                 f.struct_size, sizeof(tb_backend_iface));
  }
  if (!f.describe || !f.supports || !f.weights_bind || !f.weights_release || !f.gemm ||
      !f.gemv_f32 || !f.gdn_delta || !f.destroy) {
    return Error(TB_INVALID_ARGUMENT, "backend function table lacks a required entry "
                 "(describe, supports, weights_bind/release, gemm, gemv_f32, gdn_delta, destroy)");
  }
  tb_backend_info info{};
  tb_error err{};
  tb_code code = f.describe(raw.ctx, &info, &err);
  if (code != TB_OK) return Status::from_c(code, err);
  b.name_ = info.name ? info.name : "";
  b.device_ = info.device ? info.device : "";
  b.features_ = info.features ? info.features : "";
  b.memory_bytes_ = info.memory_bytes;
  if (b.name_.empty()) return Error(TB_INVALID_ARGUMENT, "backend describe() gave no name");
  return b;
}

Backend& Backend::operator=(Backend&& o) noexcept {
  if (this != &o) {
    if (raw_.iface) raw_.iface->destroy(raw_.ctx);
    raw_ = o.raw_;
    name_ = std::move(o.name_);
    device_ = std::move(o.device_);
    features_ = std::move(o.features_);
    memory_bytes_ = o.memory_bytes_;
    o.raw_ = {};
  }
  return *this;
}

Backend::~Backend() {
  if (raw_.iface && raw_.iface->destroy) raw_.iface->destroy(raw_.ctx);
}

Status Backend::supports(const tb_op_desc& op) const {
  tb_error err{};
  return Status::from_c(raw_.iface->supports(raw_.ctx, &op, &err), err);
}

Result<BoundWeights> Backend::bind(const tb_weights_view& view) const {
  if (view.kind == TB_WEIGHTS_STRIPS) {
    TB_RETURN_IF_ERROR(check_strips(view.strips));
  } else if (view.kind == TB_WEIGHTS_F32) {
    TB_RETURN_IF_ERROR(check_matrix(view.matrix));
  } else {
    return Error(TB_INVALID_ARGUMENT, "weights kind %d is unknown", static_cast<int>(view.kind));
  }
  void* handle = nullptr;
  tb_error err{};
  tb_code code = raw_.iface->weights_bind(raw_.ctx, &view, &handle, &err);
  if (code != TB_OK) return Status::from_c(code, err);
  return BoundWeights(raw_, handle, view);
}

Status Backend::gemm(const BoundWeights& w, const tb_gemm_args& args) const {
  if (w.view().kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_FAILED_PRECONDITION, "gemm needs strip weights, the handle holds a float matrix");
  }
  const tb_strips& s = w.view().strips;
  TB_RETURN_IF_ERROR(check_gemm_args(s, args));
  tb_op_desc op{};
  op.op = TB_OP_GEMM;
  op.prec = s.prec;
  op.mode = args.mode;
  op.m = args.m;
  op.n = s.n;
  op.k = s.k;
  TB_RETURN_IF_ERROR(supports(op));
  tb_error err{};
  return Status::from_c(raw_.iface->gemm(raw_.ctx, w.handle(), &args, &err), err);
}

namespace {
tb_op_desc gemv_desc(tb_op op, const tb_matrix_f32& m) {
  tb_op_desc d{};
  d.op = op;
  d.n = m.rows;
  d.k = m.cols;
  return d;
}
}  // namespace

Status Backend::gemv_f32(const BoundWeights& w, const float* x, float* y) const {
  if (w.view().kind != TB_WEIGHTS_F32) {
    return Error(TB_FAILED_PRECONDITION, "gemv_f32 needs a float matrix, the handle holds strips");
  }
  if (!x || !y) return Error(TB_INVALID_ARGUMENT, "gemv_f32: x or y is null");
  TB_RETURN_IF_ERROR(supports(gemv_desc(TB_OP_GEMV_F32, w.view().matrix)));
  tb_error err{};
  return Status::from_c(raw_.iface->gemv_f32(raw_.ctx, w.handle(), x, y, &err), err);
}

Status Backend::gemv_f32_pair(const BoundWeights& a, const BoundWeights& b, const float* x,
                              float* ya, float* yb) const {
  if (a.view().kind != TB_WEIGHTS_F32 || b.view().kind != TB_WEIGHTS_F32) {
    return Error(TB_FAILED_PRECONDITION, "gemv_f32_pair needs two float matrices");
  }
  const tb_matrix_f32& ma = a.view().matrix;
  const tb_matrix_f32& mb = b.view().matrix;
  if (ma.rows != mb.rows || ma.cols != mb.cols) {
    return Error(TB_INVALID_ARGUMENT, "gemv_f32_pair needs same-shape matrices, got %lld x %lld "
                 "and %lld x %lld", (long long)ma.rows, (long long)ma.cols, (long long)mb.rows,
                 (long long)mb.cols);
  }
  if (!x || !ya || !yb) return Error(TB_INVALID_ARGUMENT, "gemv_f32_pair: x, y_a or y_b is null");
  if (!raw_.iface->gemv_f32_pair) {  // default: two single calls
    TB_RETURN_IF_ERROR(gemv_f32(a, x, ya));
    return gemv_f32(b, x, yb);
  }
  TB_RETURN_IF_ERROR(supports(gemv_desc(TB_OP_GEMV_F32_PAIR, ma)));
  tb_error err{};
  return Status::from_c(
      raw_.iface->gemv_f32_pair(raw_.ctx, a.handle(), b.handle(), x, ya, yb, &err), err);
}

Status Backend::gdn_delta(const tb_gdn_args& args) const {
  TB_RETURN_IF_ERROR(check_gdn_args(args));
  tb_op_desc d{};
  d.op = TB_OP_GDN_DELTA;
  d.vh = args.vh;
  d.kh = args.kh;
  d.kd = args.kd;
  d.vd = args.vd;
  TB_RETURN_IF_ERROR(supports(d));
  tb_error err{};
  return Status::from_c(raw_.iface->gdn_delta(raw_.ctx, &args, &err), err);
}

Status Backend::read_floor(const BoundWeights& w, int64_t m) const {
  if (!raw_.iface->read_floor) {
    return Error(TB_UNIMPLEMENTED, "backend '%s' has no read_floor entry", name_.c_str());
  }
  TB_RETURN_IF_ERROR(check_rows(m));
  tb_error err{};
  return Status::from_c(raw_.iface->read_floor(raw_.ctx, w.handle(), m, &err), err);
}

}  // namespace twinbit
