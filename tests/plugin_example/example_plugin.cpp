// An out-of-tree backend, the way a hardware vendor writes one: backends/null copied, renamed,
// exported as `tb_backend_create_v1` from a shared library, with the scalar reference underneath
// where a vendor would call their device. docs/PORTING.md walks through it.
//
// It claims everything except q4 weights with int8 activations ("not ported yet"), so the
// conformance suite reports those cases as unsupported and checks their fallback.
//
// Build-time switches (the tests build three variants):
//   EXAMPLE_PLUGIN_ABI=3          speak another ABI version than the host (a stale plugin)
//   EXAMPLE_PLUGIN_TRUSTS_HOST    skip the plugin's own version check, so the host's table check
//                                 has to catch the mismatch
#include <new>

#include <twinbit/backend.h>
#include <twinbit/backend_params.hpp>
#include "core/reference.h"
#include <twinbit/status.hpp>

#ifndef EXAMPLE_PLUGIN_ABI
#define EXAMPLE_PLUGIN_ABI TB_BACKEND_ABI_VERSION
#endif

namespace {

using twinbit::Error;

struct Bound {
  tb_weights_view view;  // the caller's memory, valid until weights_release: no copy
};

tb_code describe(void*, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "example";
  out->device = "example plugin (scalar reference underneath)";
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gdn_delta,reference";
  out->memory_bytes = 0;
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc* op, tb_error* err) {
  if (op->op == TB_OP_GEMM && op->prec == TB_PREC_Q4 && op->mode == TB_ACT_I8) {
    return Error(TB_UNIMPLEMENTED, "example plugin: q4 weights with int8 activations are not "
                 "ported yet").to_c(err);
  }
  if (op->op == TB_OP_GEMV_F32_PAIR) {
    return Error(TB_UNIMPLEMENTED, "example plugin has no fused pair").to_c(err);
  }
  return TB_OK;
}

tb_code weights_bind(void*, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "example plugin: out of host memory").to_c(err);
  *out_handle = b;
  return TB_OK;
}

void weights_release(void*, void* handle) { delete static_cast<Bound*>(handle); }

tb_code gemm(void*, void* handle, const tb_gemm_args* a, tb_error*) {
  const tb_strips& w = static_cast<Bound*>(handle)->view.strips;
  if (a->mode == TB_ACT_F32) {
    twinbit::ref::gemm_f32(w, a->m, a->x, a->ldx, a->y, a->ldy);
  } else {
    twinbit::ref::gemm_i8(w, a->m, a->xq, a->ldxq, a->xd, a->ldxd, a->y, a->ldy);
  }
  return TB_OK;
}

tb_code gemv_f32(void*, void* handle, const float* x, float* y, tb_error*) {
  twinbit::ref::gemv_f32(static_cast<Bound*>(handle)->view.matrix, x, y);
  return TB_OK;
}

tb_code gdn_delta(void*, const tb_gdn_args* a, tb_error*) {
  twinbit::ref::gdn_delta(*a);
  return TB_OK;
}

void destroy(void*) {}

const tb_backend_iface kIface = {
    .abi_version = EXAMPLE_PLUGIN_ABI,
    .struct_size = sizeof(tb_backend_iface),
    .describe = describe,
    .supports = supports,
    .weights_bind = weights_bind,
    .weights_release = weights_release,
    .gemm = gemm,
    .gemv_f32 = gemv_f32,
    .gdn_delta = gdn_delta,
    .destroy = destroy,
    .gemv_f32_pair = nullptr,  // optional: core's default (two gemv_f32 calls)
    .read_floor = nullptr,     // optional: core's default (UNIMPLEMENTED)
    .quantize_i8 = nullptr,
    .get_proc = nullptr,
};

}  // namespace

// The one exported symbol (everything else is hidden by the build).
extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(
    uint32_t host_abi_version, tb_backend* out, tb_error* err, const tb_backend_params* params) {
  *out = {};
#ifndef EXAMPLE_PLUGIN_TRUSTS_HOST
  if (host_abi_version != EXAMPLE_PLUGIN_ABI) {
    return Error(TB_FAILED_PRECONDITION, "example plugin speaks backend ABI version %u, the host "
                 "speaks %u", static_cast<unsigned>(EXAMPLE_PLUGIN_ABI), host_abi_version).to_c(err);
  }
#else
  (void)host_abi_version;
#endif
  // No parameters, one device (0): anything else is refused the way built-in backends refuse it.
  twinbit::Status s = twinbit::check_param_keys(params, "example plugin", {});
  int32_t device = 0;
  if (s.ok()) s = twinbit::choose_device(params, "example plugin", 1, &device);
  if (!s.ok()) return s.to_c(err);
  out->iface = &kIface;
  out->ctx = nullptr;
  return TB_OK;
}
