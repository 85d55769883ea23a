// The aarch64 FMA-peak loop (fma_loop.h): NEON FMLA on 128-bit registers, which every aarch64
// CPU has (the baseline flags compile it). This file is built on aarch64 only
// (bench/CMakeLists.txt).
#include "bench/cpu/arch/fma_loop.h"

#include <arm_neon.h>

namespace twinbit::bench {
namespace {

// 16 independent chains: FMLA latency 4 cycles x up to 4 pipes needs >= 16 in flight; 32 vector
// registers leave room for the two constants.
float fma_loop_neon(int64_t iters, float seed) {
  float32x4_t acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vdupq_n_f32(seed + static_cast<float>(i));
  const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 16; ++i) acc[i] = vfmaq_f32(b, acc[i], a);  // b + acc * a
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < 16; ++i) s = vaddq_f32(s, acc[i]);
  return vaddvq_f32(s);
}

}  // namespace

FmaLoop best_fma_loop() { return {4, fma_loop_neon}; }

}  // namespace twinbit::bench
