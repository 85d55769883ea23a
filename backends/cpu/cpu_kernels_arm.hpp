// The aarch64 tags' exact int8 group dots (the I8 mode), one row against a tile's 32 columns.
// Both compute, per column, the int32 sum of the 32 products code * activation - exact in any
// order (|sum| <= 32 * 128 * 127 < 2^31), so both give the generic path's integers:
//   neon          SMULL/SMULL2 (int8 x int8 -> int16, exact: |product| <= 128 * 127 < 2^15)
//                 and SADALP (pairwise add-accumulate into int32 lanes);
//   neon_dotprod  SDOT (four int8 products summed into each int32 lane), two per column.
// Then ADDP folds four columns' lane sums into one vector of four column sums.
//
// SDOT is enabled for group_dot_row_sdot alone (target attribute): the tag's other code compiles
// with the baseline flags, so nothing else can use an instruction a CPU without dotprod lacks
// (cpu_isa.h). Include only from cpu_kernels_x86.hpp, on aarch64.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace twinbit::cpu::detail {

// Lane j of the result = the sum of the four lanes of a_j (exact int32).
inline int32x4_t sum_lanes4(int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3) {
  return vpaddq_s32(vpaddq_s32(a0, a1), vpaddq_s32(a2, a3));
}

// out[c] = sum_k w[c][k] * a[k], w = (32 columns, 32 k) int8 codes, a = 32 int8 codes.
inline void group_dot_row_neon(const int8_t* w, const int8_t* a, int32_t* out) {
  const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
  for (int c = 0; c < 32; c += 4) {
    int32x4_t acc[4];
    for (int j = 0; j < 4; ++j) {
      const int8x16_t w0 = vld1q_s8(w + (c + j) * 32), w1 = vld1q_s8(w + (c + j) * 32 + 16);
      int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(a0)));
      s = vpadalq_s16(s, vmull_high_s8(w0, a0));
      s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(a1)));
      acc[j] = vpadalq_s16(s, vmull_high_s8(w1, a1));
    }
    vst1q_s32(out + c, sum_lanes4(acc[0], acc[1], acc[2], acc[3]));
  }
}

__attribute__((target("arch=armv8.2-a+dotprod")))  // as arm_neon.h declares vdotq_s32
inline void group_dot_row_sdot(const int8_t* w, const int8_t* a, int32_t* out) {
  const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
  for (int c = 0; c < 32; c += 4) {
    int32x4_t acc[4];
    for (int j = 0; j < 4; ++j) {
      const int8_t* col = w + (c + j) * 32;
      acc[j] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), vld1q_s8(col), a0), vld1q_s8(col + 16), a1);
    }
    vst1q_s32(out + c, sum_lanes4(acc[0], acc[1], acc[2], acc[3]));
  }
}

}  // namespace twinbit::cpu::detail
