// The CPU backend. Weights are used in place (a zero-copy view of the mapped artifact).
//
// For now every operation runs the scalar reference (core/reference.h): this backend IS the
// reference until the xsimd kernels land, and tools say so rather than claim a comparison.
#include <new>

#include "core/backend.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/status.hpp"

namespace {

using twinbit::Error;

struct Bound {
  tb_weights_view view;  // points into the caller's memory (the mapped file): no copy
};

tb_code describe(void*, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "cpu";
  out->device = "host CPU (scalar reference kernels)";
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gemv_f32_pair,gdn_delta,reference";
  out->memory_bytes = 0;
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc*, tb_error*) { return TB_OK; }

tb_code weights_bind(void*, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "cpu backend: out of host memory").to_c(err);
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
    .abi_version = TB_BACKEND_ABI_VERSION,
    .struct_size = sizeof(tb_backend_iface),
    .describe = describe,
    .supports = supports,
    .weights_bind = weights_bind,
    .weights_release = weights_release,
    .gemm = gemm,
    .gemv_f32 = gemv_f32,
    .gemv_f32_pair = nullptr,  // core's default: two gemv_f32 calls
    .gdn_delta = gdn_delta,
    .read_floor = nullptr,
    .destroy = destroy,
};

}  // namespace

extern "C" tb_code tb_backend_create_cpu(uint32_t host_abi_version, tb_backend* out,
                                         tb_error* err) {
  *out = {};
  if (host_abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "cpu backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host_abi_version).to_c(err);
  }
  out->iface = &kIface;
  out->ctx = nullptr;
  return TB_OK;
}
