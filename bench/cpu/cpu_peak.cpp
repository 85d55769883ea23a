// The compute floor of the CPU benchmark: this architecture's FMA-peak loop (arch/fma_loop.h)
// run on the benchmark's thread count, the median of a few samples.
#include "bench/cpu/cpu_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "bench/cpu/arch/fma_loop.h"

namespace twinbit::bench {

double fma_peak_per_second(int threads, int samples) {
  const FmaLoop loop = best_fma_loop();
  if (!loop.run) return 0.0;
  const int64_t iters = 20'000'000;  // ~0.1 s per thread at 2 FMA/cycle
  tbb::task_arena arena(threads);
  std::vector<double> rates;
  std::atomic<float> sink{0};
  for (int s = 0; s < samples; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(0, threads, [&](int t) {
        const float v = loop.run(iters, static_cast<float>(t));
        sink.store(v, std::memory_order_relaxed);
      }, tbb::static_partitioner());
    });
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(threads) * iters * 16 * loop.lanes / sec);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];  // median
}

}  // namespace twinbit::bench
