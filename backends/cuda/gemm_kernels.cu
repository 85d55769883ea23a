// Kernels of gemm_kernels.h. Layout comments use (dims) in the order of memory, outermost first.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_numerics.cuh"
#include "backends/cuda/gemm_kernels.h"
#include "core/numerics.h"

namespace twinbit::cuda {
namespace {

constexpr int kStripsPerBlock = 4;                 // warps per block, one strip each
constexpr int kThreads = kStripsPerBlock * 32;
constexpr int kChunkGroups = 16;                   // activation groups staged per pass
constexpr int kRowTile = 8;                        // rows per block when M > 1
constexpr int kRowTileLarge = 16;                  // a measured alternative (GemmLaunch::row_tile)
constexpr float kQ8Bias = 8388736.0f;              // 2^23 + 128: (2^23 + (code ^ 0x80)) - bias
constexpr float kQ4Bias = 8388616.0f;              // 2^23 + 8:   (2^23 + nibble) - bias
// Partial reads in flight per folding thread: 32 in the merged decode kernel (small shapes with
// many slices, where each batch is one L2 round trip on the critical path), 16 elsewhere
// (ptxas: 54-64 vs 40-48 registers at one row; lm_head's 4 slices need no more).
template <bool kMerge>
constexpr int kFoldBatch = kMerge ? 32 : 16;

enum class SliceRun { kOne, kMerged, kAll };  // slices per block (gemm_kernel)

struct Params {
  const uint8_t* codes;     // (np/32, ngroups, 32 cols, 32 k) int8 | (.., 32 cols, 16 bytes) q4
  const uint16_t* scales;   // (np/32, ngroups, 32 cols) fp16 bits
  const float* x;           // F32: (m, kp)
  const int8_t* xq;         // I8: (m, kp)
  const float* xd;          // I8: (m, ngroups)
  float* y;                 // (m, n)
  float* partial;           // (nsplit, m, np)
  unsigned* counters;       // (strip_blocks, row_tiles)
  int64_t m;
  int n, np, ngroups, nsplit, nstrips, strip_blocks, row_tiles;
  int slices_per_block;     // consecutive slices one block runs (fills the GPU in one wave)
};

// One lane's share of one (strip, group) tile: its column's codes and scale.
struct Tile {
  uint4 lo, hi;   // q8: 32 code bytes (k = 0..15 in lo, 16..31 in hi); q4: 16 packed bytes in lo
  uint16_t scale;
};

template <tb_prec P>
__device__ __forceinline__ Tile load_tile(const uint8_t* codes, const uint16_t* scales,
                                          int64_t tile, int lane) {
  Tile t;
  if constexpr (P == TB_PREC_Q8) {
    const uint4* src = reinterpret_cast<const uint4*>(codes + tile * 1024 + lane * 32);
    t.lo = __ldg(src);
    t.hi = __ldg(src + 1);
  } else {
    t.lo = __ldg(reinterpret_cast<const uint4*>(codes + tile * 512 + lane * 16));
    t.hi = make_uint4(0, 0, 0, 0);
  }
  t.scale = __ldg(scales + tile * 32 + lane);
  return t;
}
template <tb_prec P>
__device__ __forceinline__ Tile load_tile(const Params& p, int64_t tile, int lane) {
  return load_tile<P>(p.codes, p.scales, tile, lane);
}

// A lane's position in a strip (its column of tile 0 of a run of groups): the hot loops then load
// group g at a 32-bit offset (one wide multiply-add) instead of recomputing 64-bit addresses.
struct TileCursor {
  const uint8_t* codes;
  const uint16_t* scales;
};
template <tb_prec P>
__device__ __forceinline__ TileCursor tile_cursor(const uint8_t* codes, const uint16_t* scales,
                                                  int64_t tile, int lane) {
  constexpr int kTileBytes = P == TB_PREC_Q8 ? 1024 : 512;
  return {codes + tile * kTileBytes + lane * (kTileBytes / 32), scales + tile * 32 + lane};
}
template <tb_prec P>
__device__ __forceinline__ Tile load_tile_at(const TileCursor& c, int g) {
  constexpr int kTileBytes = P == TB_PREC_Q8 ? 1024 : 512;
  Tile t;
  const uint4* src = reinterpret_cast<const uint4*>(c.codes + g * kTileBytes);
  t.lo = __ldg(src);
  t.hi = P == TB_PREC_Q8 ? __ldg(src + 1) : make_uint4(0, 0, 0, 0);
  t.scale = __ldg(c.scales + g * 32);
  return t;
}

// 2^23 + (byte J of w) as a float: one byte permute builds the bits 0x4B0000bb.
template <int J>
__device__ __forceinline__ float biased(uint32_t w) {
  return __uint_as_float(__byte_perm(w, 0x4B00u, 0x5440u | J));
}

// Codes k = 4i .. 4i+3 of a tile as exact floats. The permute + exact subtraction costs two
// full-rate instructions per weight; I2F is a quarter-rate conversion (kept as a measured option).
template <tb_prec P, bool kI2F, int I>
__device__ __forceinline__ float4 codes4_to_float(const Tile& t) {
  const uint32_t words[8] = {t.lo.x, t.lo.y, t.lo.z, t.lo.w, t.hi.x, t.hi.y, t.hi.z, t.hi.w};
  if constexpr (P == TB_PREC_Q8) {
    const uint32_t w = words[I];
    if constexpr (kI2F) {
      return make_float4(__int2float_rn(static_cast<int8_t>(w)), __int2float_rn(static_cast<int8_t>(w >> 8)),
                         __int2float_rn(static_cast<int8_t>(w >> 16)), __int2float_rn(static_cast<int8_t>(w >> 24)));
    }
    const uint32_t u = w ^ 0x80808080u;  // signed code -> code + 128
    return make_float4(__fsub_rn(biased<0>(u), kQ8Bias), __fsub_rn(biased<1>(u), kQ8Bias),
                       __fsub_rn(biased<2>(u), kQ8Bias), __fsub_rn(biased<3>(u), kQ8Bias));
  } else {
    // byte j of the 16: low nibble is k = j, high nibble k = j + 16
    const uint32_t w = words[I % 4];
    const uint32_t u = (I < 4 ? w : w >> 4) & 0x0F0F0F0Fu;
    return make_float4(__fsub_rn(biased<0>(u), kQ4Bias), __fsub_rn(biased<1>(u), kQ4Bias),
                       __fsub_rn(biased<2>(u), kQ4Bias), __fsub_rn(biased<3>(u), kQ4Bias));
  }
}

template <tb_prec P, bool kI2F, int I = 0>
__device__ __forceinline__ void codes_to_float(const Tile& t, float (&w)[32]) {
  const float4 f = codes4_to_float<P, kI2F, I>(t);
  w[4 * I + 0] = f.x;
  w[4 * I + 1] = f.y;
  w[4 * I + 2] = f.z;
  w[4 * I + 3] = f.w;
  if constexpr (I + 1 < 8) codes_to_float<P, kI2F, I + 1>(t, w);
}

// One row's group dot with codes converted four at a time (decode: nothing to reuse, so the
// 32 floats are never all live at once).
template <tb_prec P, bool kI2F, int I = 0>
__device__ __forceinline__ float group_dot_streamed(const Tile& t, const float4* xr, float dot) {
  const float4 f = codes4_to_float<P, kI2F, I>(t);
  const float4 v = xr[I];
  dot = __fmaf_rn(f.x, v.x, dot);
  dot = __fmaf_rn(f.y, v.y, dot);
  dot = __fmaf_rn(f.z, v.z, dot);
  dot = __fmaf_rn(f.w, v.w, dot);
  if constexpr (I + 1 < 8) return group_dot_streamed<P, kI2F, I + 1>(t, xr, dot);
  return dot;
}

// The 32 codes of a tile as int8 lanes of 8 words (k = 4i..4i+3 in word i), for dp4a.
template <tb_prec P>
__device__ __forceinline__ void codes_to_i8x4(const Tile& t, int (&w)[8]) {
  if constexpr (P == TB_PREC_Q8) {
    w[0] = t.lo.x; w[1] = t.lo.y; w[2] = t.lo.z; w[3] = t.lo.w;
    w[4] = t.hi.x; w[5] = t.hi.y; w[6] = t.hi.z; w[7] = t.hi.w;
  } else {
    const uint32_t words[4] = {t.lo.x, t.lo.y, t.lo.z, t.lo.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // nibble u in [0, 15] -> int8 u - 8, per byte without carries
      const uint32_t lo = words[i] & 0x0F0F0F0Fu, hi = (words[i] >> 4) & 0x0F0F0F0Fu;
      w[i] = static_cast<int>((lo + 0x78787878u) ^ 0x80808080u);
      w[4 + i] = static_cast<int>((hi + 0x78787878u) ^ 0x80808080u);
    }
  }
}

// dot after the four fmas of k = 4q .. 4q+3 in order: a quarter of a group's sequential chain.
__device__ __forceinline__ float fma4(const float (&w)[32], int q, float4 v, float dot) {
  dot = __fmaf_rn(w[4 * q + 0], v.x, dot);
  dot = __fmaf_rn(w[4 * q + 1], v.y, dot);
  dot = __fmaf_rn(w[4 * q + 2], v.z, dot);
  return __fmaf_rn(w[4 * q + 3], v.w, dot);
}

// The exact int32 dot of one group: 32 int8 codes against 32 int8 activations (two int4 of
// shared memory), |sum| <= 32 * 127 * 127.
__device__ __forceinline__ int group_dot_i8(const int (&w)[8], const int4* xr) {
  const int4 x0 = xr[0], x1 = xr[1];
  int isum = 0;
  isum = __dp4a(w[0], x0.x, isum);
  isum = __dp4a(w[1], x0.y, isum);
  isum = __dp4a(w[2], x0.z, isum);
  isum = __dp4a(w[3], x0.w, isum);
  isum = __dp4a(w[4], x1.x, isum);
  isum = __dp4a(w[5], x1.y, isum);
  isum = __dp4a(w[6], x1.z, isum);
  isum = __dp4a(w[7], x1.w, isum);
  return isum;
}

// Shared staging of one slice chunk's activations, for MT rows (only the mode's own arrays take
// space: shared memory per block bounds the blocks per SM at MT = 16).
template <tb_act_mode A, int MT>
struct XStage {
  static constexpr bool kF32 = A == TB_ACT_F32;
  float x[MT][kF32 ? kChunkGroups * 32 : 4];   // F32: (MT, chunk groups * 32)
  int xq[MT][kF32 ? 4 : kChunkGroups * 8];     // I8: (MT, chunk groups * 8 words of 4 codes)
  float xd[MT][kF32 ? 1 : kChunkGroups];       // I8: (MT, chunk groups)
};

template <tb_act_mode A, int MT>
__device__ __forceinline__ void stage_chunk(const Params& p, XStage<A, MT>& s, int64_t m0, int rows,
                                            int c0, int cn) {
  if constexpr (A == TB_ACT_F32) {
    const int per_row = cn * 8;  // float4 units
    for (int i = threadIdx.x; i < rows * per_row; i += kThreads) {
      const int r = i / per_row, q = i % per_row;
      const float4* src = reinterpret_cast<const float4*>(p.x + (m0 + r) * (p.ngroups * 32) + c0 * 32);
      reinterpret_cast<float4*>(s.x[r])[q] = __ldg(src + q);
    }
  } else {
    const int per_row = cn * 2;  // int4 units of 16 codes
    for (int i = threadIdx.x; i < rows * per_row; i += kThreads) {
      const int r = i / per_row, q = i % per_row;
      const int4* src = reinterpret_cast<const int4*>(p.xq + (m0 + r) * (p.ngroups * 32) + c0 * 32);
      reinterpret_cast<int4*>(s.xq[r])[q] = __ldg(src + q);
    }
    for (int i = threadIdx.x; i < rows * cn; i += kThreads) {
      const int r = i / cn, g = i % cn;
      s.xd[r][g] = __ldg(p.xd + (m0 + r) * p.ngroups + c0 + g);
    }
  }
}

// Adds one group of one tile to the slice accumulators a[r] of the rows of the tile.
// kRowsInner (mode F32, MT > 1): the k loop outside and the rows inside, so the MT independent
// fma chains advance together (each chain's next fma is MT instructions later, past the fma
// latency); otherwise one row's 32-fma chain after the other.
template <tb_prec P, tb_act_mode A, int MT, bool kI2F, bool kRowsInner>
__device__ __forceinline__ void accumulate_group(const Tile& t, const XStage<A, MT>& s, int gl,
                                                 int rows, float (&a)[MT]) {
  const float ws = scale_to_float(t.scale);
  if constexpr (A == TB_ACT_F32 && MT == 1) {
    const float4* xr = reinterpret_cast<const float4*>(&s.x[0][gl * 32]);  // broadcast reads
    a[0] = __fmaf_rn(group_dot_streamed<P, kI2F>(t, xr, 0.0f), ws, a[0]);
  } else if constexpr (A == TB_ACT_F32 && kRowsInner) {
    float w[32];
    codes_to_float<P, kI2F>(t, w);
    float dot[MT];  // the group dots: one sequential fma chain over k per row
#pragma unroll
    for (int r = 0; r < MT; ++r) dot[r] = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
#pragma unroll
      for (int r = 0; r < MT; ++r) {
        if (r < rows) {
          dot[r] = fma4(w, q, reinterpret_cast<const float4*>(&s.x[r][gl * 32])[q], dot[r]);  // broadcast
        }
      }
    }
#pragma unroll
    for (int r = 0; r < MT; ++r) {
      if (r < rows) a[r] = __fmaf_rn(dot[r], ws, a[r]);
    }
  } else if constexpr (A == TB_ACT_F32) {
    float w[32];
    codes_to_float<P, kI2F>(t, w);
#pragma unroll
    for (int r = 0; r < MT; ++r) {
      if (r < rows) {
        const float4* xr = reinterpret_cast<const float4*>(&s.x[r][gl * 32]);  // broadcast reads
        float dot = 0.0f;  // the group dot: one sequential fma chain over k
#pragma unroll
        for (int q = 0; q < 8; ++q) dot = fma4(w, q, xr[q], dot);
        a[r] = __fmaf_rn(dot, ws, a[r]);
      }
    }
  } else {
    int w[8];
    codes_to_i8x4<P>(t, w);
#pragma unroll
    for (int r = 0; r < MT; ++r) {
      if (r < rows) {
        const int isum = group_dot_i8(w, reinterpret_cast<const int4*>(&s.xq[r][gl * 8]));
        const float t_g = __fmul_rn(ws, s.xd[r][gl]);
        a[r] = __fmaf_rn(__int2float_rn(isum), t_g, a[r]);
      }
    }
  }
}

// Two columns per lane (prefill, kCols = 2): the group of two strips, lane l owning column l of
// each. Every activation read from shared memory then feeds two fma chains instead of one (the
// MT > 1 kernels are bound by shared-memory issue, ncu: MIO stalls first).
template <tb_prec P, tb_act_mode A, int MT, bool kI2F>
__device__ __forceinline__ void accumulate_group2(const Tile (&t)[2], const XStage<A, MT>& s, int gl,
                                                  int rows, float (&a)[2][MT]) {
  const float ws0 = scale_to_float(t[0].scale), ws1 = scale_to_float(t[1].scale);
  if constexpr (A == TB_ACT_F32) {
    float w0[32], w1[32];
    codes_to_float<P, kI2F>(t[0], w0);
    codes_to_float<P, kI2F>(t[1], w1);
#pragma unroll
    for (int r = 0; r < MT; ++r) {
      if (r < rows) {
        const float4* xr = reinterpret_cast<const float4*>(&s.x[r][gl * 32]);  // broadcast reads
        float d0 = 0.0f, d1 = 0.0f;  // the group dots: one sequential fma chain over k each
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const float4 v = xr[q];  // one shared-memory read, two chains
          d0 = fma4(w0, q, v, d0);
          d1 = fma4(w1, q, v, d1);
        }
        a[0][r] = __fmaf_rn(d0, ws0, a[0][r]);
        a[1][r] = __fmaf_rn(d1, ws1, a[1][r]);
      }
    }
  } else {
    int w0[8], w1[8];
    codes_to_i8x4<P>(t[0], w0);
    codes_to_i8x4<P>(t[1], w1);
#pragma unroll
    for (int r = 0; r < MT; ++r) {
      if (r < rows) {
        const int4* xr = reinterpret_cast<const int4*>(&s.xq[r][gl * 8]);
        const int4 x0 = xr[0], x1 = xr[1];
        const int xs[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
        int i0 = 0, i1 = 0;  // exact: |isum| <= 32 * 127 * 127
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          i0 = __dp4a(w0[i], xs[i], i0);
          i1 = __dp4a(w1[i], xs[i], i1);
        }
        const float xd = s.xd[r][gl];
        a[0][r] = __fmaf_rn(__int2float_rn(i0), __fmul_rn(ws0, xd), a[0][r]);
        a[1][r] = __fmaf_rn(__int2float_rn(i1), __fmul_rn(ws1, xd), a[1][r]);
      }
    }
  }
}

// kRun: how many slices a block runs. kOne: one, its partial stored at the end. kMerged (decode of
// small shapes): several consecutive ones, each partial stored as its last group completes.
// kAll (prefill): every slice of its strips and row tile in ascending z, folded in registers as
// each completes (out = out + a) - the contract's fold, with no partials and no counter at all.
// kDepth: weight tiles in flight per warp ahead of the one being computed (a register ring;
// decode only, where nothing else hides the DRAM latency). kCols: strips per warp (1, or 2 for
// prefill: accumulate_group2).
template <tb_prec P, tb_act_mode A, int MT, bool kI2F, SliceRun kRun, int kDepth, bool kRowsInner = false,
          int kCols = 1, int kMinBlocks = 1>
__global__ void __launch_bounds__(kThreads, kMinBlocks) gemm_kernel(const Params p) {
  constexpr bool kMerge = kRun != SliceRun::kOne;
  constexpr int kBlockStrips = kStripsPerBlock * kCols;
  constexpr int kOuts = kRun == SliceRun::kAll ? MT : 1;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
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
              if (active[c] && gl + kDepth < cn) ring[i][c] = load_tile_at<P>(cur0[c], gl + kDepth);
            }
            if constexpr (kCols == 1) {  // ascending g
              accumulate_group<P, A, MT, kI2F, kRowsInner>(cur[0], stage, gl, rows, a[0]);
            } else {
              accumulate_group2<P, A, MT, kI2F>(cur, stage, gl, rows, a);
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

// ---- decode of small shapes: the slices of a strip folded inside one thread-block cluster ----

constexpr int kClusterMax = 8;          // the portable cluster size on sm_90
constexpr int kClusterFoldBatch = 16;   // partial reads in flight per folding lane

// The parameters of the one-row decode kernels that own a strip's slices (cluster, strip blocks).
struct DecodeParams {
  const uint8_t* codes;     // as Params
  const uint16_t* scales;   // as Params
  const float* x;           // F32: (kp)
  const int8_t* xq;         // I8: (kp)
  const float* xd;          // I8: (ngroups)
  float* y;                 // (n)
  int n, ngroups, nsplit;
  // split_plan's remainder rule in 32 bits, divided once on the host (a 64-bit division is a
  // long subroutine on the GPU): warp j of a strip's Q runs slices [j * wbase + min(j, wrem), ...),
  // slice z starts at group z * gbase + min(z, grem).
  int wbase, wrem;          // nsplit / Q, nsplit % Q
  int gbase, grem;          // ngroups / nsplit, ngroups % nsplit
};

DecodeParams decode_params(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, int64_t q) {
  DecodeParams p{};
  p.codes = w.codes;
  p.scales = w.scales;
  p.x = a.x;
  p.xq = a.xq;
  p.xd = a.xd;
  p.y = a.y;
  p.n = static_cast<int>(w.n);
  p.ngroups = static_cast<int>(w.kp / 32);
  p.nsplit = static_cast<int>(nsplit);
  p.wbase = static_cast<int>(nsplit / q);
  p.wrem = static_cast<int>(nsplit % q);
  p.gbase = static_cast<int>(w.kp / 32 / nsplit);
  p.grem = static_cast<int>(w.kp / 32 % nsplit);
  return p;
}

struct ClusterParams : DecodeParams {
  int nstrips;
  int strips;               // S: strips one cluster owns (1, 2 or 4)
  int cluster;              // C: blocks per cluster (1 .. kClusterMax)
  int warps_per_strip;      // Q = 4C / S
};

// Slices [z0, z1) of a strip's Q warps: split_plan's own remainder rule applied to slices.
// Both are twinbit::slice_begin (core/numerics.h) evaluated with the host's quotients.
__device__ __forceinline__ int warp_slice_begin(const ClusterParams& p, int j) {
  return j * p.wbase + min(j, p.wrem);
}
__device__ __forceinline__ int group_of_slice(const ClusterParams& p, int z) {
  return z * p.gbase + min(z, p.grem);  // z == nsplit: ngroups
}

// Cluster warp u = rank * 4 + warp runs slice range j = u / S of strip s = u % S, so the warps
// of one block share consecutive slices (one activation staging per block).
template <tb_prec P, tb_act_mode A, int kTiles>
__global__ void __launch_bounds__(kThreads) gemm_cluster_kernel(const ClusterParams p) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rank = static_cast<int>(cluster.block_rank());
  const int first_strip = static_cast<int>(blockIdx.x / p.cluster) * p.strips;
  const int u = rank * kStripsPerBlock + warp;
  const int j = u / p.strips, s = u % p.strips;
  const int strip = first_strip + s;
  const bool active = strip < p.nstrips;
  const int zb = warp_slice_begin(p, j), ze = warp_slice_begin(p, j + 1);
  const int gb = group_of_slice(p, zb), count = group_of_slice(p, ze) - gb;  // <= kTiles

  // Every weight load of this warp is issued first (the whole share, <= kTiles tiles).
  Tile t[kTiles];
  const int64_t tile0 = static_cast<int64_t>(strip) * p.ngroups + gb;
#pragma unroll
  for (int i = 0; i < kTiles; ++i) {
    if (active && i < count) t[i] = load_tile<P>(p.codes, p.scales, tile0 + i, lane);
  }

  // The block's activations: groups [block_g0, block_g1) of its warps' consecutive slices.
  constexpr int kBlockGroups = kStripsPerBlock * kTiles;
  __shared__ __align__(16) float xs[A == TB_ACT_F32 ? kBlockGroups * 32 : 4];
  __shared__ __align__(16) int xqs[A == TB_ACT_I8 ? kBlockGroups * 8 : 4];
  __shared__ float xds[A == TB_ACT_I8 ? kBlockGroups : 1];
  __shared__ float part[kStripsPerBlock][kTiles][32];  // (warp, local slice, lane) partials
  const int j_lo = (rank * kStripsPerBlock) / p.strips;
  const int j_hi = (rank * kStripsPerBlock + kStripsPerBlock - 1) / p.strips;
  const int block_g0 = group_of_slice(p, warp_slice_begin(p, j_lo));
  const int block_gn = group_of_slice(p, warp_slice_begin(p, j_hi + 1)) - block_g0;
  if constexpr (A == TB_ACT_F32) {
    const float4* src = reinterpret_cast<const float4*>(p.x) + block_g0 * 8;
    for (int i = threadIdx.x; i < block_gn * 8; i += kThreads) reinterpret_cast<float4*>(xs)[i] = __ldg(src + i);
  } else {
    const int4* src = reinterpret_cast<const int4*>(p.xq) + block_g0 * 2;
    for (int i = threadIdx.x; i < block_gn * 2; i += kThreads) reinterpret_cast<int4*>(xqs)[i] = __ldg(src + i);
    for (int i = threadIdx.x; i < block_gn; i += kThreads) xds[i] = __ldg(p.xd + block_g0 + i);
  }
  __syncthreads();

  if (active) {
    float a = 0.0f;
    int zl = 0, z_end = group_of_slice(p, zb + 1);  // group where the current slice ends
#pragma unroll
    for (int i = 0; i < kTiles; ++i) {
      if (i < count) {
        const int gl = gb + i - block_g0;
        const float ws = scale_to_float(t[i].scale);
        if constexpr (A == TB_ACT_F32) {
          const float4* xr = reinterpret_cast<const float4*>(&xs[gl * 32]);  // broadcast reads
          a = __fmaf_rn(group_dot_streamed<P, false>(t[i], xr, 0.0f), ws, a);
        } else {
          int w[8];
          codes_to_i8x4<P>(t[i], w);
          const int isum = group_dot_i8(w, reinterpret_cast<const int4*>(&xqs[gl * 8]));
          a = __fmaf_rn(__int2float_rn(isum), __fmul_rn(ws, xds[gl]), a);
        }
        if (gb + i + 1 == z_end) {  // slice complete: its partial, and a fresh accumulator
          part[warp][zl][lane] = a;
          a = 0.0f;
          ++zl;
          z_end = group_of_slice(p, min(zb + zl + 1, p.nsplit));
        }
      }
    }
  }
  cluster.sync();  // every partial of the cluster written and visible (release / acquire)

  // Strip s is folded by block rank s % C, warp s / C: out = +0 + a[0] + ... + a[nsplit-1].
  const int fs = warp * p.cluster + rank;
  if (fs < p.strips && first_strip + fs < p.nstrips) {
    float out = 0.0f;
    int fj = 0, fzl = 0, fzn = warp_slice_begin(p, 1);  // owner warp, its local slice, its count
    const float* src = cluster.map_shared_rank(&part[fs % kStripsPerBlock][0][lane], fs / kStripsPerBlock);
    for (int z0 = 0; z0 < p.nsplit; z0 += kClusterFoldBatch) {
      float v[kClusterFoldBatch];
#pragma unroll
      for (int i = 0; i < kClusterFoldBatch; ++i) {  // all reads in flight, then the adds in order
        if (z0 + i < p.nsplit) {
          v[i] = src[fzl * 32];
          if (++fzl == fzn) {  // next owner: cluster warp (fj + 1) * S + fs
            ++fj;
            fzl = 0;
            fzn = warp_slice_begin(p, fj + 1) - warp_slice_begin(p, fj);
            const int uu = fj * p.strips + fs;
            if (fj < p.warps_per_strip) {
              src = cluster.map_shared_rank(&part[uu % kStripsPerBlock][0][lane], uu / kStripsPerBlock);
            }
          }
        }
      }
#pragma unroll
      for (int i = 0; i < kClusterFoldBatch; ++i) {
        if (z0 + i < p.nsplit) out = __fadd_rn(out, v[i]);
      }
    }
    const int col = (first_strip + fs) * 32 + lane;
    if (col < p.n) p.y[col] = out;
  }
  cluster.sync();  // no block leaves while its shared partials may still be read
}

// ---- decode: one block per strip, its slices spread over the block's warps ----

constexpr int kStripMaxWarps = 16;     // warps per block of the strip kernel (512 threads)
constexpr int kStripDepth = 4;         // weight tiles in flight per warp
constexpr int kStripFoldBatch = 16;    // shared-memory partial reads in flight per folding lane

using StripParams = DecodeParams;

// Block = one strip (32 columns), Q warps; warp j runs a contiguous range of the strip's slices
// with kStripDepth tiles in flight, reading the activations straight from global memory (one
// broadcast per load; L1 keeps them), and leaves each slice's partial in shared memory. After one
// block barrier warp 0 folds the nsplit partials in ascending z. No global partials, fence or
// counter: the critical path is the warp's DRAM round trips plus one barrier.
template <tb_prec P, tb_act_mode A>
__global__ void __launch_bounds__(kStripMaxWarps * 32) gemm_strip_kernel(const StripParams p) {
  extern __shared__ float part[];  // (nsplit, 32 lanes)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int zb = warp * p.wbase + min(warp, p.wrem);
  const int ze = zb + p.wbase + (warp < p.wrem ? 1 : 0);
  const int gb = zb * p.gbase + min(zb, p.grem);
  const int ge = ze * p.gbase + min(ze, p.grem);
  const TileCursor tc = tile_cursor<P>(p.codes, p.scales, static_cast<int64_t>(blockIdx.x) * p.ngroups, lane);
  Tile ring[kStripDepth];
#pragma unroll
  for (int i = 0; i < kStripDepth; ++i) {
    if (gb + i < ge) ring[i] = load_tile_at<P>(tc, gb + i);
  }
  float a = 0.0f;
  int z = zb;
  int z_end = (z + 1) * p.gbase + min(z + 1, p.grem);  // group where slice z ends
#pragma unroll 1
  for (int g0 = gb; g0 < ge; g0 += kStripDepth) {
#pragma unroll
    for (int i = 0; i < kStripDepth; ++i) {
      const int g = g0 + i;
      if (g < ge) {
        const Tile cur = ring[i];
        if (g + kStripDepth < ge) ring[i] = load_tile_at<P>(tc, g + kStripDepth);
        const float ws = scale_to_float(cur.scale);
        if constexpr (A == TB_ACT_F32) {
          const float4* xr = reinterpret_cast<const float4*>(p.x) + g * 8;
          a = __fmaf_rn(group_dot_streamed<P, false>(cur, xr, 0.0f), ws, a);  // ascending g
        } else {
          int w[8];
          codes_to_i8x4<P>(cur, w);
          const int isum = group_dot_i8(w, reinterpret_cast<const int4*>(p.xq) + g * 2);
          a = __fmaf_rn(__int2float_rn(isum), __fmul_rn(ws, __ldg(p.xd + g)), a);
        }
        if (g + 1 == z_end) {  // slice z complete: its partial
          part[z * 32 + lane] = a;
          a = 0.0f;
          ++z;
          z_end = (z + 1) * p.gbase + min(z + 1, p.grem);
        }
      }
    }
  }
  __syncthreads();
  if (warp == 0) {  // out = +0 + a[0] + a[1] + ... + a[nsplit-1]
    float out = 0.0f;
#pragma unroll 1
    for (int z0 = 0; z0 < p.nsplit; z0 += kStripFoldBatch) {
      const int cnt = min(kStripFoldBatch, p.nsplit - z0);
      float v[kStripFoldBatch];
#pragma unroll
      for (int j = 0; j < kStripFoldBatch; ++j) {
        if (j < cnt) v[j] = part[(z0 + j) * 32 + lane];
      }
#pragma unroll
      for (int j = 0; j < kStripFoldBatch; ++j) {
        if (j < cnt) out = __fadd_rn(out, v[j]);
      }
    }
    const int col = static_cast<int>(blockIdx.x) * 32 + lane;
    if (col < p.n) p.y[col] = out;
  }
}

using StripKernelFn = void (*)(StripParams);

StripKernelFn pick_strip_kernel(tb_prec prec, tb_act_mode mode) {
  if (mode == TB_ACT_F32) {
    return prec == TB_PREC_Q8 ? gemm_strip_kernel<TB_PREC_Q8, TB_ACT_F32> : gemm_strip_kernel<TB_PREC_Q4, TB_ACT_F32>;
  }
  return prec == TB_PREC_Q8 ? gemm_strip_kernel<TB_PREC_Q8, TB_ACT_I8> : gemm_strip_kernel<TB_PREC_Q4, TB_ACT_I8>;
}

// Warps per strip block: one per slice up to kStripMaxWarps.
int strip_warps(int64_t nsplit) { return static_cast<int>(std::min<int64_t>(nsplit, kStripMaxWarps)); }

// The strip kernel takes decode with nsplit > 1 when its partials fit the default shared memory.
bool strip_fits(int64_t nsplit) { return nsplit > 1 && nsplit * 32 * 4 <= 48 * 1024; }

Status launch_strip(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, cudaStream_t stream) {
  const int64_t ngroups = w.kp / 32, nstrips = w.np / 32;
  const int q = strip_warps(nsplit);
  // Geometry: a block per strip, every slice on a warp (q <= nsplit), partials in shared memory.
  if (!strip_fits(nsplit) || q < 1 || q > nsplit || nstrips > INT_MAX || ngroups > INT_MAX / 2) {
    return Error(TB_INTERNAL, "gemm strip launch geometry: %lld strips, %lld groups, %lld slices over "
                 "%d warps (expected 2 .. 384 slices, 1 <= warps <= slices, strips and 2 x groups "
                 "below 2^31)", static_cast<long long>(nstrips), static_cast<long long>(ngroups),
                 static_cast<long long>(nsplit), q);
  }
  const StripParams p = decode_params(w, a, nsplit, q);
  const size_t smem = static_cast<size_t>(nsplit) * 32 * sizeof(float);
  pick_strip_kernel(w.prec, a.mode)<<<static_cast<unsigned>(nstrips), q * 32, smem, stream>>>(p);
  TB_CUDA_TRY(cudaGetLastError());
  return Status();
}

using KernelFn = void (*)(Params);

template <int MT, SliceRun kRun, int kDepth>
KernelFn pick_kernel(tb_prec prec, tb_act_mode mode, CodeConvert cv, bool rows_inner = false, int cols = 1,
                     bool packed = false) {
  if constexpr (MT > 1) {
    if (cols == 2 && packed) {  // held to 168 registers: 3 blocks per SM
      if (mode == TB_ACT_F32) {
        return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_F32, MT, false, kRun, 1, false, 2, 3>
                                  : gemm_kernel<TB_PREC_Q4, TB_ACT_F32, MT, false, kRun, 1, false, 2, 3>;
      }
      return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_I8, MT, false, kRun, 1, false, 2, 3>
                                : gemm_kernel<TB_PREC_Q4, TB_ACT_I8, MT, false, kRun, 1, false, 2, 3>;
    }
    if (cols == 2) {  // two strips per warp: byte permute, rows outside
      if (mode == TB_ACT_F32) {
        return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_F32, MT, false, kRun, 1, false, 2>
                                  : gemm_kernel<TB_PREC_Q4, TB_ACT_F32, MT, false, kRun, 1, false, 2>;
      }
      return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_I8, MT, false, kRun, 1, false, 2>
                                : gemm_kernel<TB_PREC_Q4, TB_ACT_I8, MT, false, kRun, 1, false, 2>;
    }
  }
  if (mode == TB_ACT_F32) {
    if constexpr (MT > 1) {
      if (rows_inner && cv != CodeConvert::kI2F) {
        return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_F32, MT, false, kRun, kDepth, true>
                                  : gemm_kernel<TB_PREC_Q4, TB_ACT_F32, MT, false, kRun, kDepth, true>;
      }
    }
    if (prec == TB_PREC_Q8) {
      if constexpr (kDepth == 1 && kRun != SliceRun::kAll) {  // the I2F measurement switch
        if (cv == CodeConvert::kI2F) return gemm_kernel<TB_PREC_Q8, TB_ACT_F32, MT, true, kRun, 1>;
      }
      return gemm_kernel<TB_PREC_Q8, TB_ACT_F32, MT, false, kRun, kDepth>;
    }
    return gemm_kernel<TB_PREC_Q4, TB_ACT_F32, MT, false, kRun, kDepth>;
  }
  return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_I8, MT, false, kRun, kDepth>
                            : gemm_kernel<TB_PREC_Q4, TB_ACT_I8, MT, false, kRun, kDepth>;
}

// Decode kernels (one row) at prefetch depth 1 or 2; prefill kernels at depth 1. `packed`: the
// one-slice depth-1 kernel held to 40 registers, 12 blocks per SM (the default: lm_head's 4748
// blocks are then 3.0 waves instead of 3.6; 87.5 vs 99.3 us unpacked, same run).
KernelFn pick_decode_kernel(bool merge, int depth, tb_prec prec, tb_act_mode mode, CodeConvert cv,
                            bool packed = false) {
  if (packed && !merge && depth == 1 && cv != CodeConvert::kI2F) {
    constexpr SliceRun k1 = SliceRun::kOne;
    if (mode == TB_ACT_F32) {
      return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_F32, 1, false, k1, 1, false, 1, 12>
                                : gemm_kernel<TB_PREC_Q4, TB_ACT_F32, 1, false, k1, 1, false, 1, 12>;
    }
    return prec == TB_PREC_Q8 ? gemm_kernel<TB_PREC_Q8, TB_ACT_I8, 1, false, k1, 1, false, 1, 12>
                              : gemm_kernel<TB_PREC_Q4, TB_ACT_I8, 1, false, k1, 1, false, 1, 12>;
  }
  if (depth == 2 && cv != CodeConvert::kI2F) {
    return merge ? pick_kernel<1, SliceRun::kMerged, 2>(prec, mode, cv) : pick_kernel<1, SliceRun::kOne, 2>(prec, mode, cv);
  }
  return merge ? pick_kernel<1, SliceRun::kMerged, 1>(prec, mode, cv) : pick_kernel<1, SliceRun::kOne, 1>(prec, mode, cv);
}

using ClusterKernelFn = void (*)(ClusterParams);

template <int kTiles>
ClusterKernelFn pick_cluster_kernel(tb_prec prec, tb_act_mode mode) {
  if (mode == TB_ACT_F32) {
    return prec == TB_PREC_Q8 ? gemm_cluster_kernel<TB_PREC_Q8, TB_ACT_F32, kTiles>
                              : gemm_cluster_kernel<TB_PREC_Q4, TB_ACT_F32, kTiles>;
  }
  return prec == TB_PREC_Q8 ? gemm_cluster_kernel<TB_PREC_Q8, TB_ACT_I8, kTiles>
                            : gemm_cluster_kernel<TB_PREC_Q4, TB_ACT_I8, kTiles>;
}

// Blocks of `kernel` resident on the whole device at once (one "wave"), from the device's own
// occupancy answer; asked once per kernel.
template <typename Fn>
Result<int64_t> resident_blocks(Fn kernel) {
  static std::mutex mu;
  static std::map<Fn, int64_t> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(kernel); it != cache.end()) return it->second;
  int device = 0, sms = 0, per_sm = 0;
  TB_CUDA_TRY(cudaGetDevice(&device));
  TB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  const int64_t slots = std::max<int64_t>(1, static_cast<int64_t>(sms) * per_sm);
  cache.emplace(kernel, slots);
  return slots;
}

// Multiprocessors of the current device, asked once.
Result<int64_t> device_sms() {
  static std::mutex mu;
  static std::map<int, int64_t> cache;
  int device = 0;
  TB_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(device); it != cache.end()) return it->second;
  int sms = 0;
  TB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cache.emplace(device, sms);
  return static_cast<int64_t>(sms);
}

// Rows per block: 16 on vocabulary-sized outputs (more than 64 Ki columns), 8 otherwise. Measured
// on the H200 (docs/results/cuda-2026-11-29-round3.md, interleaved): lm_head M = 32 with two
// strips per warp, 16 rows won in both modes (f32 680.6 us split; i8 286.8 vs 306.2 us); every
// smaller projection lost with 16 (q/o 43.2 vs 35.3 us, down 110.3 vs 82.3 us).
int row_tile_for(int64_t m, int64_t np, int forced = 0) {
  if (m > 1 && (forced == kRowTile || forced == kRowTileLarge)) return forced;
  if (m == 1) return 1;
  return np > 65536 ? kRowTileLarge : kRowTile;
}

// The prefill schedule (M > 1), from the round-3 runs (interleaved). Two strips per warp halve the
// shared-memory reads per fma but need 150-170 registers (held at 3 blocks per SM): they pay only
// when the one-strip grid is large (lm_head f32 680.6 vs 771.1 us; q/o 35.5 vs 28.7 us, gate_up
// 102.3 vs 85.3 us). With one strip per warp a block walks every slice (register fold) when such
// blocks fill the GPU twice (gate_up f32 85.3 vs 99.9 us, i8 47.7 vs 53.6 us), and then the rows
// go inside the k loop (gate_up 82.5 vs 94.2 us); with one slice per block they stay outside (q/o
// 28.8 vs 31.0 us, down 68.1 vs 76.3 us). With two strips per warp: mode F32 keeps one slice per
// block (lm_head 680.6 vs 743.2 us), mode I8 walks every slice (306.2 vs 347.1 us).
struct PrefillPlan {
  int cols = 1;
  bool rows_inner = false, all_slices = false;
};
PrefillPlan plan_prefill(const GemmLaunch& a, int64_t nstrips, int64_t row_tiles, int64_t sms) {
  PrefillPlan pl;
  const int64_t one_strip_blocks = ceil_div(nstrips, kStripsPerBlock) * row_tiles;
  pl.cols = a.cols_per_lane > 0 ? a.cols_per_lane : (one_strip_blocks >= 8 * sms ? 2 : 1);
  const int64_t blocks = ceil_div(nstrips, kStripsPerBlock * pl.cols) * row_tiles;
  const bool automatic = pl.cols == 1 ? blocks >= 2 * sms : a.mode == TB_ACT_I8;
  pl.all_slices = a.all_slices == Toggle::kOn || (a.all_slices == Toggle::kAuto && automatic);
  const bool inner = pl.all_slices;  // rows inside the k loop paid only with the register fold
  pl.rows_inner = pl.cols == 1 && a.mode == TB_ACT_F32 &&
                  (a.rows_inner == Toggle::kOn || (a.rows_inner == Toggle::kAuto && inner));
  return pl;
}

// The cluster decode plan for one (N, K, prec, mode), or tiles == 0 when the shape does not fit
// (a warp's share would exceed 8 groups for every cluster shape).
struct ClusterPlan {
  int tiles = 0, strips = 0, cluster = 0, warps_per_strip = 0, max_groups = 0;
  int64_t blocks = 0;
  ClusterKernelFn kernel = nullptr;
};

int max_warp_groups(int64_t ngroups, int64_t nsplit, int q) {
  int worst = 0;
  for (int j = 0; j < q; ++j) {
    const int64_t z0 = slice_begin(nsplit, q, j), z1 = slice_end(nsplit, q, j);
    worst = std::max(worst, static_cast<int>(slice_begin(ngroups, nsplit, z1) -
                                             slice_begin(ngroups, nsplit, z0)));
  }
  return worst;
}

// Candidates: 1, 2 or 4 strips per cluster of 1 .. 8 blocks, each warp holding all its tiles
// (2, 4 or 8 registers-resident tiles). Cost ~ waves x (2 + groups per warp): each wave is a DRAM
// round trip plus the warp's serial group work; fewer tiles (registers) and smaller clusters win
// ties.
Result<ClusterPlan> plan_cluster(const DeviceStrips& w, tb_act_mode mode, int64_t nsplit) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int, int, int64_t>, ClusterPlan> cache;
  const auto key = std::make_tuple(w.np, w.kp, static_cast<int>(w.prec), static_cast<int>(mode), nsplit);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const int64_t ngroups = w.kp / 32, nstrips = w.np / 32;
  ClusterPlan best;
  int64_t best_cost = INT64_MAX;
  for (int tiles : {2, 4, 8}) {
    const ClusterKernelFn kernel = tiles == 2 ? pick_cluster_kernel<2>(w.prec, mode)
                                   : tiles == 4 ? pick_cluster_kernel<4>(w.prec, mode)
                                                : pick_cluster_kernel<8>(w.prec, mode);
    auto slots = resident_blocks(kernel);
    if (!slots.ok()) return slots.status();
    for (int strips : {4, 2, 1}) {
      for (int c = 1; c <= kClusterMax; ++c) {
        const int q = kStripsPerBlock * c / strips;
        if (q * strips != kStripsPerBlock * c || q > nsplit) continue;
        const int groups = max_warp_groups(ngroups, nsplit, q);
        if (groups > tiles) continue;
        const int64_t blocks = ceil_div(nstrips, strips) * c;
        const int64_t cost = ceil_div(blocks, *slots) * (2 + groups);
        if (cost < best_cost) {
          best_cost = cost;
          best = {tiles, strips, c, q, groups, blocks, kernel};
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, best);
  return best;
}

Status launch_cluster(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit,
                      const ClusterPlan& cp, cudaStream_t stream) {
  const int64_t ngroups = w.kp / 32, nstrips = w.np / 32;
  // Geometry: every strip has a cluster, every slice a warp, no warp more tiles than it holds.
  const int64_t clusters = cp.blocks / cp.cluster;
  if (cp.blocks % cp.cluster != 0 || clusters * cp.strips < nstrips || cp.warps_per_strip > nsplit ||
      cp.warps_per_strip * cp.strips != kStripsPerBlock * cp.cluster ||
      max_warp_groups(ngroups, nsplit, cp.warps_per_strip) > cp.tiles || cp.blocks > INT_MAX) {
    return Error(TB_INTERNAL, "gemm cluster launch geometry: %lld blocks in clusters of %d for "
                 "%lld strips (%d per cluster), %lld slices over %d warps per strip, %d tiles per warp",
                 static_cast<long long>(cp.blocks), cp.cluster, static_cast<long long>(nstrips),
                 cp.strips, static_cast<long long>(nsplit), cp.warps_per_strip, cp.tiles);
  }
  ClusterParams p{};
  static_cast<DecodeParams&>(p) = decode_params(w, a, nsplit, cp.warps_per_strip);
  p.nstrips = static_cast<int>(nstrips);
  p.strips = cp.strips;
  p.cluster = cp.cluster;
  p.warps_per_strip = cp.warps_per_strip;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(cp.blocks));
  cfg.blockDim = dim3(kThreads);
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(cp.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  TB_CUDA_TRY(cudaLaunchKernelEx(&cfg, cp.kernel, p));
  return Status();
}

}  // namespace

const char* gemm_unsupported_reason(int64_t /*n*/, int64_t k) {
  if (k % 32 != 0) {
    return "K % 32 != 0 is not supported by the CUDA gemm (it walks whole groups of 32 k; "
           "the runtime falls back to the CPU)";
  }
  return nullptr;
}

size_t gemm_partial_floats(const DeviceStrips& w, int64_t m) {
  const int64_t nsplit = split_plan(w.n, w.k);
  return nsplit > 1 ? static_cast<size_t>(nsplit) * static_cast<size_t>(m) * static_cast<size_t>(w.np) : 0;
}

size_t gemm_counter_count(const DeviceStrips& w, int64_t m) {
  const int64_t strip_blocks = ceil_div(w.np / 32, kStripsPerBlock);
  return static_cast<size_t>(strip_blocks * ceil_div(m, m == 1 ? 1 : kRowTile));  // any row tile
}

int64_t gemm_rows_per_launch(const DeviceStrips& w, size_t max_partial_bytes) {
  const int64_t nsplit = split_plan(w.n, w.k);
  if (nsplit == 1) return kMaxRowsPerLaunch;
  int64_t rows = static_cast<int64_t>(max_partial_bytes / (static_cast<size_t>(nsplit) * w.np * 4));
  if (rows >= kRowTileLarge) rows -= rows % kRowTileLarge;
  if (rows > kMaxRowsPerLaunch) rows = kMaxRowsPerLaunch;
  return rows < 1 ? 1 : rows;
}

Status launch_gemm(const DeviceStrips& w, const GemmLaunch& a, cudaStream_t stream) {
  if (const char* why = gemm_unsupported_reason(w.n, w.k)) {
    return Error(TB_UNIMPLEMENTED, "%s (K = %lld)", why, static_cast<long long>(w.k));
  }
  if (a.m < 1 || a.m > kMaxRowsPerLaunch) {
    return Error(TB_INVALID_ARGUMENT, "gemm launch rows m = %lld (expected 1 .. %lld per launch)",
                 static_cast<long long>(a.m), static_cast<long long>(kMaxRowsPerLaunch));
  }
  if (!w.codes || !w.scales || !a.y || (a.mode == TB_ACT_F32 ? !a.x : (!a.xq || !a.xd))) {
    return Error(TB_INTERNAL, "gemm launch: a device pointer for mode %d is null",
                 static_cast<int>(a.mode));
  }
  const int64_t ngroups = w.kp / 32, nstrips = w.np / 32;
  const int64_t contract_nsplit = split_plan(w.n, w.k);
  // A measurement override (benchmark only: other bits than the contract) may only lower the
  // slice count, so the workspace sized for the contract still holds its partials.
  if (a.nsplit_override < 0 || a.nsplit_override > contract_nsplit) {
    return Error(TB_INVALID_ARGUMENT, "gemm launch: nsplit override %lld outside 0 .. %lld",
                 static_cast<long long>(a.nsplit_override), static_cast<long long>(contract_nsplit));
  }
  const int64_t nsplit = a.nsplit_override > 0 ? a.nsplit_override : contract_nsplit;
  if (a.prefetch < 0 || a.prefetch > 2) {
    return Error(TB_INVALID_ARGUMENT, "gemm launch: prefetch depth %d (expected 0 = automatic, 1 or 2)",
                 a.prefetch);
  }
  // Tiles in flight ahead per warp at decode (slice blocks): one, in the packed kernel (a second
  // tile costs registers, so fewer blocks per SM: measured slower, docs/results round 3).
  const int depth = a.prefetch > 0 ? a.prefetch : 1;
  if (a.cluster_fold && a.m == 1 && nsplit > 1) {
    auto cp = plan_cluster(w, a.mode, nsplit);
    if (!cp.ok()) return cp.status();
    if (cp->tiles > 0) return launch_cluster(w, a, nsplit, *cp, stream);
  }
  // Decode runs a block per strip when those blocks fit one wave (one per SM) and each warp's
  // share is all in flight at once (q/o, k/v, qkv); otherwise slice blocks: gate, gate_up and
  // down have more strips or longer shares, lm_head few long slices (measured in the benchmark).
  auto decode_sms = device_sms();
  if (!decode_sms.ok()) return decode_sms.status();
  const bool strips_auto = nsplit >= 8 && nstrips <= *decode_sms &&
                           ceil_div(ngroups, static_cast<int64_t>(strip_warps(nsplit))) <= kStripDepth;
  if (a.m == 1 && strip_fits(nsplit) && !a.cluster_fold &&
      (a.decode == DecodePath::kStripBlocks || (a.decode == DecodePath::kAuto && strips_auto))) {
    return launch_strip(w, a, nsplit, stream);
  }
  const int mt = row_tile_for(a.m, w.np, a.row_tile);
  const int64_t row_tiles = ceil_div(a.m, mt);
  if (a.cols_per_lane < 0 || a.cols_per_lane > 2) {
    return Error(TB_INVALID_ARGUMENT, "gemm launch: %d columns per lane (expected 0 = automatic, 1 or 2)",
                 a.cols_per_lane);
  }
  auto sms = device_sms();
  if (!sms.ok()) return sms.status();
  const PrefillPlan pre = mt > 1 ? plan_prefill(a, nstrips, row_tiles, *sms) : PrefillPlan{};
  const int cols = pre.cols;
  const bool rows_inner = pre.rows_inner;
  const int64_t strip_blocks = ceil_div(nstrips, kStripsPerBlock * cols);
  const KernelFn single =
      mt == 1 ? pick_decode_kernel(false, depth, w.prec, a.mode, a.convert, a.packed_decode != Toggle::kOff)
      : mt == kRowTile ? pick_kernel<kRowTile, SliceRun::kOne, 1>(w.prec, a.mode, a.convert, rows_inner, cols, a.packed_prefill != Toggle::kOff)
                       : pick_kernel<kRowTileLarge, SliceRun::kOne, 1>(w.prec, a.mode, a.convert, rows_inner, cols, a.packed_prefill != Toggle::kOff);
  auto slots = resident_blocks(single);
  if (!slots.ok()) return slots.status();
  // Small decode shapes have many short slices: a block then runs several
  // consecutive slices (the kMerge kernel), so the grid fits one wave and each warp streams more
  // than one tile. When even that cannot fit one wave, there are many waves anyway and one slice
  // per block keeps the tail short. Prefill grids are large already.
  const int64_t blocks_per_slice = strip_blocks * row_tiles;
  int64_t slices_per_block = 1;
  KernelFn kernel = single;
  if (mt > 1 && pre.all_slices) {  // prefill: a block walks every slice, folding in registers
    slices_per_block = nsplit;
    kernel = mt == kRowTile ? pick_kernel<kRowTile, SliceRun::kAll, 1>(w.prec, a.mode, a.convert, rows_inner, cols, a.packed_prefill != Toggle::kOff)
                            : pick_kernel<kRowTileLarge, SliceRun::kAll, 1>(w.prec, a.mode, a.convert, rows_inner, cols, a.packed_prefill != Toggle::kOff);
  }
  // Merged slices (a measured variant, off by default): one slice per block in the packed kernel
  // was as fast or faster on every shape (lm_head 87.5 vs 98.2 us, gate_up 14.5 vs 15.4 us).
  if (a.merge_slices && slices_per_block == 1 && mt == 1 && nsplit > 1 &&
      blocks_per_slice * nsplit > *slots) {
    const KernelFn merged = pick_decode_kernel(true, depth, w.prec, a.mode, a.convert);
    auto merged_slots = resident_blocks(merged);
    if (!merged_slots.ok()) return merged_slots.status();
    const int64_t spb = ceil_div(blocks_per_slice * nsplit, *merged_slots);
    if (spb <= nsplit && blocks_per_slice * ceil_div(nsplit, spb) <= *merged_slots) {
      slices_per_block = spb;
      kernel = merged;
    }
  }
  const int64_t blocks = blocks_per_slice * ceil_div(nsplit, slices_per_block);
  // Geometry: every (strip, slice, row tile) must have a warp. Refuse rather than let a guard
  // inside the kernel hide missing work.
  const int64_t warps_needed = nstrips * nsplit * row_tiles;
  const int64_t warps_launched = blocks * (kThreads / 32) * slices_per_block * cols;
  if (blocks < 1 || blocks > INT_MAX || warps_launched < warps_needed ||
      static_cast<int64_t>(row_tiles) * mt < a.m) {
    return Error(TB_INTERNAL, "gemm launch geometry: %lld blocks x %d warps x %lld slices each for "
                 "%lld strips x %lld slices x %lld row tiles of %d (needs %lld warp-slices, grid "
                 "limit %d)", static_cast<long long>(blocks), kThreads / 32,
                 static_cast<long long>(slices_per_block), static_cast<long long>(nstrips),
                 static_cast<long long>(nsplit), static_cast<long long>(row_tiles), mt,
                 static_cast<long long>(warps_needed), INT_MAX);
  }
  if (nsplit > 1 && slices_per_block < nsplit && (!a.partial || !a.counters)) {
    return Error(TB_INTERNAL, "gemm launch: %lld slices need a partial buffer and counters",
                 static_cast<long long>(nsplit));
  }
  Params p{};
  p.codes = w.codes;
  p.scales = w.scales;
  p.x = a.x;
  p.xq = a.xq;
  p.xd = a.xd;
  p.y = a.y;
  p.partial = a.partial;
  p.counters = a.counters;
  p.m = a.m;
  p.n = static_cast<int>(w.n);
  p.np = static_cast<int>(w.np);
  p.ngroups = static_cast<int>(ngroups);
  p.nsplit = static_cast<int>(nsplit);
  p.nstrips = static_cast<int>(nstrips);
  p.strip_blocks = static_cast<int>(strip_blocks);
  p.row_tiles = static_cast<int>(row_tiles);
  p.slices_per_block = static_cast<int>(slices_per_block);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  TB_CUDA_TRY(cudaGetLastError());
  return Status();
}

}  // namespace twinbit::cuda
