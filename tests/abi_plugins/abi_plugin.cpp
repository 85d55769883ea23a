// Plugins that test how the host adopts a function table (twinbit/backend.h, "A growable table").
// One source, built in several variants (CMakeLists.txt beside it); each exports
// tb_backend_create_v1 and does NOT check the host's version itself, so the host's own table
// checks are what is tested. Underneath is the scalar reference.
//
// The table is placed at the end of a page whose next page is PROT_NONE, ending exactly at its
// declared struct_size: a host that reads one byte past struct_size faults, so "reads only the
// entries inside struct_size" is checked by the hardware, not by a promise.
//
// Build-time switches:
//   ABI_PLUGIN_VERSION=<n>        the table's abi_version (default: this header's)
//   ABI_PLUGIN_STRUCT_SIZE=<expr> the table's struct_size (default: sizeof(tb_backend_iface))
//   ABI_PLUGIN_NULL_GEMM          leave the required gemm entry null
//
// tb_abi_plugin_destroy_calls() counts the calls of destroy, so a test can prove that a refused
// table was never destroyed.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>

#include <twinbit/backend.h>
#include "core/reference.h"
#include <twinbit/status.hpp>

#ifndef ABI_PLUGIN_VERSION
#define ABI_PLUGIN_VERSION TB_BACKEND_ABI_VERSION
#endif
#ifndef ABI_PLUGIN_STRUCT_SIZE
#define ABI_PLUGIN_STRUCT_SIZE sizeof(tb_backend_iface)
#endif

namespace {

using twinbit::Error;

std::atomic<int> g_destroy_calls{0};

struct Bound {
  tb_weights_view view;
};

tb_code describe(void*, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "abi_test";
  out->device = "ABI test plugin (scalar reference underneath)";
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gemv_f32_pair,gdn_delta,quantize_i8";
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc*, tb_error*) { return TB_OK; }

tb_code weights_bind(void*, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "abi test plugin: out of memory").to_c(err);
  *out_handle = b;
  return TB_OK;
}

void weights_release(void*, void* handle) { delete static_cast<Bound*>(handle); }

[[maybe_unused]] tb_code gemm(void*, void* handle, const tb_gemm_args* a, tb_error*) {
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

tb_code gemv_f32_pair(void*, void* a, void* b, const float* x, float* ya, float* yb, tb_error*) {
  twinbit::ref::gemv_f32(static_cast<Bound*>(a)->view.matrix, x, ya);
  twinbit::ref::gemv_f32(static_cast<Bound*>(b)->view.matrix, x, yb);
  return TB_OK;
}

tb_code gdn_delta(void*, const tb_gdn_args* a, tb_error*) {
  twinbit::ref::gdn_delta(*a);
  return TB_OK;
}

tb_code quantize_i8(void*, const tb_quantize_args* a, tb_error*) {
  twinbit::ref::quantize_activations(a->m, a->k, a->x, a->ldx, a->xq, a->ldxq, a->xd, a->ldxd);
  return TB_OK;
}

void* get_proc(void*, const char*) { return nullptr; }

void destroy(void*) { g_destroy_calls.fetch_add(1); }

// The table, ending at a guard page; built once.
const tb_backend_iface* guarded_table() {
  static const tb_backend_iface* table = [] () -> const tb_backend_iface* {
    tb_backend_iface full = {
        .abi_version = ABI_PLUGIN_VERSION,
        .struct_size = static_cast<uint32_t>(ABI_PLUGIN_STRUCT_SIZE),
        .describe = describe,
        .supports = supports,
        .weights_bind = weights_bind,
        .weights_release = weights_release,
#ifdef ABI_PLUGIN_NULL_GEMM
        .gemm = nullptr,
#else
        .gemm = gemm,
#endif
        .gemv_f32 = gemv_f32,
        .gdn_delta = gdn_delta,
        .destroy = destroy,
        .gemv_f32_pair = gemv_f32_pair,
        .read_floor = nullptr,
        .quantize_i8 = quantize_i8,
        .get_proc = get_proc,
    };
    const size_t bytes = full.struct_size < sizeof full ? full.struct_size : sizeof full;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    void* mem = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    auto* guard = static_cast<unsigned char*>(mem) + page;
    auto* start = guard - bytes;  // bytes is a multiple of 8: the table stays aligned
    std::memcpy(start, &full, bytes);
    if (::mprotect(mem, page, PROT_READ) != 0 || ::mprotect(guard, page, PROT_NONE) != 0) {
      return nullptr;
    }
    return reinterpret_cast<const tb_backend_iface*>(start);
  }();
  return table;
}

}  // namespace

extern "C" TB_PLUGIN_EXPORT int tb_abi_plugin_destroy_calls() {
  return g_destroy_calls.load();
}

extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(
    uint32_t, tb_backend* out, tb_error* err, const tb_backend_params*) {
  *out = {};
  const tb_backend_iface* t = guarded_table();
  if (!t) return Error(TB_RESOURCE_EXHAUSTED, "abi test plugin: cannot map its table").to_c(err);
  out->iface = t;
  out->ctx = nullptr;
  return TB_OK;
}
