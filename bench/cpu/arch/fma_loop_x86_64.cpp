// The x86-64 FMA-peak loops (fma_loop.h): AVX-512 when the CPU runs it, else AVX2+FMA. Each is
// compiled for its instruction set by a target attribute and only called when cpu_isa.h says the
// CPU runs it; this file is built on x86-64 only (bench/CMakeLists.txt).
#include "bench/cpu/arch/fma_loop.h"

#include <immintrin.h>

#include "backends/cpu/cpu_isa.h"

namespace twinbit::bench {
namespace {

// 16 independent chains: latency 4 cycles x 2 FMA ports needs >= 8 in flight; 16 leaves slack.
__attribute__((target("avx512f"))) float fma_loop_512(int64_t iters, float seed) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float fma_loop_256(int64_t iters, float seed) {
  __m256 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm256_set1_ps(seed + static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

}  // namespace

FmaLoop best_fma_loop() {
  if (cpu::isa_runnable(cpu::Isa::kAvx512bw)) return {16, fma_loop_512};
  if (cpu::isa_runnable(cpu::Isa::kFma3Avx2)) return {8, fma_loop_256};
  return {};
}

}  // namespace twinbit::bench
