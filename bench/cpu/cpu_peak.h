// The FMA peak of this CPU (fused multiply-adds per second, one per lane) with `threads`
// threads, the median of `samples` runs of an FMA loop with no memory traffic (arch/fma_loop.h).
// 0 when the CPU has no such loop (an x86-64 CPU without AVX2+FMA). The compute floor of an
// F32-mode gemm is M*N*K / this.
#pragma once

namespace twinbit::bench {
double fma_peak_per_second(int threads, int samples);
}  // namespace twinbit::bench
