// The FMA-peak loop of this CPU's architecture (one translation unit per architecture, chosen by
// bench/CMakeLists.txt, the way backends/cpu keeps x86-64 and aarch64 code apart): 16 independent
// chains of fused multiply-adds on registers, no memory traffic, so the loop's rate is the
// FMA units' peak. A call does iters x 16 x lanes multiply-adds and returns a value that depends
// on all of them (to be stored, so the loop is not optimised away).
#pragma once

#include <cstdint>

namespace twinbit::bench {

struct FmaLoop {
  int lanes = 0;                                     // floats per fused multiply-add
  float (*run)(int64_t iters, float seed) = nullptr;  // null: no loop for this CPU
};

// The widest loop this CPU runs: x86-64 AVX-512 (16 lanes) or AVX2+FMA (8), none without
// AVX2+FMA; aarch64 NEON (4 lanes, every aarch64 CPU has it).
FmaLoop best_fma_loop();

}  // namespace twinbit::bench
