// Test plugins that deviate from the numerics contract in one known way each, for proving that
// `twinbit conformance --explain` names the deviation and that the default run catches a backend
// wrong only at the target model's shape (tests/cli_explain.sh).
//
// One shared library; TWINBIT_TEST_DEVIATION picks the behaviour when the backend is created:
//   unfused, tree_fold, tree_fold_lanes, flush_to_zero, split_plan (the draft plan, cap = ngroups),
//   i8_scale_order, round_half_away
//              gemm and quantize_i8 computed by the deviated reference (conformance/deviations.h);
//              gemv_f32 and gdn_delta too for flush_to_zero (a flushing backend flushes there
//              as well); the other deviations' gemv_f32 and gdn_delta by the exact reference.
//   wrong_at_2048
//              the CPU backend, flipping the lowest mantissa bit of y[0][0] when N = K = 2048 (and
//              only then): what a kernel tuned for one model projection gets wrong.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "conformance/deviations.h"
#include "core/numerics.h"
#include "core/reference.h"
#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace {

using twinbit::Error;
using twinbit::conformance::Deviation;
using twinbit::conformance::DeviationKind;

struct Ctx {
  bool wrong_at_2048 = false;
  Deviation dev;
  std::string name, device;
  tb_backend cpu{};
};

struct Bound {
  tb_weights_view view;
  void* cpu_handle = nullptr;
};

tb_code describe(void* ctx, tb_backend_info* out, tb_error*) {
  auto* c = static_cast<Ctx*>(ctx);
  *out = {};
  out->name = c->name.c_str();
  out->device = c->device.c_str();
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gdn_delta";
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc*, tb_error*) { return TB_OK; }

tb_code weights_bind(void* ctx, const tb_weights_view* view, void** out, tb_error* err) {
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "deviant backend: out of memory").to_c(err);
  const tb_backend& cpu = static_cast<Ctx*>(ctx)->cpu;
  if (cpu.iface && view->kind == TB_WEIGHTS_STRIPS) {
    if (tb_code c = cpu.iface->weights_bind(cpu.ctx, view, &b->cpu_handle, err); c != TB_OK) {
      delete b;
      return c;
    }
  }
  *out = b;
  return TB_OK;
}

void weights_release(void* ctx, void* handle) {
  auto* b = static_cast<Bound*>(handle);
  const tb_backend& cpu = static_cast<Ctx*>(ctx)->cpu;
  if (cpu.iface && b->cpu_handle) cpu.iface->weights_release(cpu.ctx, b->cpu_handle);
  delete b;
}

tb_code gemm(void* ctx, void* handle, const tb_gemm_args* a, tb_error* err) {
  auto* c = static_cast<Ctx*>(ctx);
  auto* b = static_cast<Bound*>(handle);
  const tb_strips& w = b->view.strips;
  if (c->wrong_at_2048) {
    if (tb_code code = c->cpu.iface->gemm(c->cpu.ctx, b->cpu_handle, a, err); code != TB_OK) return code;
    if (w.n == 2048 && w.k == 2048) {
      uint32_t u;
      std::memcpy(&u, &a->y[0], 4);
      u ^= 1u;
      std::memcpy(&a->y[0], &u, 4);
    }
    return TB_OK;
  }
  Deviation dev = c->dev;
  if (dev.kind == DeviationKind::split_plan) {  // the draft plan: slices of one group allowed
    const int64_t ngroups = twinbit::ngroups_of(w.k), bb = twinbit::ceil_div(twinbit::pad32(w.n_total), 1024);
    const int64_t want = twinbit::ceil_div(512, bb);
    dev.nsplit = bb < 512 && ngroups > 1 ? (want < ngroups ? want : ngroups) : 1;
  }
  for (int64_t r = 0; r < a->m; ++r) {
    for (int64_t n = 0; n < w.n; ++n) {
      a->y[r * a->ldy + n] = a->mode == TB_ACT_F32
          ? twinbit::conformance::deviant_gemm_f32_at(w, a->x + r * a->ldx, n, dev)
          : twinbit::conformance::deviant_gemm_i8_at(w, a->xq + r * a->ldxq, a->xd + r * a->ldxd, n, dev);
    }
  }
  return TB_OK;
}

tb_code gemv_f32(void* ctx, void* handle, const float* x, float* y, tb_error*) {
  const tb_matrix_f32& w = static_cast<Bound*>(handle)->view.matrix;
  const Deviation& dev = static_cast<Ctx*>(ctx)->dev;
  if (dev.kind != DeviationKind::flush_to_zero) {
    twinbit::ref::gemv_f32(w, x, y);
    return TB_OK;
  }
  for (int64_t r = 0; r < w.rows; ++r) y[r] = twinbit::conformance::deviant_gemv_f32_at(w, x, r, dev);
  return TB_OK;
}

tb_code gdn_delta(void* ctx, const tb_gdn_args* a, tb_error*) {
  const Deviation& dev = static_cast<Ctx*>(ctx)->dev;
  if (dev.kind == DeviationKind::flush_to_zero) {
    twinbit::conformance::deviant_gdn_delta(*a, dev);
  } else {
    twinbit::ref::gdn_delta(*a);
  }
  return TB_OK;
}

tb_code quantize_i8(void* ctx, const tb_quantize_args* a, tb_error*) {
  twinbit::conformance::deviant_quantize(a->m, a->k, a->x, a->ldx, a->xq, a->ldxq, a->xd, a->ldxd,
                                         static_cast<Ctx*>(ctx)->dev);
  return TB_OK;
}

void destroy(void* ctx) {
  auto* c = static_cast<Ctx*>(ctx);
  if (c->cpu.iface) c->cpu.iface->destroy(c->cpu.ctx);
  delete c;
}

const tb_backend_iface kIface = {
    .abi_version = TB_BACKEND_ABI_VERSION,
    .struct_size = sizeof(tb_backend_iface),
    .describe = describe,
    .supports = supports,
    .weights_bind = weights_bind,
    .weights_release = weights_release,
    .gemm = gemm,
    .gemv_f32 = gemv_f32,
    .gdn_delta = gdn_delta,
    .destroy = destroy,
    .gemv_f32_pair = nullptr,
    .read_floor = nullptr,
    .quantize_i8 = quantize_i8,
    .get_proc = nullptr,
};

}  // namespace

extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(uint32_t host, tb_backend* out, tb_error* err,
                                                         const tb_backend_params*) {
  *out = {};
  if (host != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "deviant backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host).to_c(err);
  }
  const char* env = std::getenv("TWINBIT_TEST_DEVIATION");
  const std::string which = env ? env : "";
  auto* c = new (std::nothrow) Ctx;
  if (!c) return Error(TB_RESOURCE_EXHAUSTED, "deviant backend: out of memory").to_c(err);
  c->name = "deviant_" + which;
  c->device = "test backend: the scalar reference with one deviation (" + which + ")";
  if (which == "wrong_at_2048") {
    c->wrong_at_2048 = true;
    c->device = "test backend: the CPU backend, one bit of y[0][0] flipped when N = K = 2048";
    if (tb_code code = tb_backend_create_cpu(TB_BACKEND_ABI_VERSION, &c->cpu, err, nullptr); code != TB_OK) {
      delete c;
      return code;
    }
  } else if (which == "tree_fold_lanes") {
    c->dev = {DeviationKind::tree_fold, 1};
  } else if (which == "split_plan") {
    c->dev = {DeviationKind::split_plan, 0, -1};  // the draft plan, per projection: see gemm()
  } else if (!twinbit::conformance::parse_deviation_kind(which, &c->dev.kind)) {
    delete c;
    return Error(TB_INVALID_ARGUMENT, "deviant backend: TWINBIT_TEST_DEVIATION='%s'; one of %s, "
                 "tree_fold_lanes, wrong_at_2048", which.c_str(),
                 twinbit::conformance::deviation_kind_names().c_str()).to_c(err);
  }
  out->iface = &kIface;
  out->ctx = c;
  return TB_OK;
}
