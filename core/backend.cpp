#include "core/backend.hpp"

#include <sstream>
#include <utility>

#include "core/error_buffer.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/rows.h"

namespace twinbit {

BoundWeights& BoundWeights::operator=(BoundWeights&& o) noexcept {
  if (this != &o) {
    reset();
    backend_ = std::move(o.backend_);
    handle_ = std::exchange(o.handle_, nullptr);
    view_ = o.view_;
    keep_alive_ = std::move(o.keep_alive_);
  }
  return *this;
}

void BoundWeights::reset() {
  if (backend_ && handle_) backend_->raw.iface->weights_release(backend_->raw.ctx, handle_);
  handle_ = nullptr;
  backend_.reset();     // the backend may be destroyed now (its last user was this binding) ...
  keep_alive_.reset();  // ... and only then the memory it viewed
}

Backend BoundWeights::backend() const { return Backend(backend_); }

namespace {
// The adoption checks, on a table nobody owns yet: nothing here calls into it.
Status check_table(const tb_backend& raw) {
  if (!raw.iface) return Error(TB_INVALID_ARGUMENT, "backend has no function table");
  const tb_backend_iface& f = *raw.iface;
  if (f.abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "backend speaks ABI version %u, this library speaks %u",
                 f.abi_version, TB_BACKEND_ABI_VERSION);
  }
  if (f.struct_size < TB_IFACE_MIN_SIZE) {
    return Error(TB_FAILED_PRECONDITION, "backend function table is %u bytes, shorter than the "
                 "%zu bytes of the ABI %u header and required entries", f.struct_size,
                 static_cast<size_t>(TB_IFACE_MIN_SIZE), TB_BACKEND_ABI_VERSION);
  }
  const struct {
    const char* name;
    bool present;
  } required[] = {
      {"describe", f.describe != nullptr},        {"supports", f.supports != nullptr},
      {"weights_bind", f.weights_bind != nullptr}, {"weights_release", f.weights_release != nullptr},
      {"gemm", f.gemm != nullptr},                {"gemv_f32", f.gemv_f32 != nullptr},
      {"gdn_delta", f.gdn_delta != nullptr},      {"destroy", f.destroy != nullptr},
  };
  for (const auto& r : required) {
    if (!r.present) {
      return Error(TB_INVALID_ARGUMENT, "backend function table lacks the required entry %s",
                   r.name);
    }
  }
  return Status();
}
}  // namespace

Result<Backend> Backend::adopt(tb_backend raw) {
  TB_RETURN_IF_ERROR(check_table(raw));
  auto state = std::make_shared<detail::BackendState>(raw);  // owned from here
  tb_backend_info info{};
  GuardedError err;
  tb_code code = raw.iface->describe(raw.ctx, &info, err.get());
  if (code != TB_OK) return Status::from_c(code, *err);
  state->name = info.name ? info.name : "";
  state->device = info.device ? info.device : "";
  state->features = info.features ? info.features : "";
  state->memory_bytes = info.memory_bytes;
  if (state->name.empty()) return Error(TB_INVALID_ARGUMENT, "backend describe() gave no name");
  return Backend(std::move(state));
}

Status Backend::supports(const tb_op_desc& op) const {
  TB_RETURN_IF_ERROR(check_op_desc_fields(op));  // a backend never loads an enum that names nothing
  GuardedError err;
  return Status::from_c(iface().supports(ctx(), &op, err.get()), *err);
}

Result<BoundWeights> Backend::bind(const tb_weights_view& view,
                                   std::shared_ptr<const void> keep_alive) const {
  const int kind = enum_field_value(view.kind);
  if (kind == TB_WEIGHTS_STRIPS) {
    TB_RETURN_IF_ERROR(check_strips(view.strips));
  } else if (kind == TB_WEIGHTS_F32) {
    TB_RETURN_IF_ERROR(check_matrix(view.matrix));
  } else {
    return Error(TB_INVALID_ARGUMENT, "weights kind %d is unknown", kind);
  }
  void* handle = nullptr;
  GuardedError err;
  tb_code code = iface().weights_bind(ctx(), &view, &handle, err.get());
  if (code != TB_OK) return Status::from_c(code, *err);
  return BoundWeights(state_, handle, view, std::move(keep_alive));
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
  GuardedError err;
  return Status::from_c(iface().gemm(ctx(), w.handle(), &args, err.get()), *err);
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
  GuardedError err;
  return Status::from_c(iface().gemv_f32(ctx(), w.handle(), x, y, err.get()), *err);
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
  if (!has_gemv_f32_pair()) {  // default: two single calls
    TB_RETURN_IF_ERROR(gemv_f32(a, x, ya));
    return gemv_f32(b, x, yb);
  }
  TB_RETURN_IF_ERROR(supports(gemv_desc(TB_OP_GEMV_F32_PAIR, ma)));
  GuardedError err;
  return Status::from_c(
      iface().gemv_f32_pair(ctx(), a.handle(), b.handle(), x, ya, yb, err.get()), *err);
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
  GuardedError err;
  return Status::from_c(iface().gdn_delta(ctx(), &args, err.get()), *err);
}

Status Backend::read_floor(const BoundWeights& w, int64_t m) const {
  if (!has_read_floor()) {
    return Error(TB_UNIMPLEMENTED, "backend '%s' has no read_floor entry", name().c_str());
  }
  TB_RETURN_IF_ERROR(check_rows(m));
  GuardedError err;
  return Status::from_c(iface().read_floor(ctx(), w.handle(), m, err.get()), *err);
}

bool Backend::has_gemv_f32_pair() const { return TB_IFACE_HAS(&iface(), gemv_f32_pair); }
bool Backend::has_read_floor() const { return TB_IFACE_HAS(&iface(), read_floor); }
bool Backend::has_quantize_i8() const { return TB_IFACE_HAS(&iface(), quantize_i8); }

void* Backend::proc(const char* name) const {
  if (!name || !TB_IFACE_HAS(&iface(), get_proc)) return nullptr;
  return iface().get_proc(ctx(), name);
}

Status Backend::set_switch(const char* switch_name, int64_t value) const {
  auto fn = reinterpret_cast<tb_switch_fn>(proc(switch_name));
  if (!fn) {
    return Error(TB_UNIMPLEMENTED, "backend '%s' has no switch '%s'", name().c_str(),
                 switch_name ? switch_name : "(null)");
  }
  GuardedError err;
  return Status::from_c(fn(ctx(), value, err.get()), *err);
}

Status Backend::quantize_i8(const tb_quantize_args& args) const {
  TB_RETURN_IF_ERROR(check_quantize_args(args));
  if (has_quantize_i8()) {
    tb_op_desc d{};
    d.op = TB_OP_QUANTIZE_I8;
    d.m = args.m;
    d.k = args.k;
    if (supports(d).ok()) {
      GuardedError err;
      return Status::from_c(iface().quantize_i8(ctx(), &args, err.get()), *err);
    }
  }
  ref::quantize_activations(args.m, args.k, args.x, args.ldx, args.xq, args.ldxq, args.xd,
                            args.ldxd);
  return Status();
}

std::vector<std::string> split_feature_tags(const std::string& features) {
  std::vector<std::string> tags;
  std::stringstream in(features);
  std::string t;
  while (std::getline(in, t, ',')) {
    const size_t b = t.find_first_not_of(' ');
    const size_t e = t.find_last_not_of(' ');
    if (b != std::string::npos) tags.push_back(t.substr(b, e - b + 1));
  }
  return tags;
}

bool has_feature_tag(const std::string& features, const std::string& tag) {
  for (const std::string& t : split_feature_tags(features)) {
    if (t == tag) return true;
  }
  return false;
}

}  // namespace twinbit
