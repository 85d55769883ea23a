// The compute floor of the CPU benchmark: an FMA-peak loop (independent fused multiply-adds on
// registers, no memory traffic) with the benchmark's thread count. Compiled for AVX-512 by a
// target attribute and only called when the CPU runs AVX-512 (else the AVX2+FMA version).
#include "bench/cpu/cpu_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

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

double fma_peak_per_second(int threads, int samples) {
  const bool wide = cpu::isa_runnable(cpu::Isa::kAvx512bw);
  const bool avx2 = cpu::isa_runnable(cpu::Isa::kFma3Avx2);
  if (!wide && !avx2) return 0.0;
  const int lanes = wide ? 16 : 8;
  const int64_t iters = 20'000'000;  // ~0.1 s per thread at 2 FMA/cycle
  tbb::task_arena arena(threads);
  std::vector<double> rates;
  std::atomic<float> sink{0};
  for (int s = 0; s < samples; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(0, threads, [&](int t) {
        const float v = wide ? fma_loop_512(iters, static_cast<float>(t)) : fma_loop_256(iters, static_cast<float>(t));
        sink.store(v, std::memory_order_relaxed);
      }, tbb::static_partitioner());
    });
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(threads) * iters * 16 * lanes / sec);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];  // median
}

}  // namespace twinbit::bench
