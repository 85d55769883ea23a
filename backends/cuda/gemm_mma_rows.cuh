// The row-tile tensor-core kernel of the CUDA gemm (mode I8, M >= 2; the plan runs it past 32 rows,
// and at 16-32 where the plan takes no strip blocks: gemm_plan.h): a template shared by the product (gemm_mma.cu) and the
// benchmark's variants (bench/cuda/gemm_variants.cu), which instantiate it with other row-warp
// counts and float steps.
//
// WHY THIS IS EXACT. The contract's I8 group sum isum[g] = sum_k w[n][k] * xq[m][k] over the 32 k
// of a group is an integer: any order and any hardware that computes it without overflow gives
// it. One mma.sync.m16n8k32.s32.s8.s8.s32 computes exactly that for 16 columns x 8 rows
// (|isum| <= 32 * 128 * 127 < 2^22), added to its accumulators' start: the bits of 1.5 * 2^23,
// so the sum lands in a float's mantissa (no overflow: 0x4B400000 + 2^22 < 2^31). The float
// step stays per (column, row, group) in the contract's order on the CUDA cores: p = float(isum)
// (one exact subtraction), t = ws * xd (one rounding), acc = fma(p, t, acc) over the slice's
// groups in ascending g, then the fold in ascending z.
//
// MAPPING. A block of 4 warps owns 4 adjacent strips (warp = strip: 32 columns) and a tile of
// MT rows (8, 16, 32 or 64); all warps share the row tile's activation codes, staged in shared
// memory already in the mma's B-fragment order (one conflict-free 8-byte read per lane). Per
// group a warp's 32 columns are the A operand of two mmas (columns 0-15 and 16-31: the weight
// columns are the mma's M, the rows its N, so small M pads to 8 rows, not 16), each lane loading
// 8 code bytes of 4 columns. The k order inside a group is permuted (a lane's 8 contiguous q8
// bytes feed k = 4t..4t+3 and 16+4t..16+4t+3 of the fragment); the B fragment is staged with the
// same permutation, so each product pairs the weight and activation of the same k and the sum
// is unchanged. Every weight tile is read once per block for all MT rows.
//   Slices: one per block (partials, the last block folds, as the slice-block kernel) or every
//   slice per block, folded as each completes: in registers at 8 and 16 rows, in the block's
//   shared memory at 32 and 64 (kSmemFold). The plan runs every slice per block.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/device_numerics.cuh"
#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_mma.cuh"
#include "core/numerics.h"

namespace twinbit::cuda::detail {

// Weight tiles in flight per warp ahead of the one computed (4 raised every row tile's registers
// past 120 and spilled at 16 rows).
template <int MT>
constexpr int kMmaDepth = 2;
// Warps that share one strip's row tile, splitting its rows. Two at MT = 64 (64 accumulators a
// thread instead of 128, held to 128 registers) measured slower on the H200 (lm_head M = 512:
// 2882 vs 2466 us, ptxas spilled), so one; the code keeps the split for a retune.
template <int MT>
constexpr int kRowWarps = 1;
// The product's float step: the mma's accumulators start biased (see gemm_mma_kernel).
constexpr bool kMmaRowsBiased = true;
// Blocks per SM the registers of the every-slice kernel are held to (0: ptxas's own choice). At
// 32 rows its free choice (181 registers) left two blocks of 4 warps per SM, too few to cover the
// weight reads: held to three (168, 20 bytes spilled) lm_head M = 32 took 203 us against 265 on
// the H200 (docs/results/h200-2026-12-03-rows.md). 64 rows, with the fold in shared memory
// (kSmemFold), hold to three without spilling in q8 (168 registers; q4 spills 112 bytes) and ran
// faster than ptxas's 202 registers at two a SM (lm_head M = 512 1574.1 vs 1668.5 us, q4 2236.1
// vs 3070.6; h200-2026-12-04-smem-fold.md); 8 and 16 measured level.
template <int MT>
constexpr int kMmaRowsMinBlocks = MT == 32 ? 3 : MT == 64 ? 3 : 0;

// The every-slice kernel keeps its fold's running sums in the block's dynamic shared memory, not
// in registers (kSmemFold), at these row tiles: at 64 rows the register fold held 128 floats a
// thread (254 registers, two blocks an SM), and ptxas re-materialised the mma's bias start and A
// fragments before every mma under that pressure (12 register moves per 24 float-step
// instructions).
template <int MT>
constexpr bool kMmaRowsSmemFold = MT >= 32;

// Bytes of dynamic shared memory the every-slice kernel of MT rows (kRW warps a strip) folds in:
// one float4 per (warp, 8-row tile, half of the strip, lane), each lane reading and writing only
// its own (no barrier; 16-byte accesses at consecutive addresses, conflict-free).
template <int MT, int kRW>
constexpr size_t kMmaRowsFoldBytes = size_t{kStripsPerBlock} * kRW * (MT / 8 / kRW) * 2 * 32 * sizeof(float4);

template <int MT>
struct MmaStage {
  uint2 b[kChunkGroups][MT / 8][32];  // B fragments: (group, 8-row tile, lane)
  float xd[kChunkGroups][MT];         // activation scales: (group, row)
};

// The fragments one at a time (q4: a lane's fragment is bytes 4 tig.. and 16 + 4 tig.. of its row,
// not a contiguous copy).
template <tb_prec P, int MT, int kRW>
__device__ __forceinline__ void stage_fragments(const Params& p, MmaStage<MT>& s, int64_t m0, int rows, int c0,
                                                int cn) {
  constexpr int kJ = MT / 8, kBlock = kThreads * kRW;
  const int64_t kp = static_cast<int64_t>(p.ngroups) * 32;
  for (int i = threadIdx.x; i < cn * kJ * 32; i += kBlock) {
    const int l = i & 31, j = (i >> 5) % kJ, gl = (i >> 5) / kJ;
    const int r = j * 8 + (l >> 2), tig = l & 3;
    const int8_t* row = p.xq + (m0 + (r < rows ? r : 0)) * kp + (c0 + gl) * 32;
    s.b[gl][j][l] = load_act_fragment<P>(row, r < rows, tig);
  }
}

// Stages groups [c0, c0 + cn) of rows [m0, m0 + rows) in fragment order; rows past the end are
// zero codes and zero scales (computed, never stored). The caller's barrier makes them visible.
// q8: the fragments of an 8-row tile (lane 4 r + tig: the 8 bytes at 8 tig of row r) are those
// rows' 32 codes of the group in order, so the codes are copied as they are, 16 bytes at a time
// by cp.async (xq rows start on 16 bytes: kp is a multiple of 32 and every xq buffer is aligned,
// device_calls.cpp checks a caller's); a copy per fragment cost ~35 instructions a fragment.
template <tb_prec P, int MT, int kRW>
__device__ __forceinline__ void stage_mma(const Params& p, MmaStage<MT>& s, int64_t m0, int rows, int c0,
                                          int cn) {
  constexpr int kBlock = kThreads * kRW;
  const int64_t kp = static_cast<int64_t>(p.ngroups) * 32;
  if constexpr (P == TB_PREC_Q8) {
    for (int i = threadIdx.x; i < cn * MT * 2; i += kBlock) {
      const int half = i & 1, r = (i >> 1) % MT, gl = (i >> 1) / MT;
      const int8_t* src = p.xq + (m0 + (r < rows ? r : 0)) * kp + (c0 + gl) * 32 + half * 16;
      cp_async16_or_zero(reinterpret_cast<uint8_t*>(&s.b[gl][r >> 3][(r & 7) * 4]) + half * 16, src, r < rows);
    }
    cp_async_commit();
  } else {
    stage_fragments<P, MT, kRW>(p, s, m0, rows, c0, cn);
  }
  for (int i = threadIdx.x; i < cn * MT; i += kBlock) {
    const int gl = i / MT, r = i % MT;
    s.xd[gl][r] = r < rows ? __ldg(p.xd + (m0 + r) * p.ngroups + c0 + gl) : 0.0f;
  }
  if constexpr (P == TB_PREC_Q8) cp_async_wait<0>();
}

// Element e = 4h + i of an 8-row tile's accumulators: column 16h + gid + 8 * (i >> 1) of the
// strip, row tig * 2 + (i & 1) of the tile (the mma's D fragment).
// The one-slice form and the tiles of 8 and 16 rows take ptxas's own register choice (a bound of
// even 1 changes it: kMmaRowsMinBlocks).
// kRW warps share a strip, each taking MT / kRW of the rows. kSmemFold (every-slice form only):
// the fold's sums in dynamic shared memory (kMmaRowsFoldBytes), and every 8-row tile of the row
// tile computed, the rows past M being zero codes and scales never stored (a warp-uniform test
// per tile cost a compare, a branch and a warp sync before every mma pair). kBiased: the mma's accumulators
// start at the bits of 1.5 * 2^23, so float(isum) is one FADD (three float-step instructions per
// element); otherwise they start at 0 and the bias is an integer add first (four). kLean: slice
// bounds from the host's terms (slice_lo) and the packed NaN test of the scales (tile_operands).
template <tb_prec P, int MT, bool kAll, int kRW, bool kBiased, bool kLean, bool kSmemFold>
__device__ __forceinline__ void gemm_mma_rows(const Params& p) {
  static_assert(!kSmemFold || kAll, "the shared-memory fold is the every-slice kernel's");
  constexpr int kJ = MT / 8 / kRW, kDepth = kMmaDepth<MT>;
  // With one warp per strip the warp's rows start at tile 0, as a constant.
  const int warp = kRW == 1 ? static_cast<int>(threadIdx.x >> 5) : static_cast<int>(threadIdx.x >> 5) % kStripsPerBlock;
  const int lane = threadIdx.x & 31;
  const int j0 = kRW == 1 ? 0 : static_cast<int>(threadIdx.x >> 5) / kStripsPerBlock * kJ;  // this warp's 8-row tiles
  const int gid = lane >> 2, tig = lane & 3;
  const int64_t b = blockIdx.x;  // row tile fastest: the tiles of one strip run together (L2 reuse)
  const int mt = static_cast<int>(b % p.row_tiles);
  const int64_t rest = b / p.row_tiles;
  const int sb = static_cast<int>(rest % p.strip_blocks);
  const int z_first = static_cast<int>(rest / p.strip_blocks) * p.slices_per_block;
  const int z_last = min(p.nsplit, z_first + p.slices_per_block);
  const int strip = sb * kStripsPerBlock + warp;
  const bool active = strip < p.nstrips;
  const int64_t m0 = static_cast<int64_t>(mt) * MT;
  const int rows = static_cast<int>(min(static_cast<int64_t>(MT), p.m - m0));
  const auto first_group = [&](int z) {
    return kLean ? slice_lo(p, z) : static_cast<int>(twinbit::slice_begin(p.ngroups, p.nsplit, z));
  };
  const auto end_group = [&](int z) {
    return kLean ? slice_lo(p, z + 1) : static_cast<int>(twinbit::slice_end(p.ngroups, p.nsplit, z));
  };
  const int gbeg = first_group(z_first);
  const int gend = end_group(z_last - 1);

  __shared__ __align__(16) MmaStage<MT> stage;
  __shared__ unsigned is_last;
  constexpr bool kRegFold = kAll && !kSmemFold;
  extern __shared__ float4 fold_smem[];
  float4* fold = fold_smem + static_cast<int>(threadIdx.x >> 5) * kJ * 2 * 32 + lane;  // (j, h) at (2j + h) * 32
  float acc[kJ][8], out[kRegFold ? kJ : 1][8];
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[j][e] = 0.0f;
  }
#pragma unroll
  for (int j = 0; j < (kRegFold ? kJ : 1); ++j) {
#pragma unroll
    for (int e = 0; e < 8; ++e) out[j][e] = 0.0f;
  }
  if constexpr (kSmemFold) {
#pragma unroll
    for (int i = 0; i < kJ * 2; ++i) fold[i * 32] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  int z = z_first;
  int z_end = end_group(z);
  constexpr int kTileBytes = P == TB_PREC_Q8 ? 1024 : 512;
  const int64_t tile0 = static_cast<int64_t>(active ? strip : 0) * p.ngroups;
  const int lane_off = lane_code_offset<P>(gid, tig);

  for (int c0 = gbeg; c0 < gend; c0 += kChunkGroups) {
    const int cn = min(kChunkGroups, gend - c0);
    const uint8_t* codes = p.codes + (tile0 + c0) * kTileBytes;
    const uint16_t* scales = p.scales + (tile0 + c0) * 32;
    MmaTile ring[kDepth];
#pragma unroll
    for (int i = 0; i < kDepth; ++i) {
      if (active && i < cn) ring[i] = load_mma_tile_lane<P, false, true>(codes + i * kTileBytes + lane_off, scales + i * 32 + gid);
    }
    __syncthreads();
    stage_mma<P, MT, kRW>(p, stage, m0, rows, c0, cn);
    __syncthreads();
    if (active) {
#pragma unroll 1
      for (int g0 = 0; g0 < cn; g0 += kDepth) {
#pragma unroll
        for (int i = 0; i < kDepth; ++i) {
          const int gl = g0 + i;
          if (gl < cn) {
            const MmaTile t = ring[i];  // later groups' loads stay in flight while this one runs
            if (gl + kDepth < cn) {
              ring[i] = load_mma_tile_lane<P, false, true>(codes + (gl + kDepth) * kTileBytes + lane_off, scales + (gl + kDepth) * 32 + gid);
            }
            uint32_t a[2][4];
            float ws[4];
            tile_operands<P, kLean>(t, a, ws);
#pragma unroll
            for (int j = 0; j < kJ; ++j) {
              if (kSmemFold || (j0 + j) * 8 < rows) {  // warp-uniform: empty 8-row tiles are skipped
                const uint2 bf = stage.b[gl][j0 + j][lane];
                const float2 xd = *reinterpret_cast<const float2*>(&stage.xd[gl][(j0 + j) * 8 + tig * 2]);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  int d[4];
                  // Ordered (volatile): free interleaving measured small tiles faster (lm_head M = 2,
                  // row tile 8: 139 -> 117 us) but the tiles the plan picks slower (lm_head M = 512:
                  // 2466 -> 2760 us, M = 128: 693 -> 761; gate_up M = 512: 220 -> 243).
                  mma_s8(a[h], bf, d, kBiased ? kFloatBias : 0);
#pragma unroll
                  for (int e = 0; e < 4; ++e) {
                    const float tg = __fmul_rn(ws[2 * h + (e >> 1)], (e & 1) ? xd.y : xd.x);
                    const float pf = kBiased ? biased_float(d[e]) : exact_float(d[e]);
                    acc[j][4 * h + e] = __fmaf_rn(pf, tg, acc[j][4 * h + e]);  // ascending g
                  }
                }
              }
            }
            if constexpr (kAll) {
              if (c0 + gl + 1 == z_end) {  // slice z complete: its turn in the fold
#pragma unroll
                for (int j = 0; j < kJ; ++j) {
                  if constexpr (kSmemFold) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                      float4 o = fold[(2 * j + h) * 32];
                      o.x = __fadd_rn(o.x, acc[j][4 * h]);
                      o.y = __fadd_rn(o.y, acc[j][4 * h + 1]);
                      o.z = __fadd_rn(o.z, acc[j][4 * h + 2]);
                      o.w = __fadd_rn(o.w, acc[j][4 * h + 3]);
                      fold[(2 * j + h) * 32] = o;
                    }
                  }
#pragma unroll
                  for (int e = 0; e < 8; ++e) {
                    if constexpr (!kSmemFold) out[j][e] = __fadd_rn(out[j][e], acc[j][e]);
                    acc[j][e] = 0.0f;
                  }
                }
                ++z;
                if (z < z_last) z_end = end_group(z);
              }
            }
          }
        }
      }
    }
  }

  // Where element (j, e) lands: column strip * 32 + 16h + gid + 8 * (i >> 1), row m0 + 8j + 2 tig + (i & 1).
  const auto col_of = [&](int e) { return strip * 32 + 16 * (e >> 2) + gid + 8 * ((e & 3) >> 1); };
  const auto row_of = [&](int j, int e) { return (j0 + j) * 8 + tig * 2 + (e & 1); };
  if constexpr (kAll) {  // out = +0 + a[0] + ... + a[nsplit-1]
    if (active) {
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        if constexpr (kSmemFold) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float4 o = fold[(2 * j + h) * 32];
            out[0][4 * h] = o.x;
            out[0][4 * h + 1] = o.y;
            out[0][4 * h + 2] = o.z;
            out[0][4 * h + 3] = o.w;
          }
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float v = kSmemFold ? out[0][e] : out[j][e];
          if (row_of(j, e) < rows && col_of(e) < p.n) p.y[(m0 + row_of(j, e)) * p.n + col_of(e)] = v;
        }
      }
    }
    return;
  } else {
    if (p.nsplit == 1) {  // the fold of a single slice: out = +0 + a[0]
      if (active) {
#pragma unroll
        for (int j = 0; j < kJ; ++j) {
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            if (row_of(j, e) < rows && col_of(e) < p.n) {
              p.y[(m0 + row_of(j, e)) * p.n + col_of(e)] = __fadd_rn(0.0f, acc[j][e]);
            }
          }
        }
      }
      return;
    }
    if (active) {
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          if (row_of(j, e) < rows) {
            p.partial[(static_cast<int64_t>(z_first) * p.m + m0 + row_of(j, e)) * p.np + col_of(e)] = acc[j][e];
          }
        }
      }
    }
    // Last-block detection as in a grid barrier (see gemm_slice_kernel.cuh): partial stores, block
    // barrier, device-scope fence, count; the last block acquires before it reads.
    __syncthreads();
    const int64_t counter = static_cast<int64_t>(sb) * p.row_tiles + mt;
    if (threadIdx.x == 0) {
      __threadfence();
      is_last = atomicAdd(&p.counters[counter], 1u) + 1u == static_cast<unsigned>(p.nsplit);
      if (is_last) __threadfence();
    }
    __syncthreads();
    if (!is_last) return;
    constexpr int kFold = 16;  // partial reads in flight per folding thread
    const int64_t zstride = p.m * p.np;
    const int fcol = sb * kThreads + (kRW == 1 ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % kThreads);
    if (fcol < p.n) {  // kRW threads per column take every kRW-th row
#pragma unroll 1
      for (int r = kRW == 1 ? 0 : static_cast<int>(threadIdx.x) / kThreads; r < rows; r += kRW) {
        const float* src = p.partial + (m0 + r) * p.np + fcol;
        float sum = 0.0f;  // ascending z, each batch's loads in flight together
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
}

template <tb_prec P, int MT, bool kAll, int kRW = kRowWarps<MT>, bool kBiased = kMmaRowsBiased,
          bool kLean = kMmaRowsLean<P, MT>, bool kSmemFold = kAll && kMmaRowsSmemFold<MT>>
__global__ void __launch_bounds__(kThreads * kRW) gemm_mma_kernel(const Params p) {
  gemm_mma_rows<P, MT, kAll, kRW, kBiased, kLean, kSmemFold>(p);
}

// The same kernel with its registers held to kMinBlocks blocks per SM.
template <tb_prec P, int MT, bool kAll, int kRW, bool kBiased, int kMinBlocks, bool kLean = kMmaRowsLean<P, MT>,
          bool kSmemFold = kAll && kMmaRowsSmemFold<MT>>
__global__ void __launch_bounds__(kThreads * kRW, kMinBlocks) gemm_mma_kernel_bounded(const Params p) {
  gemm_mma_rows<P, MT, kAll, kRW, kBiased, kLean, kSmemFold>(p);
}

// The kernel of these choices: held to kMinBlocks blocks per SM, or (0) ptxas's registers (a bound
// of even 1 changes ptxas's choice, so the free form has none).
template <tb_prec P, int MT, bool kAll, int kRW, bool kBiased, int kMinBlocks, bool kLean = kMmaRowsLean<P, MT>,
          bool kSmemFold = kAll && kMmaRowsSmemFold<MT>>
KernelFn mma_rows_kernel() {
  if constexpr (kMinBlocks > 0) {
    return gemm_mma_kernel_bounded<P, MT, kAll, kRW, kBiased, kMinBlocks, kLean, kSmemFold>;
  } else {
    return gemm_mma_kernel<P, MT, kAll, kRW, kBiased, kLean, kSmemFold>;
  }
}

}  // namespace twinbit::cuda::detail
