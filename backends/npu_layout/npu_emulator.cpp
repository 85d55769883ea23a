// The device seam (npu_device.h) implemented on the host CPU: what a board's librknnrt does, done
// exactly. int8 x int8 products summed in int32 are exact in any order, so the emulator is free
// to walk the native layouts in whatever order is fast; it threads over N with oneTBB, as the
// issue of the port asks. It enforces every limit of the device (npu_layout.h), so a shape the
// chip would refuse is refused here with the same status.
//
// This is the one file a port to a real RK3588 replaces (docs/NPU.md "Porting to a board").
#include <algorithm>
#include <atomic>
#include <new>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "backends/npu_layout/npu_device.h"
#include "backends/npu_layout/npu_layout.h"
#include "core/tsan_edges.h"

namespace twinbit::npu {

struct Matmul {
  MatmulDesc desc;
  const int8_t* b = nullptr;
  int64_t m = 0;            // rows of the A last set (0: none yet)
  std::vector<int8_t> a;    // the context's A memory, native layout
  std::vector<int32_t> c;   // the context's C memory, native layout
  bool c_ready = false;
};

namespace {

std::atomic<uint64_t> g_runs{0};

}  // namespace

const char* dev_status_name(DevStatus s) {
  switch (s) {
    case DevStatus::ok: return "ok";
    case DevStatus::null_argument: return "null argument";
    case DevStatus::bad_type: return "matmul type is not int8 x int8 -> int32";
    case DevStatus::bad_core: return "core index out of range (0 .. 2)";
    case DevStatus::k_not_aligned: return "K is not a positive multiple of 32";
    case DevStatus::n_not_aligned: return "N is not a positive multiple of 32";
    case DevStatus::n_too_large: return "N > 4096 (int8 limit of one matmul)";
    case DevStatus::m_out_of_range: return "M outside 1 .. the context's max_m";
    case DevStatus::buffer_size: return "buffer size is not the native layout's size";
    case DevStatus::b_not_bound: return "run before B was bound";
    case DevStatus::a_not_set: return "run before A was set";
    case DevStatus::c_not_ready: return "C read before a run";
    case DevStatus::out_of_memory: return "out of memory";
  }
  return "unknown status";
}

DevStatus matmul_create(const MatmulDesc& d, Matmul** out) {
  if (!out) return DevStatus::null_argument;
  *out = nullptr;
  if (d.type != MatmulType::int8_int8_to_int32) return DevStatus::bad_type;
  if (d.core < 0 || d.core >= kCores) return DevStatus::bad_core;
  if (d.k < kKAlign || d.k % kKAlign != 0) return DevStatus::k_not_aligned;
  if (d.n < kNAlign || d.n % kNAlign != 0) return DevStatus::n_not_aligned;
  if (d.n > kMaxN) return DevStatus::n_too_large;
  if (d.max_m < 1) return DevStatus::m_out_of_range;
  auto* ctx = new (std::nothrow) Matmul;
  if (!ctx) return DevStatus::out_of_memory;
  ctx->desc = d;
  *out = ctx;
  return DevStatus::ok;
}

DevStatus matmul_bind_b(Matmul* ctx, const int8_t* b, uint64_t bytes) {
  if (!ctx || !b) return DevStatus::null_argument;
  if (bytes != static_cast<uint64_t>(b_bytes(ctx->desc.k, ctx->desc.n))) return DevStatus::buffer_size;
  ctx->b = b;
  return DevStatus::ok;
}

DevStatus matmul_set_a(Matmul* ctx, int64_t m, const int8_t* a, uint64_t bytes) {
  if (!ctx || !a) return DevStatus::null_argument;
  if (m < 1 || m > ctx->desc.max_m) return DevStatus::m_out_of_range;
  if (bytes != static_cast<uint64_t>(a_bytes(m, ctx->desc.k))) return DevStatus::buffer_size;
  try {
    ctx->a.assign(a, a + bytes);
  } catch (const std::bad_alloc&) {
    return DevStatus::out_of_memory;
  }
  ctx->m = m;
  ctx->c_ready = false;
  return DevStatus::ok;
}

DevStatus matmul_run(Matmul* ctx) {
  if (!ctx) return DevStatus::null_argument;
  if (!ctx->b) return DevStatus::b_not_bound;
  if (ctx->m == 0) return DevStatus::a_not_set;
  const int64_t M = ctx->m, K = ctx->desc.k, N = ctx->desc.n;
  try {
    ctx->c.assign(static_cast<size_t>(c_elems(M, N)), 0);
  } catch (const std::bad_alloc&) {
    return DevStatus::out_of_memory;
  }
  const int8_t* A = ctx->a.data();
  const int8_t* B = ctx->b;
  int32_t* C = ctx->c.data();
  // Column tiles of 32 (B's native tiles) across threads; a task gets >= ~64 K multiply-adds.
  const int64_t tiles = N / kBSubN;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, M * K * kBSubN));
  [[maybe_unused]] const char spawned = 0, joined = 0;
  TWINBIT_TSAN_RELEASE(&spawned);
  const int64_t segments = b_segments(K);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, tiles, grain), [&](const tbb::blocked_range<int64_t>& r) {
    TWINBIT_TSAN_ACQUIRE(&spawned);
    // Sums wrap modulo 2^32 like an int32 accumulator, without signed overflow (a K past 131071
    // could overflow; the backend's K = 32 sums stay below 2^20).
    std::vector<uint32_t> sums(static_cast<size_t>(M * kBSubN));
    int16_t bt[kBSubK][kBSubN];  // one B tile transposed to [k][column]: rows broadcast over columns
    for (int64_t j = r.begin(); j < r.end(); ++j) {
      std::fill(sums.begin(), sums.end(), 0u);
      for (int64_t t = 0; t < segments; ++t) {
        const int64_t k_tiles = round_up(b_segment_k(K, t), kBSubK) / kBSubK;
        // Tile (j, kb) of segment t: 32 columns x 32 k, column c's k contiguous (npu_layout.h).
        const int8_t* tile = B + b_offset(K, N, t * kKSegment, j * kBSubN);
        for (int64_t kb = 0; kb < k_tiles; ++kb, tile += kBSubN * kBSubK) {
          for (int64_t c = 0; c < kBSubN; ++c) {
            for (int64_t k = 0; k < kBSubK; ++k) bt[k][c] = tile[c * kBSubK + k];
          }
          const int64_t k0 = t * kKSegment + kb * kBSubK;
          for (int64_t m = 0; m < M; ++m) {
            const int8_t* lo = A + a_offset(M, m, k0);       // k0 .. k0+15 of row m
            const int8_t* hi = A + a_offset(M, m, k0 + 16);  // k0+16 .. k0+31
            uint32_t* s = sums.data() + m * kBSubN;
            for (int64_t k = 0; k < kBSubK; ++k) {
              const int16_t a = k < 16 ? lo[k] : hi[k - 16];
              // |a * b| <= 128 * 128 = 16384: the product is exact in int16.
              for (int64_t c = 0; c < kBSubN; ++c) {
                s[c] += static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(a * bt[k][c])));
              }
            }
          }
        }
      }
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t c = 0; c < kBSubN; ++c) C[c_offset(M, m, j * kBSubN + c)] = static_cast<int32_t>(sums[m * kBSubN + c]);
      }
    }
    TWINBIT_TSAN_RELEASE(&joined);
  });
  TWINBIT_TSAN_ACQUIRE(&joined);
  ctx->c_ready = true;
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return DevStatus::ok;
}

DevStatus matmul_read_c(const Matmul* ctx, int32_t* c, uint64_t count) {
  if (!ctx || !c) return DevStatus::null_argument;
  if (!ctx->c_ready) return DevStatus::c_not_ready;
  if (count != ctx->c.size()) return DevStatus::buffer_size;
  std::copy(ctx->c.begin(), ctx->c.end(), c);
  return DevStatus::ok;
}

void matmul_destroy(Matmul* ctx) { delete ctx; }

const char* device_name() { return "RK3588 NPU matmul (int8 x int8 -> int32), emulated on the host CPU"; }

bool emulated() { return true; }

uint64_t runs_so_far() { return g_runs.load(std::memory_order_relaxed); }

}  // namespace twinbit::npu
