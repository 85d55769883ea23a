// Lanes and staging of the CUDA gemm's slice-block kernel (gemm_slice_kernel.cuh) and strip
// kernel (gemm_decode.cu): how a lane loads its column's tile, turns codes into exact floats or
// int8 words, computes a group's dot in the contract's order, and how a block stages a chunk of
// activations in shared memory. Layout comments use (dims) in the order of memory, outermost
// first. Device code only; every function is inline (internal linkage: each translation unit
// that includes this compiles its own copy, the library's and the benchmark's alike).
#pragma once

#include <cstdint>

#include "backends/cuda/device_numerics.cuh"
#include "backends/cuda/gemm_internal.h"

namespace twinbit::cuda::detail {
namespace {

constexpr float kQ8Bias = 8388736.0f;              // 2^23 + 128: (2^23 + (code ^ 0x80)) - bias
constexpr float kQ4Bias = 8388616.0f;              // 2^23 + 8:   (2^23 + nibble) - bias

// One lane's share of one (strip, group) tile: its column's codes and scale.
struct Tile {
  uint4 lo, hi;   // q8: 32 code bytes (k = 0..15 in lo, 16..31 in hi); q4: 16 packed bytes in lo
  uint16_t scale;
};

// A lane's position in a strip (its column of tile 0 of a run of groups): the hot loops then load
// group g at a 32-bit offset (one wide multiply-add) instead of recomputing 64-bit addresses.
struct TileCursor {
  const uint8_t* codes;
  const uint16_t* scales;
};
// Bytes of one (strip, group) tile's codes: 32 columns x 32 codes, one byte (q8) or a nibble (q4) each.
template <tb_prec P>
constexpr int kTileBytes = P == TB_PREC_Q8 ? 1024 : 512;

template <tb_prec P>
__device__ __forceinline__ TileCursor tile_cursor(const uint8_t* codes, const uint16_t* scales,
                                                  int64_t tile, int lane) {
  // The lanes know two packings; another precision needs its own load and convert here.
  static_assert(P == TB_PREC_Q8 || P == TB_PREC_Q4, "no lane code for this precision");
  return {codes + tile * kTileBytes<P> + lane * (kTileBytes<P> / 32), scales + tile * 32 + lane};
}
template <tb_prec P>
__device__ __forceinline__ TileCursor advanced(const TileCursor& c, int groups) {
  return {c.codes + groups * kTileBytes<P>, c.scales + groups * 32};
}
template <tb_prec P>
__device__ __forceinline__ Tile load_tile_at(const TileCursor& c, int g) {
  Tile t;
  const uint4* src = reinterpret_cast<const uint4*>(c.codes + g * kTileBytes<P>);
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

// The q4 code of the nibble at bits S .. S+3 of w (S <= 16) as an exact float, in two
// instructions and no isolating shift: one lop3 puts the nibble u into the mantissa of a float
// whose exponent makes those bits worth 1, 2 ... 8 (2^(23-S) + u), the subtraction of
// 2^(23-S) + 8 leaves u - 8 exactly. The exponent differs per S, so its bits come as a register
// operand (the asm keeps ptxas from splitting the lop3 into an AND and an OR of immediates).
template <int S>
__device__ __forceinline__ float q4_code_at(uint32_t w) {
  static_assert(S >= 0 && S <= 16, "the nibble must sit in the low 20 mantissa bits");
  const uint32_t exponent = (150u - S) << 23;  // 2^(23 - S)
  uint32_t bits;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(bits) : "r"(w), "n"(0xFu << S), "r"(exponent));  // (w & mask) | exponent
  return __fsub_rn(__uint_as_float(bits), static_cast<float>((1u << (23 - S)) + 8u));
}

// Codes k = 4i .. 4i+3 of a tile as exact floats, two full-rate instructions per weight: q8 by a
// byte permute into 2^23 + (code + 128) and an exact subtraction, q4 by q4_code_at (bits 0-15 of
// a word in place, bits 16-31 after one shift per word). kAltCodes: the measured alternatives
// (benchmark variants, bench/cuda/gemm_variants.h) - q8 by I2F, a quarter-rate conversion; q4 by
// the byte permute of each nibble once masked into its byte.
template <tb_prec P, bool kAltCodes, int I>
__device__ __forceinline__ float4 codes4_to_float(const Tile& t) {
  const uint32_t words[8] = {t.lo.x, t.lo.y, t.lo.z, t.lo.w, t.hi.x, t.hi.y, t.hi.z, t.hi.w};
  if constexpr (P == TB_PREC_Q8) {
    const uint32_t w = words[I];
    if constexpr (kAltCodes) {
      return make_float4(__int2float_rn(static_cast<int8_t>(w)), __int2float_rn(static_cast<int8_t>(w >> 8)),
                         __int2float_rn(static_cast<int8_t>(w >> 16)), __int2float_rn(static_cast<int8_t>(w >> 24)));
    }
    const uint32_t u = w ^ 0x80808080u;  // signed code -> code + 128
    return make_float4(__fsub_rn(biased<0>(u), kQ8Bias), __fsub_rn(biased<1>(u), kQ8Bias),
                       __fsub_rn(biased<2>(u), kQ8Bias), __fsub_rn(biased<3>(u), kQ8Bias));
  } else {
    // byte j of the 16: low nibble is k = j, high nibble k = j + 16
    const uint32_t w = words[I % 4];
    if constexpr (kAltCodes) {
      const uint32_t u = (I < 4 ? w : w >> 4) & 0x0F0F0F0Fu;
      return make_float4(__fsub_rn(biased<0>(u), kQ4Bias), __fsub_rn(biased<1>(u), kQ4Bias),
                         __fsub_rn(biased<2>(u), kQ4Bias), __fsub_rn(biased<3>(u), kQ4Bias));
    }
    const uint32_t up = w >> 16;  // bytes 2 and 3 where bytes 0 and 1 are: four exponents in all
    if constexpr (I < 4) {  // low nibbles: bits 0, 8 of w and of up
      return make_float4(q4_code_at<0>(w), q4_code_at<8>(w), q4_code_at<0>(up), q4_code_at<8>(up));
    } else {  // high nibbles: bits 4, 12 of w and of up
      return make_float4(q4_code_at<4>(w), q4_code_at<12>(w), q4_code_at<4>(up), q4_code_at<12>(up));
    }
  }
}

template <tb_prec P, bool kAltCodes, int I = 0>
__device__ __forceinline__ void codes_to_float(const Tile& t, float (&w)[32]) {
  const float4 f = codes4_to_float<P, kAltCodes, I>(t);
  w[4 * I + 0] = f.x;
  w[4 * I + 1] = f.y;
  w[4 * I + 2] = f.z;
  w[4 * I + 3] = f.w;
  if constexpr (I + 1 < 8) codes_to_float<P, kAltCodes, I + 1>(t, w);
}

// One row's group dot with codes converted four at a time (decode: nothing to reuse, so the
// 32 floats are never all live at once).
template <tb_prec P, bool kAltCodes, int I = 0>
__device__ __forceinline__ float group_dot_streamed(const Tile& t, const float4* xr, float dot) {
  const float4 f = codes4_to_float<P, kAltCodes, I>(t);
  const float4 v = xr[I];
  dot = __fmaf_rn(f.x, v.x, dot);
  dot = __fmaf_rn(f.y, v.y, dot);
  dot = __fmaf_rn(f.z, v.z, dot);
  dot = __fmaf_rn(f.w, v.w, dot);
  if constexpr (I + 1 < 8) return group_dot_streamed<P, kAltCodes, I + 1>(t, xr, dot);
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
template <tb_prec P, tb_act_mode A, int MT, bool kAltCodes, bool kRowsInner>
__device__ __forceinline__ void accumulate_group(const Tile& t, const XStage<A, MT>& s, int gl,
                                                 int rows, float (&a)[MT]) {
  const float ws = scale_to_float(t.scale);
  if constexpr (A == TB_ACT_F32 && MT == 1) {
    const float4* xr = reinterpret_cast<const float4*>(&s.x[0][gl * 32]);  // broadcast reads
    a[0] = __fmaf_rn(group_dot_streamed<P, kAltCodes>(t, xr, 0.0f), ws, a[0]);
  } else if constexpr (A == TB_ACT_F32 && kRowsInner) {
    float w[32];
    codes_to_float<P, kAltCodes>(t, w);
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
    codes_to_float<P, kAltCodes>(t, w);
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
template <tb_prec P, tb_act_mode A, int MT, bool kAltCodes>
__device__ __forceinline__ void accumulate_group2(const Tile (&t)[2], const XStage<A, MT>& s, int gl,
                                                  int rows, float (&a)[2][MT]) {
  const float ws0 = scale_to_float(t[0].scale), ws1 = scale_to_float(t[1].scale);
  if constexpr (A == TB_ACT_F32) {
    float w0[32], w1[32];
    codes_to_float<P, kAltCodes>(t[0], w0);
    codes_to_float<P, kAltCodes>(t[1], w1);
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

}  // namespace
}  // namespace twinbit::cuda::detail
