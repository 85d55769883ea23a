#include "backends/cpu/cpu_backend.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "backends/cpu/cpu_amx.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_kernels.h"
#include <twinbit/backend_params.hpp>
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"
#include "core/tsan_edges.h"
#include <twinbit/status.hpp>

namespace {

using twinbit::Error;
using twinbit::Status;
using twinbit::find_param;
using namespace twinbit::cpu;

struct Context {
  Isa isa = Isa::kSse2;
  const KernelTable* k = nullptr;
  int threads = 1;
  int prefetch_bytes = 8192;
  // The amx tag's tile schedule (kernels_amx.cpp): kAmxScheduleAuto, or a fixed 0 (quadrants)
  // or 1 (shared tiles). The spec key amx_schedule picks; the bits are the same.
  int amx_schedule = kAmxScheduleAuto;
  int amx_tuning = kAmxTuningAuto;  // the quadrant schedule's tuning (cpu_amx.h, AmxTuning; auto by precision)
  std::unique_ptr<tbb::task_arena> arena;
  std::string device;
  std::string features;
};

struct Bound {
  tb_weights_view view;  // the caller's memory (often the mapped file): no copy
};

Context* ctx_of(void* c) { return static_cast<Context*>(c); }

Status subnormal_check(const char* where) {
  unsigned csr = 0;
  if (fp_env_flushes_subnormals(&csr)) {
    return Error(TB_FAILED_PRECONDITION, "cpu backend: %s", fp_env_flush_message(csr, where).c_str());
  }
  return Status();
}

// Runs body(range...) inside the arena; every worker chunk checks the FP environment first
// (MXCSR, FPCR).
// Under ThreadSanitizer the region marks the two edges the uninstrumented oneTBB gives: this
// thread's writes before the region happen before every chunk, and every chunk before the return
// (core/tsan_edges.h). Chunks get no edge between them, so a race between chunks is still seen.
template <class Range, class Body>
Status run_parallel(Context& c, const Range& range, const Body& body) {
  std::atomic<bool> flushed{false};
  [[maybe_unused]] const char spawned = 0, joined = 0;  // addresses naming the two edges
  TWINBIT_TSAN_RELEASE(&spawned);
  c.arena->execute([&] {
    tbb::parallel_for(range, [&](const Range& r) {
      TWINBIT_TSAN_ACQUIRE(&spawned);
      if (fp_env_flushes_subnormals(nullptr)) {
        flushed.store(true, std::memory_order_relaxed);
      } else {
        body(r);
      }
      TWINBIT_TSAN_RELEASE(&joined);
    });
  });
  TWINBIT_TSAN_ACQUIRE(&joined);
  if (flushed.load()) return subnormal_check("on a oneTBB worker thread");
  return Status();
}

tb_code describe(void* c, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "cpu";
  out->device = ctx_of(c)->device.c_str();
  out->features = ctx_of(c)->features.c_str();
  out->memory_bytes = 0;
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc* op, tb_error* err) {
  switch (op->op) {
    case TB_OP_GEMM:
      if (!kernels_have(op->prec)) {
        return Error(TB_UNIMPLEMENTED, "cpu backend: no kernel for precision %s (%d)",
                     twinbit::prec_name(op->prec), static_cast<int>(op->prec)).to_c(err);
      }
      if (op->mode != TB_ACT_F32 && op->mode != TB_ACT_I8) {
        return Error(TB_UNIMPLEMENTED, "cpu backend: activation mode %d is not f32 (0) or i8 (1)",
                     static_cast<int>(op->mode)).to_c(err);
      }
      return TB_OK;
    case TB_OP_GEMV_F32:
    case TB_OP_GEMV_F32_PAIR:
    case TB_OP_GDN_DELTA:
    case TB_OP_QUANTIZE_I8:
      return TB_OK;
  }
  return Error(TB_UNIMPLEMENTED, "cpu backend: operation %d is unknown", static_cast<int>(op->op))
      .to_c(err);
}

tb_code weights_bind(void*, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  if (view->kind == TB_WEIGHTS_STRIPS) {
    Status s = twinbit::check_strips(view->strips);
    if (s.ok() && !kernels_have(view->strips.prec)) {
      s = Error(TB_UNIMPLEMENTED, "cpu backend: no kernel for precision %s",
                twinbit::prec_name(view->strips.prec));
    }
    if (!s.ok()) return s.to_c(err);
  } else if (view->kind == TB_WEIGHTS_F32) {
    Status s = twinbit::check_matrix(view->matrix);
    if (!s.ok()) return s.to_c(err);
  } else {
    return Error(TB_INVALID_ARGUMENT, "cpu backend: weights kind %d is unknown (expected 0 = "
                 "strips, 1 = f32 matrix)", static_cast<int>(view->kind)).to_c(err);
  }
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "cpu backend: out of host memory").to_c(err);
  *out_handle = b;
  return TB_OK;
}

void weights_release(void*, void* handle) { delete static_cast<Bound*>(handle); }

Status need_kind(const Bound* b, tb_weights_kind kind, const char* op) {
  if (!b) return Error(TB_INVALID_ARGUMENT, "cpu backend: %s got a null weight handle", op);
  if (b->view.kind != kind) {
    return Error(TB_FAILED_PRECONDITION, "cpu backend: %s needs %s weights, the handle holds %s",
                 op, kind == TB_WEIGHTS_STRIPS ? "strip" : "f32 matrix",
                 b->view.kind == TB_WEIGHTS_STRIPS ? "strips" : "an f32 matrix");
  }
  return Status();
}

// Rows of x padded to Kp with +0.0f when K % 32 != 0 (the kernels read whole groups).
struct PaddedRows {
  std::vector<float> data;
  const float* x;
  int64_t ldx;
};
PaddedRows pad_rows(const tb_strips& w, const tb_gemm_args& a) {
  PaddedRows out{{}, a.x, a.ldx};
  if (w.k == w.kp) return out;
  out.data.assign(static_cast<size_t>(a.m * w.kp), 0.0f);
  for (int64_t r = 0; r < a.m; ++r) {
    std::copy(a.x + r * a.ldx, a.x + r * a.ldx + w.k, out.data.begin() + r * w.kp);
  }
  out.x = out.data.data();
  out.ldx = w.kp;
  return out;
}

// A call's scratch bytes on 64-byte boundaries (tile rows then never straddle cache lines), not
// zeroed: the packer writes every byte.
class AlignedBytes {
 public:
  void resize(int64_t n) { buf_.reset(new (std::align_val_t{64}) uint8_t[static_cast<size_t>(n)]); }
  uint8_t* data() { return buf_.get(); }

 private:
  struct Free {
    void operator()(uint8_t* q) const { ::operator delete[](q, std::align_val_t{64}); }
  };
  std::unique_ptr<uint8_t[], Free> buf_;
};

GemmParams gemm_params(const tb_strips& w) {
  GemmParams p{};
  p.prec = w.prec;
  p.n = w.n;
  p.k = w.k;
  p.np = w.np;
  p.kp = w.kp;
  p.ngroups = w.kp / 32;
  p.tile_bytes = twinbit::StripLayout::of(w).tile_code_bytes();
  p.nsplit = twinbit::fold_plan(w);  // the projection's plan: n_total, not this view's n
  p.codes = static_cast<const uint8_t*>(w.codes);
  p.scales = w.scales;
  return p;
}

// Strips x row blocks of 4 rows; a task keeps a strip for all its rows (the strip stays in
// cache while every row block reuses it). A task gets at least ~256 KiB of codes x rows when
// the shape allows (a lm_head strip at M = 1 is ~1 us of work: comparable to the cost of a
// task), while leaving >= 8 tasks per thread for balance.
tbb::blocked_range2d<int64_t> gemm_range(const GemmParams& p, int64_t m, int threads) {
  const int64_t strips = p.np / 32;
  const int64_t row_blocks = twinbit::ceil_div(m, 4);
  const int64_t strip_work = p.ngroups * p.tile_bytes * m;
  int64_t grain = std::max<int64_t>(1, (int64_t{256} << 10) / std::max<int64_t>(1, strip_work));
  grain = std::min(grain, std::max<int64_t>(1, strips / (8 * threads)));
  return tbb::blocked_range2d<int64_t>(0, strips, grain, 0, row_blocks, row_blocks);
}

tb_code gemm(void* c, void* handle, const tb_gemm_args* a, tb_error* err) {
  Context& ctx = *ctx_of(c);
  const Bound* b = static_cast<const Bound*>(handle);
  Status s = need_kind(b, TB_WEIGHTS_STRIPS, "gemm");
  if (s.ok()) s = twinbit::check_gemm_args(b->view.strips, *a);
  if (s.ok()) s = subnormal_check("on the calling thread");
  if (!s.ok()) return s.to_c(err);
  const tb_strips& w = b->view.strips;
  GemmParams p = gemm_params(w);
  p.prefetch_bytes = ctx.prefetch_bytes;
  p.amx_schedule = amx_schedule_for(ctx.amx_schedule, a->m);
  p.amx_tuning = amx_tuning_for(ctx.amx_tuning, w.prec);
  p.y = a->y;
  p.ldy = a->ldy;
  PaddedRows padded;
  std::vector<int32_t> xsum;
  AlignedBytes xpack;  // the tag's own activation layout (KernelTable::i8_pack), on cache lines
  if (a->mode == TB_ACT_F32) {
    padded = pad_rows(w, *a);
    p.x = padded.x;
    p.ldx = padded.ldx;
  } else {
    p.xq = a->xq;
    p.ldxq = a->ldxq;
    p.xd = a->xd;
    p.ldxd = a->ldxd;
    const int64_t pack_bytes = ctx.k->i8_pack_bytes ? ctx.k->i8_pack_bytes(a->m, p.ngroups) : 0;
    if (pack_bytes > 0) {
      xpack.resize(pack_bytes);
      ctx.k->i8_pack(p, a->m, xpack.data());
      p.xpack = xpack.data();
    } else if (ctx.isa == Isa::kAvx512vnni || ctx.isa == Isa::kAmx) {
      // The VNNI path's u8 x s8 correction term (the amx tag's tiles multiply s8 x s8 and need
      // none: it packs at every M where it runs the tiles).
      xsum.resize(static_cast<size_t>(a->m * p.ngroups));
      for (int64_t r = 0; r < a->m; ++r) {
        for (int64_t g = 0; g < p.ngroups; ++g) {
          int32_t t = 0;
          for (int kk = 0; kk < 32; ++kk) t += a->xq[r * a->ldxq + g * 32 + kk];
          xsum[r * p.ngroups + g] = t;
        }
      }
      p.xsum = xsum.data();
    }
  }
  const auto kernel = a->mode == TB_ACT_F32 ? ctx.k->gemm_f32 : ctx.k->gemm_i8;
  const int64_t m = a->m;
  s = run_parallel(ctx, gemm_range(p, m, ctx.threads), [&](const tbb::blocked_range2d<int64_t>& r) {
    kernel(p, r.rows().begin(), r.rows().end(), r.cols().begin() * 4,
           std::min<int64_t>(m, r.cols().end() * 4));
  });
  return s.to_c(err);
}

tb_code gemv_f32(void* c, void* handle, const float* x, float* y, tb_error* err) {
  Context& ctx = *ctx_of(c);
  const Bound* b = static_cast<const Bound*>(handle);
  Status s = need_kind(b, TB_WEIGHTS_F32, "gemv_f32");
  if (s.ok() && (!x || !y)) s = Error(TB_INVALID_ARGUMENT, "gemv_f32: x or y is null");
  if (s.ok()) s = subnormal_check("on the calling thread");
  if (!s.ok()) return s.to_c(err);
  const tb_matrix_f32& w = b->view.matrix;
  s = run_parallel(ctx, tbb::blocked_range<int64_t>(0, w.rows, 16),
                   [&](const tbb::blocked_range<int64_t>& r) {
                     ctx.k->gemv_f32(w, x, y, r.begin(), r.end());
                   });
  return s.to_c(err);
}

tb_code gemv_f32_pair(void* c, void* ha, void* hb, const float* x, float* ya, float* yb,
                      tb_error* err) {
  Context& ctx = *ctx_of(c);
  const Bound* a = static_cast<const Bound*>(ha);
  const Bound* b = static_cast<const Bound*>(hb);
  Status s = need_kind(a, TB_WEIGHTS_F32, "gemv_f32_pair");
  if (s.ok()) s = need_kind(b, TB_WEIGHTS_F32, "gemv_f32_pair");
  if (s.ok() && (a->view.matrix.rows != b->view.matrix.rows ||
                 a->view.matrix.cols != b->view.matrix.cols)) {
    s = Error(TB_INVALID_ARGUMENT, "gemv_f32_pair: matrices are %lld x %lld and %lld x %lld "
              "(expected the same shape)", (long long)a->view.matrix.rows,
              (long long)a->view.matrix.cols, (long long)b->view.matrix.rows,
              (long long)b->view.matrix.cols);
  }
  if (s.ok() && (!x || !ya || !yb)) s = Error(TB_INVALID_ARGUMENT, "gemv_f32_pair: x or y is null");
  if (s.ok()) s = subnormal_check("on the calling thread");
  if (!s.ok()) return s.to_c(err);
  const int64_t rows = a->view.matrix.rows;
  // One index space over both matrices: rows [0, rows) of A, then [rows, 2 rows) of B.
  s = run_parallel(ctx, tbb::blocked_range<int64_t>(0, 2 * rows, 16),
                   [&](const tbb::blocked_range<int64_t>& r) {
                     const int64_t lo = r.begin(), hi = r.end();
                     if (lo < rows) ctx.k->gemv_f32(a->view.matrix, x, ya, lo, std::min(hi, rows));
                     if (hi > rows) {
                       ctx.k->gemv_f32(b->view.matrix, x, yb, std::max(lo, rows) - rows, hi - rows);
                     }
                   });
  return s.to_c(err);
}

tb_code gdn_delta(void* c, const tb_gdn_args* a, tb_error* err) {
  Context& ctx = *ctx_of(c);
  Status s = twinbit::check_gdn_args(*a);
  if (s.ok()) s = subnormal_check("on the calling thread");
  if (!s.ok()) return s.to_c(err);
  s = run_parallel(ctx, tbb::blocked_range<int64_t>(0, a->vh, 1),
                   [&](const tbb::blocked_range<int64_t>& r) {
                     ctx.k->gdn_delta(*a, r.begin(), r.end());
                   });
  return s.to_c(err);
}

// The kernels' SIMD quantiser, rows split across the arena. A task gets at least ~256 groups
// (8 K floats) so a decode row is not cut into tasks that cost more than their work.
tb_code quantize_i8(void* c, const tb_quantize_args* a, tb_error* err) {
  Context& ctx = *ctx_of(c);
  Status s = twinbit::check_quantize_args(*a);
  if (s.ok()) s = subnormal_check("on the calling thread");
  if (!s.ok()) return s.to_c(err);
  const int64_t grain = std::max<int64_t>(1, 256 / twinbit::ngroups_of(a->k));
  s = run_parallel(ctx, tbb::blocked_range<int64_t>(0, a->m, grain),
                   [&](const tbb::blocked_range<int64_t>& r) {
                     ctx.k->quantize(a->k, a->x, a->ldx, a->xq, a->ldxq, a->xd, a->ldxd, nullptr,
                                     r.begin(), r.end());
                   });
  return s.to_c(err);
}

// Reads every code and scale byte of the strip set with the gemm's partition and threads (m
// only shapes the partition, as it does for gemm).
tb_code read_floor(void* c, void* handle, int64_t m, tb_error* err) {
  Context& ctx = *ctx_of(c);
  const Bound* b = static_cast<const Bound*>(handle);
  Status s = need_kind(b, TB_WEIGHTS_STRIPS, "read_floor");
  if (s.ok() && m < 1) s = Error(TB_INVALID_ARGUMENT, "read_floor: m = %lld (expected >= 1)", (long long)m);
  if (!s.ok()) return s.to_c(err);
  const GemmParams p = gemm_params(b->view.strips);
  const int64_t strip_bytes = p.ngroups * p.tile_bytes;
  std::atomic<uint64_t> sink{0};
  const tbb::blocked_range2d<int64_t> part = gemm_range(p, m, ctx.threads);
  s = run_parallel(ctx, tbb::blocked_range<int64_t>(0, p.np / 32, part.rows().grainsize()),
                   [&](const tbb::blocked_range<int64_t>& r) {
                     const int64_t n = r.end() - r.begin();
                     uint64_t v = ctx.k->read_bytes(p.codes + r.begin() * strip_bytes, n * strip_bytes,
                                                    ctx.prefetch_bytes);
                     v ^= ctx.k->read_bytes(reinterpret_cast<const uint8_t*>(p.scales + r.begin() * p.ngroups * 32),
                                           n * p.ngroups * 64, ctx.prefetch_bytes);
                     sink.fetch_xor(v, std::memory_order_relaxed);
                   });
  static std::atomic<uint64_t> keep{0};
  keep.fetch_xor(sink.load());
  return s.to_c(err);
}

void destroy(void* c) { delete ctx_of(c); }

// Switches (get_proc; names and values documented in cpu_backend.h), for A/B measurements of one
// setting against another in one process.
tb_code sw_prefetch_bytes(void* c, int64_t v, tb_error* err) {
  if (v < 0 || v > 65536) {
    return Error(TB_INVALID_ARGUMENT, "cpu.set_prefetch_bytes: %lld is not a prefetch distance "
                 "(expected bytes 0 .. 65536)", static_cast<long long>(v)).to_c(err);
  }
  ctx_of(c)->prefetch_bytes = static_cast<int>(v);
  return TB_OK;
}

tb_code sw_amx_schedule(void* c, int64_t v, tb_error* err) {
  if (v < 0 || v > kAmxScheduleAuto) {
    return Error(TB_INVALID_ARGUMENT, "cpu.set_amx_schedule: %lld is not a schedule (expected 0 = "
                 "quadrants, 1 = shared tiles, 2 = auto)", static_cast<long long>(v)).to_c(err);
  }
  ctx_of(c)->amx_schedule = static_cast<int>(v);
  return TB_OK;
}

tb_code sw_amx_tuning(void* c, int64_t v, tb_error* err) {
  if (v != kAmxTuningAuto && !AmxTuning::valid(v)) {
    return Error(TB_INVALID_ARGUMENT, "cpu.set_amx_tuning: %#llx is not a tuning (expected 0 = auto, or bits 0-3 prefetch "
                 "chunks, 4-7 log2 line stride <= 6, 8-11 pipeline depth 1 .. 3, 12-13 order 0 .. 3 (3: depth >= 2), "
                 "14-15 conversion 0 .. 2; cpu_amx.h)",
                 static_cast<long long>(v)).to_c(err);
  }
  ctx_of(c)->amx_tuning = static_cast<int>(v);
  return TB_OK;
}

void* get_proc(void*, const char* name) {
  if (name && std::strcmp(name, "cpu.set_prefetch_bytes") == 0) {
    return reinterpret_cast<void*>(&sw_prefetch_bytes);
  }
  if (name && std::strcmp(name, "cpu.set_amx_schedule") == 0) {
    return reinterpret_cast<void*>(&sw_amx_schedule);
  }
  if (name && std::strcmp(name, "cpu.set_amx_tuning") == 0) {
    return reinterpret_cast<void*>(&sw_amx_tuning);
  }
  return nullptr;
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
    .gemv_f32_pair = gemv_f32_pair,
    .read_floor = read_floor,
    .quantize_i8 = quantize_i8,
    .get_proc = get_proc,
};

constexpr const char* kWho = "cpu backend";

// isa=<tag>: default the best tag this CPU runs (sse2 always runs).
Status choose_isa(const tb_backend_params* params, Isa* out) {
  const std::vector<Isa> runnable = runnable_isas();
  const char* forced = find_param(params, "isa");
  if (!forced) {
    *out = runnable.front();
    return Status();
  }
  for (Isa i : compiled_isas()) {
    if (forced == std::string(isa_name(i))) {
      if (!isa_runnable(i)) {
        return Error(TB_UNAVAILABLE, "%s: isa=%s: this CPU cannot run it (runnable here: %s)",
                     kWho, forced, isa_names(runnable).c_str());
      }
      *out = i;
      return Status();
    }
  }
  return Error(TB_INVALID_ARGUMENT, "%s: isa=%s is not an instruction-set tag of this build "
               "(valid: %s)", kWho, forced, isa_names(compiled_isas()).c_str());
}

// threads=<n>: default all hardware threads of the process's arena.
Status choose_threads(const tb_backend_params* params, int* out) {
  *out = tbb::this_task_arena::max_concurrency();
  const char* v = find_param(params, "threads");
  if (!v) return Status();
  int64_t n = 0;
  TB_RETURN_IF_ERROR(twinbit::parse_int_param(kWho, "threads", v, 1, 1024, &n));
  *out = static_cast<int>(n);
  return Status();
}

// amx_schedule=auto|shared|quadrants (kAmxScheduleAuto, GemmParams::amx_schedule's 1 and 0).
Status parse_amx_schedule(const char* v, int* out) {
  if (std::strcmp(v, "auto") == 0) {
    *out = kAmxScheduleAuto;
  } else if (std::strcmp(v, "shared") == 0) {
    *out = 1;
  } else if (std::strcmp(v, "quadrants") == 0) {
    *out = 0;
  } else {
    return Error(TB_INVALID_ARGUMENT, "%s: amx_schedule=%s is not a tile schedule (expected auto, shared or quadrants)",
                 kWho, v);
  }
  return Status();
}

Status parse_prefetch_bytes(const char* v, const char* what, int* out) {
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < 0 || n > 65536 || *v < '0' || *v > '9') {
    return Error(TB_INVALID_ARGUMENT, "%s%s is not a prefetch distance (expected bytes 0 .. 65536)", what, v);
  }
  *out = static_cast<int>(n);
  return Status();
}


}  // namespace



extern "C" tb_code tb_backend_create_cpu(uint32_t host_abi_version, tb_backend* out,
                                         tb_error* err, const tb_backend_params* params) {
  *out = {};
  if (host_abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "cpu backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host_abi_version).to_c(err);
  }
  Status s = subnormal_check("at backend creation");
  if (s.ok()) s = twinbit::check_param_keys(params, kWho, {"threads", "isa", "prefetch_bytes", "amx_schedule"});
  int32_t device = 0;  // the host is device 0, the only one
  if (s.ok()) s = twinbit::choose_device(params, kWho, 1, &device);
  Isa isa = Isa::kSse2;
  if (s.ok()) s = choose_isa(params, &isa);
  int threads = 1;
  if (s.ok()) s = choose_threads(params, &threads);
  int prefetch_bytes = 8192;
  if (s.ok() && find_param(params, "prefetch_bytes")) {
    s = parse_prefetch_bytes(find_param(params, "prefetch_bytes"), "cpu backend: prefetch_bytes=",
                             &prefetch_bytes);
  }
  int amx_schedule = Context{}.amx_schedule;
  if (s.ok() && find_param(params, "amx_schedule")) s = parse_amx_schedule(find_param(params, "amx_schedule"), &amx_schedule);
  if (!s.ok()) return s.to_c(err);
  auto ctx = std::unique_ptr<Context>(new (std::nothrow) Context);
  if (!ctx) return Error(TB_RESOURCE_EXHAUSTED, "cpu backend: out of host memory").to_c(err);
  ctx->isa = isa;
  ctx->k = &kernel_table(isa);
  ctx->threads = threads;
  ctx->prefetch_bytes = prefetch_bytes;
  ctx->amx_schedule = amx_schedule;
  ctx->arena = std::make_unique<tbb::task_arena>(threads);
  ctx->device = cpu_model_name() + " (" + std::to_string(threads) + " threads, " + isa_name(isa) +
                (isa == Isa::kAmx && amx_schedule != kAmxScheduleAuto
                     ? std::string(", amx_schedule=") + (amx_schedule == 0 ? "quadrants" : "shared")
                     : std::string()) +
                ")";
  ctx->features = std::string("gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gemv_f32_pair,gdn_delta,"
                              "read_floor,quantize_i8,isa.") + isa_name(isa);
  out->iface = &kIface;
  out->ctx = ctx.release();
  return TB_OK;
}
