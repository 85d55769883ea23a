// The host C API's binding and operation calls (include/twinbit/engine.h "binding",
// "operations") over twinbit::Backend, which checks every shape (core/op_checks.h) before a
// backend sees the call.
#include <memory>
#include <utility>
#include <vector>

#include <twinbit/engine.h>

#include "api/call_guard.h"
#include "api/handles.h"
#include "core/numerics.h"
#include "core/rows.h"

using twinbit::Error;
using twinbit::Status;
using twinbit::api::check_open;
using twinbit::api::guarded;
using twinbit::api::HandleKind;
using twinbit::api::null_argument;

namespace {

Status need_kind(const tb_bound& b, tb_weights_kind kind, const char* op) {
  if (b.entry.kind == kind) return Status();
  if (kind == TB_WEIGHTS_STRIPS) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' is float rows, not a strip set: it has no %s (use tb_bound_gemv_f32)",
                 b.entry.name.c_str(), op);
  }
  return Error(TB_INVALID_ARGUMENT, "entry '%s' is a strip set, not float rows: it has no %s (use tb_bound_gemm)",
               b.entry.name.c_str(), op);
}

// The gemm of mode I8: x quantised once by the backend's own quantiser, as the runtime does.
Status gemm_i8(const tb_bound& b, tb_gemm_args args) {
  const tb_strips& w = b.weights.view().strips;
  const int64_t kp = twinbit::pad32(w.k);
  // The whole call's shapes first (placeholders for the codes to come), so a bad ldy is reported
  // before any work.
  tb_gemm_args shape = args;
  shape.xq = reinterpret_cast<const int8_t*>(args.x);
  shape.ldxq = kp;
  shape.xd = args.x;
  shape.ldxd = kp / 32;
  TB_RETURN_IF_ERROR(twinbit::check_gemm_args(w, shape));
  const tb_quantize_args q_shape{args.m, w.k, args.x, args.ldx, reinterpret_cast<int8_t*>(args.y), kp, args.y, kp / 32};
  TB_RETURN_IF_ERROR(twinbit::check_quantize_args(q_shape));
  std::vector<int8_t> xq(static_cast<size_t>(args.m * kp));
  std::vector<float> xd(static_cast<size_t>(args.m * (kp / 32)));
  const tb_quantize_args q{args.m, w.k, args.x, args.ldx, xq.data(), kp, xd.data(), kp / 32};
  TB_RETURN_IF_ERROR(b.backend.quantize_i8(q));
  args.x = nullptr;
  args.ldx = 0;
  args.xq = xq.data();
  args.ldxq = kp;
  args.xd = xd.data();
  args.ldxd = kp / 32;
  return b.backend.gemm(b.weights, args);
}

}  // namespace

extern "C" {

tb_code tb_bind(const tb_engine* engine, const tb_artifact* art, const char* entry_name, tb_bound** out) {
  return guarded("tb_bind", [&]() -> Status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    TB_RETURN_IF_ERROR(check_open(engine, HandleKind::kEngine, "engine"));
    TB_RETURN_IF_ERROR(check_open(art, HandleKind::kArtifact, "art"));
    if (entry_name == nullptr) return null_argument("entry_name");
    const twinbit::artifact::Entry* e = art->art->find(entry_name);
    if (e == nullptr) return Error(TB_INVALID_ARGUMENT, "no entry '%s' in %s", entry_name, art->art->path().c_str());
    auto weights = art->art->weights(*e);
    if (!weights.ok()) return weights.status();
    auto bound = engine->backend.bind(weights->view, weights->keep_alive);
    if (!bound.ok()) return bound.status();
    auto handle = std::make_unique<tb_bound>(std::move(bound.value()), *e);
    handle->info = twinbit::api::entry_info(handle->entry);
    twinbit::api::publish(std::move(handle), HandleKind::kBound, out);
    return Status();
  });
}

tb_code tb_bound_entry(const tb_bound* bound, tb_entry_info* info) {
  return guarded("tb_bound_entry", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(bound, HandleKind::kBound, "bound"));
    if (info == nullptr) return null_argument("info");
    *info = bound->info;
    return Status();
  });
}

tb_code tb_bound_backend_handle(const tb_bound* bound, void** handle) {
  return guarded("tb_bound_backend_handle", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(bound, HandleKind::kBound, "bound"));
    if (handle == nullptr) return null_argument("handle");
    *handle = bound->weights.handle();
    return Status();
  });
}

void tb_unbind(tb_bound* bound) {
  if (bound != nullptr && twinbit::api::untrack(bound, HandleKind::kBound)) delete bound;
}

tb_code tb_bound_gemm(const tb_bound* bound, int64_t m, tb_act_mode mode, const float* x, int64_t ldx, float* y,
                      int64_t ldy) {
  return guarded("tb_bound_gemm", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(bound, HandleKind::kBound, "bound"));
    if (x == nullptr) return null_argument("x");
    if (y == nullptr) return null_argument("y");
    TB_RETURN_IF_ERROR(twinbit::api::check_mode_argument(mode));
    TB_RETURN_IF_ERROR(need_kind(*bound, TB_WEIGHTS_STRIPS, "gemm"));
    TB_RETURN_IF_ERROR(twinbit::check_rows(m, "m"));
    tb_gemm_args args{};
    args.mode = mode;
    args.m = m;
    args.x = x;
    args.ldx = ldx;
    args.y = y;
    args.ldy = ldy;
    if (mode == TB_ACT_I8) return gemm_i8(*bound, args);
    return bound->backend.gemm(bound->weights, args);
  });
}

tb_code tb_bound_gemv_f32(const tb_bound* bound, const float* x, float* y) {
  return guarded("tb_bound_gemv_f32", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(bound, HandleKind::kBound, "bound"));
    if (x == nullptr) return null_argument("x");
    if (y == nullptr) return null_argument("y");
    TB_RETURN_IF_ERROR(need_kind(*bound, TB_WEIGHTS_F32, "gemv"));
    return bound->backend.gemv_f32(bound->weights, x, y);
  });
}

tb_code tb_bound_gemv_pair(const tb_bound* a, const tb_bound* b, const float* x, float* ya, float* yb) {
  return guarded("tb_bound_gemv_pair", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(a, HandleKind::kBound, "a"));
    TB_RETURN_IF_ERROR(check_open(b, HandleKind::kBound, "b"));
    if (x == nullptr) return null_argument("x");
    if (ya == nullptr) return null_argument("ya");
    if (yb == nullptr) return null_argument("yb");
    TB_RETURN_IF_ERROR(need_kind(*a, TB_WEIGHTS_F32, "gemv"));
    TB_RETURN_IF_ERROR(need_kind(*b, TB_WEIGHTS_F32, "gemv"));
    if (a->backend.raw().ctx != b->backend.raw().ctx) {
      return Error(TB_FAILED_PRECONDITION, "a ('%s') and b ('%s') are bound on different backends", a->entry.name.c_str(),
                   b->entry.name.c_str());
    }
    return a->backend.gemv_f32_pair(a->weights, b->weights, x, ya, yb);
  });
}

tb_code tb_gdn_delta(const tb_engine* engine, const tb_gdn_args* args) {
  return guarded("tb_gdn_delta", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(engine, HandleKind::kEngine, "engine"));
    if (args == nullptr) return null_argument("args");
    // Each pointer by name (the backend's check only says that one of them is null).
    const std::pair<const void*, const char*> pointers[] = {{args->state, "args->state"}, {args->q, "args->q"},
        {args->k, "args->k"}, {args->v, "args->v"}, {args->g, "args->g"}, {args->beta, "args->beta"}, {args->o, "args->o"}};
    for (const auto& [pointer, name] : pointers) {
      if (pointer == nullptr) return null_argument(name);
    }
    return engine->backend.gdn_delta(*args);
  });
}

tb_code tb_quantize_i8(const tb_engine* engine, int64_t m, int64_t k, const float* x, int64_t ldx, int8_t* xq,
                       int64_t ldxq, float* xd, int64_t ldxd) {
  return guarded("tb_quantize_i8", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(engine, HandleKind::kEngine, "engine"));
    if (x == nullptr) return null_argument("x");
    if (xq == nullptr) return null_argument("xq");
    if (xd == nullptr) return null_argument("xd");
    TB_RETURN_IF_ERROR(twinbit::check_rows(m, "m"));
    const tb_quantize_args q{m, k, x, ldx, xq, ldxq, xd, ldxd};
    TB_RETURN_IF_ERROR(twinbit::check_quantize_args(q));
    return engine->backend.quantize_i8(q);
  });
}

}  // extern "C"
