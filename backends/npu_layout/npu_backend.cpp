// The npu_layout backend: the strip cache consumed as the RK3588 NPU consumes it, through the
// device seam (npu_device.h). Everything in this file is what runs on a board; the seam's
// implementation (npu_emulator.cpp here) is what a port replaces.
//
// The mapping (npu_mapping.h, docs/NPU.md): one int8 x int8 -> int32 matmul PER GROUP of 32 k.
//   bind:  the artifact's tiles re-tiled group-major into native B (q4 unpacked to int8), and one
//          matmul context (K = 32, N = a column chunk of <= 4096) per chunk, chunks spread over
//          the NPU cores (parameter cores=1..3);
//   gemm:  per chunk, per row block of <= 256 rows, per group g ascending: A = the group's codes
//          in native A, B = group g's tiles of the chunk, run, C = the exact int32 group sums;
//          the host applies the scales in contract order (docs/NUMERICS.md, activation mode I8):
//          t = ws * xd, acc[z] = fma(float(isum), t, acc[z]) over the slice's groups, and the
//          slices folded in ascending order from +0.
// Only the I8 activation mode runs: the RK3588 int8 matmul takes no float activations. F32,
// gemv_f32 and gdn_delta are UNIMPLEMENTED with that reason, and the runtime's fallback takes them.
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "backends/npu_layout/npu_device.h"
#include "backends/npu_layout/npu_layout.h"
#include "backends/npu_layout/npu_mapping.h"
#include "backends/npu_layout/npu_pack.h"
#include <twinbit/backend_params.hpp>
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"
#include "core/tsan_edges.h"
#include <twinbit/status.hpp>

namespace {

using twinbit::Error;
using twinbit::Status;
namespace npu = twinbit::npu;

constexpr const char* kWho = "npu_layout backend";
constexpr const char* kNoFloat = "the RK3588 int8 matmul takes no float activations";

struct Context {
  int cores = npu::kCores;
  std::atomic<uint64_t> bound_bytes{0}, bound_handles{0};  // the bind statistics (get_proc)
  std::mutex core_lock[npu::kCores];  // a core runs one matmul at a time
  std::string device, features;
};

struct ContextDeleter {
  void operator()(npu::Matmul* m) const { npu::matmul_destroy(m); }
};

struct Bound {
  tb_strips w{};                 // the caller's view (scales are read from it in place)
  std::vector<int8_t> b;         // native B, group-major (npu_pack.h)
  std::vector<npu::Chunk> chunks;
  std::vector<std::unique_ptr<npu::Matmul, ContextDeleter>> contexts;  // one per chunk
};

Context* ctx_of(void* c) { return static_cast<Context*>(c); }

Status dev_error(npu::DevStatus s, const char* call) {
  return Error(TB_INTERNAL, "%s: device call %s failed: %s (%d)", kWho, call,
               npu::dev_status_name(s), static_cast<int>(s));
}

tb_code describe(void* c, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "npu_layout";
  out->device = ctx_of(c)->device.c_str();
  out->features = ctx_of(c)->features.c_str();
  out->memory_bytes = 0;
  return TB_OK;
}

// The gemm shapes this backend runs: q8/q4, activation mode I8, K % 32 == 0.
Status gemm_supported(int prec, int mode, int64_t k) {
  if (prec != TB_PREC_Q8 && prec != TB_PREC_Q4) {
    return Error(TB_UNIMPLEMENTED, "%s: no mapping for precision %d", kWho, prec);
  }
  if (mode != TB_ACT_I8) {
    return Error(TB_UNIMPLEMENTED, "%s: activation mode %s: %s (only i8)", kWho,
                 mode == TB_ACT_F32 ? "f32" : "unknown", kNoFloat);
  }
  if (k % 32 != 0) {
    return Error(TB_UNIMPLEMENTED, "%s: K = %lld is not a multiple of 32: the RK3588 matmul takes "
                 "K aligned to 32", kWho, static_cast<long long>(k));
  }
  return Status();
}

tb_code supports(void*, const tb_op_desc* op, tb_error* err) {
  Status s = twinbit::check_op_desc_fields(*op);
  if (!s.ok()) return s.to_c(err);
  switch (op->op) {
    case TB_OP_GEMM:
      return gemm_supported(twinbit::enum_field_value(op->prec), twinbit::enum_field_value(op->mode),
                            op->k).to_c(err);
    case TB_OP_GEMV_F32:
    case TB_OP_GEMV_F32_PAIR:
    case TB_OP_GDN_DELTA:
      return Error(TB_UNIMPLEMENTED, "%s: %s: %s", kWho, twinbit::op_name(op->op), kNoFloat).to_c(err);
    case TB_OP_QUANTIZE_I8:
      return Error(TB_UNIMPLEMENTED, "%s: quantize_i8 runs on the host (the scalar reference); "
                   "the NPU has no float path", kWho).to_c(err);
  }
  return Error(TB_UNIMPLEMENTED, "%s: operation %d is unknown", kWho, twinbit::enum_field_value(op->op))
      .to_c(err);
}

Status bind_strips(Context& ctx, const tb_strips& w, Bound& b) {
  TB_RETURN_IF_ERROR(twinbit::check_strips(w));
  TB_RETURN_IF_ERROR(gemm_supported(twinbit::enum_field_value(w.prec), TB_ACT_I8, w.k));
  b.w = w;
  if (!npu::pack_group_major(w, b.b)) {
    return Error(TB_RESOURCE_EXHAUSTED, "%s: no memory for the native B copy (%lld bytes)", kWho,
                 static_cast<long long>(w.np * w.kp));
  }
  b.chunks = npu::column_chunks(w.np, ctx.cores);
  for (const npu::Chunk& c : b.chunks) {
    npu::MatmulDesc d;
    d.k = 32;
    d.n = c.count;
    d.max_m = npu::kMaxRowsPerRun;
    d.core = c.core;
    npu::Matmul* m = nullptr;
    if (npu::DevStatus s = npu::matmul_create(d, &m); s != npu::DevStatus::ok) {
      return dev_error(s, "matmul_create");
    }
    b.contexts.emplace_back(m);
  }
  return Status();
}

tb_code weights_bind(void* c, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  const int kind = twinbit::enum_field_value(view->kind);
  if (kind == TB_WEIGHTS_F32) {
    return Error(TB_UNIMPLEMENTED, "%s: f32 matrices (gemv_f32): %s", kWho, kNoFloat).to_c(err);
  }
  if (kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_INVALID_ARGUMENT, "%s: weights kind %d is unknown (expected 0 = strips, 1 = "
                 "f32 matrix)", kWho, kind).to_c(err);
  }
  auto b = std::unique_ptr<Bound>(new (std::nothrow) Bound);
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "%s: out of host memory", kWho).to_c(err);
  if (Status s = bind_strips(*ctx_of(c), view->strips, *b); !s.ok()) return s.to_c(err);
  ctx_of(c)->bound_bytes += b->b.size();
  ctx_of(c)->bound_handles += 1;
  *out_handle = b.release();
  return TB_OK;
}

void weights_release(void* c, void* handle) {
  const Bound* b = static_cast<const Bound*>(handle);
  if (!b) return;
  ctx_of(c)->bound_bytes -= b->b.size();
  ctx_of(c)->bound_handles -= 1;
  delete b;
}

// "npu_layout.bind_stats" (get_proc), of type tb_code (*)(void* ctx, uint64_t* bytes,
// uint64_t* handles, tb_error* err): the native B bytes the live handles keep (Np * Kp each:
// the q8 codes' size, twice the q4 codes') and how many handles there are.
tb_code bind_stats(void* c, uint64_t* bytes, uint64_t* handles, tb_error* err) {
  if (!bytes || !handles) {
    return Error(TB_INVALID_ARGUMENT, "%s: bind_stats: null output", kWho).to_c(err);
  }
  *bytes = ctx_of(c)->bound_bytes.load();
  *handles = ctx_of(c)->bound_handles.load();
  return TB_OK;
}

void* get_proc(void*, const char* name) {
  if (name && std::string(name) == "npu_layout.bind_stats") return reinterpret_cast<void*>(&bind_stats);
  return nullptr;
}

// One chunk's columns for rows [r0, r0 + rows): the per-group device calls and the host's scale
// accumulation in contract order. Runs with the chunk's core held.
Status run_chunk(const Bound& b, size_t ci, const tb_gemm_args& a, int64_t r0, int64_t rows) {
  const tb_strips& w = b.w;
  const npu::Chunk& ch = b.chunks[ci];
  npu::Matmul* mm = b.contexts[ci].get();
  const int64_t groups = w.kp / 32, nsplit = twinbit::fold_plan(w), nc = ch.count;
  const twinbit::StripLayout layout = twinbit::StripLayout::of(w);
  std::vector<int8_t> abuf(static_cast<size_t>(npu::a_bytes(rows, 32)));
  std::vector<int32_t> cbuf(static_cast<size_t>(npu::c_elems(rows, nc)));
  std::vector<float> acc(static_cast<size_t>(rows * nc)), out(static_cast<size_t>(rows * nc), 0.0f);
  std::vector<float> ws(static_cast<size_t>(nc));
  for (int64_t z = 0; z < nsplit; ++z) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t g = twinbit::slice_begin(groups, nsplit, z); g < twinbit::slice_end(groups, nsplit, z); ++g) {
      npu::pack_group_a(a.xq, a.ldxq, r0, rows, g, abuf.data());
      npu::DevStatus s = npu::matmul_set_a(mm, rows, abuf.data(), abuf.size());
      if (s != npu::DevStatus::ok) return dev_error(s, "matmul_set_a");
      s = npu::matmul_bind_b(mm, b.b.data() + npu::group_b_offset(w.np, g, ch.begin),
                             static_cast<uint64_t>(nc * 32));
      if (s != npu::DevStatus::ok) return dev_error(s, "matmul_bind_b");
      if ((s = npu::matmul_run(mm)) != npu::DevStatus::ok) return dev_error(s, "matmul_run");
      s = npu::matmul_read_c(mm, cbuf.data(), cbuf.size());
      if (s != npu::DevStatus::ok) return dev_error(s, "matmul_read_c");
      for (int64_t n = 0; n < nc; ++n) {
        ws[n] = twinbit::fp16_to_float(w.scales[layout.scale_index(ch.begin + n, g)]);
      }
      for (int64_t m = 0; m < rows; ++m) {
        const float xd = a.xd[(r0 + m) * a.ldxd + g];
        float* accm = acc.data() + m * nc;
        for (int64_t n = 0; n < nc; ++n) {
          const float t = ws[n] * xd;  // one rounding
          const float p = static_cast<float>(cbuf[npu::c_offset(rows, m, n)]);  // exact
          accm[n] = std::fma(p, t, accm[n]);
        }
      }
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] + acc[i];
  }
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < nc && ch.begin + n < w.n; ++n) {
      a.y[(r0 + m) * a.ldy + ch.begin + n] = out[m * nc + n];
    }
  }
  return Status();
}

tb_code gemm(void* c, void* handle, const tb_gemm_args* a, tb_error* err) {
  Context& ctx = *ctx_of(c);
  const Bound* b = static_cast<const Bound*>(handle);
  if (!b) return Error(TB_INVALID_ARGUMENT, "%s: gemm got a null weight handle", kWho).to_c(err);
  if (Status s = twinbit::check_gemm_args(b->w, *a); !s.ok()) return s.to_c(err);
  if (twinbit::enum_field_value(a->mode) != TB_ACT_I8) {
    return gemm_supported(b->w.prec, twinbit::enum_field_value(a->mode), b->w.k).to_c(err);
  }
  // The cores run at once; each runs its chunks one after the other (one matmul at a time).
  std::vector<Status> status(static_cast<size_t>(ctx.cores));
  [[maybe_unused]] const char spawned = 0, joined = 0;
  TWINBIT_TSAN_RELEASE(&spawned);
  tbb::parallel_for(0, ctx.cores, [&](int core) {
    TWINBIT_TSAN_ACQUIRE(&spawned);
    // Isolated: while this thread waits inside the emulator's parallel loop it must not pick up
    // another call's task for the core it holds.
    tbb::this_task_arena::isolate([&] {
      std::lock_guard<std::mutex> hold(ctx.core_lock[core]);
      for (size_t ci = 0; ci < b->chunks.size() && status[core].ok(); ++ci) {
        if (b->chunks[ci].core != core) continue;
        for (int64_t r0 = 0; r0 < a->m && status[core].ok(); r0 += npu::kMaxRowsPerRun) {
          status[core] = run_chunk(*b, ci, *a, r0, std::min(npu::kMaxRowsPerRun, a->m - r0));
        }
      }
    });
    TWINBIT_TSAN_RELEASE(&joined);
  });
  TWINBIT_TSAN_ACQUIRE(&joined);
  for (const Status& s : status) {
    if (!s.ok()) return s.to_c(err);
  }
  return TB_OK;
}

tb_code gemv_f32(void*, void*, const float*, float*, tb_error* err) {
  return Error(TB_UNIMPLEMENTED, "%s: gemv_f32: %s", kWho, kNoFloat).to_c(err);
}

tb_code gdn_delta(void*, const tb_gdn_args*, tb_error* err) {
  return Error(TB_UNIMPLEMENTED, "%s: gdn_delta: %s", kWho, kNoFloat).to_c(err);
}

void destroy(void* c) { delete ctx_of(c); }

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
    .gemv_f32_pair = nullptr,  // core's default: two gemv_f32 calls (UNIMPLEMENTED)
    .read_floor = nullptr,
    .quantize_i8 = nullptr,    // the host runs the reference quantiser
    .get_proc = get_proc,
};

}  // namespace

extern "C" tb_code tb_backend_create_npu_layout(uint32_t host_abi_version, tb_backend* out,
                                                tb_error* err, const tb_backend_params* params) {
  *out = {};
  if (host_abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "%s speaks ABI version %u, the host %u", kWho,
                 TB_BACKEND_ABI_VERSION, host_abi_version).to_c(err);
  }
  Status s = twinbit::check_param_keys(params, kWho, {"cores"});
  int32_t device = 0;  // one NPU (of three cores)
  if (s.ok()) s = twinbit::choose_device(params, kWho, 1, &device);
  int64_t cores = npu::kCores;
  if (s.ok() && twinbit::find_param(params, "cores")) {
    s = twinbit::parse_int_param(kWho, "cores", twinbit::find_param(params, "cores"), 1,
                                 npu::kCores, &cores);
  }
  if (!s.ok()) return s.to_c(err);
  auto ctx = std::unique_ptr<Context>(new (std::nothrow) Context);
  if (!ctx) return Error(TB_RESOURCE_EXHAUSTED, "%s: out of host memory", kWho).to_c(err);
  ctx->cores = static_cast<int>(cores);
  ctx->device = std::string(npu::device_name()) + " (" + std::to_string(cores) +
                " cores; bound weights: int8 native B, group-major, Np*Kp bytes per projection, "
                "npu_layout.bind_stats)";
  ctx->features = "gemm.q8,gemm.q4,act.i8,layout.rk3588_native,cores." + std::to_string(cores) +
                  (npu::emulated() ? ",emulated" : "");
  out->iface = &kIface;
  out->ctx = ctx.release();
  return TB_OK;
}
