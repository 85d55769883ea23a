// Device pieces shared by the integer tensor-core kernels of the CUDA gemm (gemm_mma.cu: row-tile
// blocks; gemm_mma_strips.cu: strip blocks). One mma.sync.m16n8k32.s32.s8.s8.s32 computes the
// exact int32 group sums of 16 weight columns (the mma's M) x 8 activation rows (its N): the
// weights are the A operand, the activations the B operand, in the same permuted k order.
//
// Fragment mapping (PTX ISA, m16n8k32 .s8): lane = 4 gid + tig. A lane holds A rows gid and
// gid + 8 (weight columns) and B column gid (an activation row), 8 k values of each; D element
// i of a lane is (A row gid + 8 (i >> 1), B column 2 tig + (i & 1)).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include <twinbit/backend.h>
#include "backends/cuda/device_numerics.cuh"
#include "backends/cuda/gemm_internal.h"

namespace twinbit::cuda::detail {

// One lane's share of a (strip, group) tile: 8 codes of each of its 4 columns (gid + 8q) and
// their scales. q8: 8 contiguous bytes at 8 * tig of the column; q4: the 4 packed bytes at 4 * tig
// (low nibbles k = 4t..4t+3, high nibbles k = 16+4t..16+4t+3: the fragment's own order).
struct MmaTile {
  uint32_t lo[4], hi[4];  // per column q: fragment words for k = 4t.. and 16+4t..
  uint16_t scale[4];
};

// Where a lane's share starts in a tile: the codes of column gid at byte 8 tig (q8) or 4 tig (q4),
// and the scale of column gid. Its other columns are 8, 16 and 24 further (lane_column_stride
// bytes of codes apart), so a tile's loads are four at constant offsets from one address.
template <tb_prec P>
__device__ __forceinline__ int lane_code_offset(int gid, int tig) {
  return P == TB_PREC_Q8 ? gid * 32 + tig * 8 : gid * 16 + tig * 4;
}
template <tb_prec P>
constexpr int kLaneColumnStride = P == TB_PREC_Q8 ? 8 * 32 : 8 * 16;

// The lane's share of a tile from lane_codes = tile codes + lane_code_offset and lane_scales =
// tile scales + gid. kShared: the tile was staged in shared memory (plain loads); otherwise the
// global read-only path. kWords (q8): each fragment word a load of its own, so that the compiler
// can load it straight into its mma operand; one 8-byte load per column gives lo and hi in a
// register pair, while the mma wants lo of two columns, then hi of both, in four consecutive
// registers - four register moves per mma (tile_operands).
template <tb_prec P, bool kShared = false, bool kWords = false>
__device__ __forceinline__ MmaTile load_mma_tile_lane(const uint8_t* lane_codes, const uint16_t* lane_scales) {
  MmaTile t;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (P == TB_PREC_Q8 && kWords) {
      const uint32_t* at = reinterpret_cast<const uint32_t*>(lane_codes + q * kLaneColumnStride<P>);
      t.lo[q] = kShared ? at[0] : __ldg(at);
      t.hi[q] = kShared ? at[1] : __ldg(at + 1);
    } else if constexpr (P == TB_PREC_Q8) {
      const uint2* at = reinterpret_cast<const uint2*>(lane_codes + q * kLaneColumnStride<P>);
      const uint2 v = kShared ? *at : __ldg(at);
      t.lo[q] = v.x;
      t.hi[q] = v.y;
    } else {
      const uint32_t* at = reinterpret_cast<const uint32_t*>(lane_codes + q * kLaneColumnStride<P>);
      t.lo[q] = kShared ? *at : __ldg(at);  // nibbles, turned into int8 words when used (keeps the ring small)
      t.hi[q] = 0;
    }
    t.scale[q] = kShared ? lane_scales[8 * q] : __ldg(lane_scales + 8 * q);
  }
  return t;
}

template <tb_prec P, bool kShared = false>
__device__ __forceinline__ MmaTile load_mma_tile(const uint8_t* tile_codes, const uint16_t* tile_scales,
                                                 int gid, int tig) {
  return load_mma_tile_lane<P, kShared>(tile_codes + lane_code_offset<P>(gid, tig), tile_scales + gid);
}

// Asynchronous 16-byte copies global -> shared (cp.async, sm_80+; both addresses 16-byte
// aligned), their commit into a group, and the wait until at most N of this thread's groups
// are pending. The copies bypass the registers: a warp can keep many tiles in flight.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src) : "memory");
#else
  __trap();
#endif
}
// Asks the L2 cache to fetch `bytes` (a multiple of 16) from gmem_src (16-byte aligned) without
// a destination (cp.async.bulk.prefetch, sm_90; a no-op before): a later load finds them in L2.
__device__ __forceinline__ void prefetch_l2_bulk(const void* gmem_src, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(gmem_src), "r"(bytes) : "memory");
#else
  (void)gmem_src;
  (void)bytes;
#endif
}
// cp_async16 that copies the 16 bytes when `full`, else writes 16 zero bytes (src-size 0: the
// source is not read, but must still be a valid address).
__device__ __forceinline__ void cp_async16_or_zero(void* smem_dst, const void* gmem_src, bool full) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(full ? 16 : 0)
               : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Fragment words (int8 x 4) of column q: q4 nibbles u in [0, 15] become u - 8 per byte, no carries.
template <tb_prec P>
__device__ __forceinline__ void fragment_words(const MmaTile& t, int q, uint32_t& lo, uint32_t& hi) {
  if constexpr (P == TB_PREC_Q8) {
    lo = t.lo[q];
    hi = t.hi[q];
  } else {
    lo = ((t.lo[q] & 0x0F0F0F0Fu) + 0x78787878u) ^ 0x80808080u;
    hi = (((t.lo[q] >> 4) & 0x0F0F0F0Fu) + 0x78787878u) ^ 0x80808080u;
  }
}

// d = c + A (16 x 32 int8) * B (32 x 8 int8), exact int32 (c is every accumulator's start: 0, or
// kFloatBias). kOrdered (asm volatile) keeps the mmas in program order; without it the compiler
// interleaves them with the loads.
template <bool kOrdered = true>
__device__ __forceinline__ void mma_s8(const uint32_t (&a)[4], uint2 b, int (&d)[4], int c = 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TB_MMA_S8 "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
  if constexpr (kOrdered) {
    asm volatile(TB_MMA_S8 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "r"(c));
  } else {
    asm(TB_MMA_S8 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "r"(c));
  }
#undef TB_MMA_S8
#else
  // Integer mma needs sm_80; the plan never picks these kernels on an older device
  // (launch_gemm checks the compute capability).
  d[0] = d[1] = d[2] = d[3] = 0;
  __trap();
#endif
}

// A tile's A operands of the two mmas of a group (h = 0: columns 0-15, h = 1: 16-31; A row gid is
// column 16h + gid, row gid + 8 column 16h + gid + 8) and its four scales as floats.
// kLean: the hardware conversion, and scale_to_float's NaN form only when one of the four is a
// NaN (two packed half2 tests, one branch the warp almost never takes), instead of its select
// per scale (~9 instructions each).
template <tb_prec P, bool kLean>
__device__ __forceinline__ void tile_operands(const MmaTile& t, uint32_t (&a)[2][4], float (&ws)[4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    fragment_words<P>(t, 2 * h, a[h][0], a[h][2]);
    fragment_words<P>(t, 2 * h + 1, a[h][1], a[h][3]);
  }
  if constexpr (kLean) {
    const __half2 s01 = __halves2half2(__ushort_as_half(t.scale[0]), __ushort_as_half(t.scale[1]));
    const __half2 s23 = __halves2half2(__ushort_as_half(t.scale[2]), __ushort_as_half(t.scale[3]));
    const __half2_raw nan = __hmax2(__hisnan2(s01), __hisnan2(s23));  // 1.0 per half where a pair holds a NaN
    if ((nan.x | nan.y) != 0) {
#pragma unroll
      for (int q = 0; q < 4; ++q) ws[q] = scale_to_float(t.scale[q]);
    } else {
      ws[0] = __low2float(s01);
      ws[1] = __high2float(s01);
      ws[2] = __low2float(s23);
      ws[3] = __high2float(s23);
    }
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) ws[q] = scale_to_float(t.scale[q]);
  }
}

// The bits of 1.5 * 2^23: an integer |v| < 2^22 added to them is v in the float's mantissa.
constexpr int kFloatBias = 0x4B400000;

// float(isum) from an mma whose accumulators started at kFloatBias (d = kFloatBias + isum, the
// tensor core's exact integer add): one exact subtraction.
__device__ __forceinline__ float biased_float(int d) { return __fsub_rn(__int_as_float(d), 12582912.0f); }

// float(isum) exactly for |isum| < 2^22 (|isum| <= 520192 here): the integer in the mantissa of
// 1.5 * 2^23, then one exact subtraction (two full-rate instructions; I2F is quarter rate).
__device__ __forceinline__ float exact_float(int isum) {
  return biased_float(kFloatBias + isum);
}

// One lane's B fragment (8 codes of activation row `row`, group at `group_codes`) in the k order
// of its weight fragment: q8 the 8 contiguous bytes at 8 tig; q4 the bytes at 4 tig and 16 + 4 tig
// (the packed nibbles' order). Zero for a row past the tile's end.
template <tb_prec P>
__device__ __forceinline__ uint2 load_act_fragment(const int8_t* group_codes, bool valid, int tig) {
  uint2 v = make_uint2(0, 0);
  if (valid) {
    if constexpr (P == TB_PREC_Q8) {
      v = __ldg(reinterpret_cast<const uint2*>(group_codes + tig * 8));
    } else {
      v.x = __ldg(reinterpret_cast<const uint32_t*>(group_codes + tig * 4));
      v.y = __ldg(reinterpret_cast<const uint32_t*>(group_codes + 16 + tig * 4));
    }
  }
  return v;
}

}  // namespace twinbit::cuda::detail
