// The slice-block kernel of the CUDA gemm (gemm_kernels.h, MAPPING): a block of 4 warps owns
// 4 (or 8) adjacent strips, a row tile and one, several or every slice; decode (one row) and
// prefill (row tiles of 8 or 16) are instantiations of the same template. The library
// instantiates the schedules its plan chooses (gemm_decode.cu, gemm_prefill.cu); the benchmark
// instantiates the measured alternatives (bench/cuda/gemm_variants.cu). Internal linkage: each
// translation unit compiles its own instantiations.
#pragma once

#include <cstdint>

#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_lanes.cuh"
#include "core/numerics.h"

namespace twinbit::cuda::detail {
namespace {

// Partial reads in flight per folding thread: 32 in the merged decode kernel (small shapes with
// many slices, where each batch is one L2 round trip on the critical path), 16 elsewhere (more
// costs registers, and lm_head's 4 slices need no more; ptxas counts:
// docs/results/cuda-kernel-choices.md).
template <bool kMerge>
constexpr int kFoldBatch = kMerge ? 32 : 16;

enum class SliceRun { kOne, kMerged, kAll };  // slices per block (gemm_kernel)

// kRun: how many slices a block runs. kOne: one, its partial stored at the end. kMerged (decode of
// small shapes): several consecutive ones, each partial stored as its last group completes.
// kAll (prefill): every slice of its strips and row tile in ascending z, folded in registers as
// each completes (out = out + a) - the contract's fold, with no partials and no counter at all.
// kDepth: weight tiles in flight per warp ahead of the one being computed (a register ring;
// decode only, where nothing else hides the DRAM latency). kCols: strips per warp (1, or 2 for
// prefill: accumulate_group2).
// Launched during the kernel before it (dependent_launch.cuh), a block loads its first weight tiles
// meanwhile and waits (griddep_wait) before it stages activations: every read of another kernel's
// output and every global write (partials, counters, outputs) comes after the staging.
template <tb_prec P, tb_act_mode A, int MT, bool kAltCodes, SliceRun kRun, int kDepth, bool kRowsInner = false,
          int kCols = 1, int kMinBlocks = 1>
__global__ void __launch_bounds__(kThreads, kMinBlocks) gemm_kernel(const Params p) {
  constexpr bool kMerge = kRun != SliceRun::kOne;
  constexpr int kBlockStrips = kStripsPerBlock * kCols;
  constexpr int kOuts = kRun == SliceRun::kAll ? MT : 1;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  griddep_launch_dependents();  // the next kernel may start its own weight loads
  const int64_t b = blockIdx.x;  // row tile fastest: the tiles of one strip run together (L2 reuse)
  const int mt = static_cast<int>(b % p.row_tiles);
  const int64_t rest = b / p.row_tiles;
  const int sb = static_cast<int>(rest % p.strip_blocks);
  // This block runs the consecutive slices [z_first, z_last): contiguous groups, one partial each.
  const int z_first = static_cast<int>(rest / p.strip_blocks) * p.slices_per_block;
  const int z_last = min(p.nsplit, z_first + p.slices_per_block);
  int strip[kCols], col[kCols];
  bool active[kCols];  // the last block may hold fewer strips
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    strip[c] = sb * kBlockStrips + warp * kCols + c;
    active[c] = strip[c] < p.nstrips;
    col[c] = strip[c] * 32 + lane;
  }
  const int64_t m0 = static_cast<int64_t>(mt) * MT;
  const int rows = static_cast<int>(min(static_cast<int64_t>(MT), p.m - m0));
  const int gbeg = static_cast<int>(twinbit::slice_begin(p.ngroups, p.nsplit, z_first));
  const int gend = static_cast<int>(twinbit::slice_end(p.ngroups, p.nsplit, z_last - 1));

  __shared__ __align__(16) XStage<A, MT> stage;
  __shared__ unsigned is_last;
  float a[kCols][MT], out[kCols][kOuts];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
#pragma unroll
    for (int r = 0; r < MT; ++r) a[c][r] = 0.0f;
#pragma unroll
    for (int r = 0; r < kOuts; ++r) out[c][r] = 0.0f;
  }
  int z = z_first;  // kMerge: the slice being accumulated, and where it ends
  int z_end = kMerge ? static_cast<int>(twinbit::slice_end(p.ngroups, p.nsplit, z)) : 0;

  for (int c0 = gbeg; c0 < gend; c0 += kChunkGroups) {
    const int cn = min(kChunkGroups, gend - c0);
    TileCursor cur0[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      cur0[c] = tile_cursor<P>(p.codes, p.scales, static_cast<int64_t>(strip[c]) * p.ngroups + c0, lane);
    }
    // The first loads do not depend on the activations, so they are issued before the staging
    // (small shapes are latency chains: one round trip saved per block).
    Tile ring[kDepth][kCols];
#pragma unroll
    for (int i = 0; i < kDepth; ++i) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        ring[i][c] = Tile{};  // an inactive column computes on zeros and stores nothing
        if (active[c] && i < cn) ring[i][c] = load_tile_at<P>(cur0[c], i);
      }
    }
    // The group the ring loads next, one pointer step per load: ptxas then keeps the pointers
    // instead of recomputing each tile's 64-bit address from the strip (q4 lm_head decode: 138
    // instructions a group instead of 159 with the code and scale changes of the same commit).
    // Not for q8's two strips per warp, where ptxas pays for the two cursors in register moves
    // (H200, F32 lm_head M = 32: 710 vs 661 us; q4 there 643 vs 658).
    constexpr bool kStepCursor = kCols == 1 || P == TB_PREC_Q4;
    TileCursor next[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) next[c] = advanced<P>(cur0[c], kDepth);
    if (c0 == gbeg) griddep_wait();  // the kernel before this one has finished: its outputs are here
    __syncthreads();
    stage_chunk<A, MT>(p, stage, m0, rows, c0, cn);
    __syncthreads();
    if (active[0]) {
#pragma unroll 1
      for (int g0 = 0; g0 < cn; g0 += kDepth) {
#pragma unroll
        for (int i = 0; i < kDepth; ++i) {
          const int gl = g0 + i;
          if (gl < cn) {
            Tile cur[kCols];  // later groups' loads stay in flight while this one runs
#pragma unroll
            for (int c = 0; c < kCols; ++c) {
              cur[c] = ring[i][c];
              if (active[c] && gl + kDepth < cn) {
                if constexpr (kStepCursor) {
                  ring[i][c] = load_tile_at<P>(next[c], 0);
                  next[c] = advanced<P>(next[c], 1);
                } else {
                  ring[i][c] = load_tile_at<P>(cur0[c], gl + kDepth);
                }
              }
            }
            if constexpr (kCols == 1) {  // ascending g
              accumulate_group<P, A, MT, kAltCodes, kRowsInner>(cur[0], stage, gl, rows, a[0]);
            } else {
              accumulate_group2<P, A, MT, kAltCodes>(cur, stage, gl, rows, a);
            }
            if constexpr (kMerge) {
              if (c0 + gl + 1 == z_end) {  // slice z complete: its partial, or its turn in the fold
#pragma unroll
                for (int c = 0; c < kCols; ++c) {
#pragma unroll
                  for (int r = 0; r < MT; ++r) {
                    if constexpr (kRun == SliceRun::kAll) {
                      out[c][r] = __fadd_rn(out[c][r], a[c][r]);
                    } else {
                      if (r < rows && active[c]) {
                        p.partial[(static_cast<int64_t>(z) * p.m + m0 + r) * p.np + col[c]] = a[c][r];
                      }
                    }
                    a[c][r] = 0.0f;
                  }
                }
                ++z;
                if (z < z_last) z_end = static_cast<int>(twinbit::slice_end(p.ngroups, p.nsplit, z));
              }
            }
          }
        }
      }
    }
  }
  griddep_wait();  // a no-op past the loop's; here for a block whose slices hold no group

  if constexpr (kRun == SliceRun::kAll) {  // every slice folded: out = +0 + a[0] + ... + a[nsplit-1]
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      if (active[c] && col[c] < p.n) {
#pragma unroll
        for (int r = 0; r < MT; ++r) {
          if (r < rows) p.y[(m0 + r) * p.n + col[c]] = out[c][r];
        }
      }
    }
    return;
  }
  if constexpr (!kMerge) {  // one slice per block: store its partial now
    if (p.nsplit > 1) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        if (active[c]) {
#pragma unroll
          for (int r = 0; r < MT; ++r) {
            if (r < rows) p.partial[(static_cast<int64_t>(z_first) * p.m + m0 + r) * p.np + col[c]] = a[c][r];
          }
        }
      }
    }
  }
  if (p.nsplit == 1) {  // the fold of a single slice: out = +0 + a[0]
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      if (active[c] && col[c] < p.n) {
#pragma unroll
        for (int r = 0; r < MT; ++r) {
          if (r < rows) p.y[(m0 + r) * p.n + col[c]] = __fadd_rn(0.0f, a[c][r]);
        }
      }
    }
    return;
  }
  // Last-block detection as in a grid barrier: the block's partial stores are ordered before
  // thread 0's device-scope fence by the block barrier, and the fence before the count.
  __syncthreads();
  const int64_t counter = static_cast<int64_t>(sb) * p.row_tiles + mt;
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned done = static_cast<unsigned>(z_last - z_first);  // slices this block finished
    is_last = atomicAdd(&p.counters[counter], done) + done == static_cast<unsigned>(p.nsplit);
    if (is_last) __threadfence();  // acquire: every other block's partials before the reads
  }
  __syncthreads();
  if (!is_last) return;
  // The last block folds its strips x rows of this tile: out = +0 + a[0] + a[1] + ... (ascending z).
  constexpr int kFold = kFoldBatch<kRun == SliceRun::kMerged>;
  const int64_t zstride = p.m * p.np;
#pragma unroll 1
  for (int j = 0; j < kCols; ++j) {
    const int fcol = sb * kThreads * kCols + j * kThreads + threadIdx.x;
    if (fcol >= p.n) break;
#pragma unroll 1
    for (int r = 0; r < rows; ++r) {
      const float* src = p.partial + (m0 + r) * p.np + fcol;  // advanced by zstride per slice
      float sum = 0.0f;
      // All kFold loads in flight at once, then the adds strictly in ascending z: each batch
      // costs one L2 round trip: the fold of nsplit slices costs ceil(nsplit / kFold) of them.
#pragma unroll 1
      for (int z0 = 0; z0 < p.nsplit; z0 += kFold) {
        const int cnt = min(kFold, p.nsplit - z0);
        float v[kFold];
#pragma unroll
        for (int i = 0; i < kFold; ++i) {
          if (i < cnt) v[i] = __ldcg(src);
          src += zstride;
        }
#pragma unroll
        for (int i = 0; i < kFold; ++i) {
          if (i < cnt) sum = __fadd_rn(sum, v[i]);
        }
      }
      p.y[(m0 + r) * p.n + fcol] = sum;
    }
  }
  if (threadIdx.x == 0) p.counters[counter] = 0;  // ready for the next launch
}

}  // namespace
}  // namespace twinbit::cuda::detail
