// Activation rows that exercise every branch of the I8 quantiser's contract (NUMERICS.md, "gemm,
// activation mode I8"), for comparing a backend's quantize_i8 with the reference: ordinary
// values of several magnitudes, groups whose amax is a few hundred units of 2^-149 (d subnormal,
// the clamp bites), all-zero groups (d == 0), a NaN in a group, an infinity in a group, -0.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace twinbit::testing {

// (m, ldx) floats; columns k .. ldx hold a sentinel NaN that must never be read into a code.
inline std::vector<float> quantize_rows(int64_t m, int64_t k, int64_t ldx, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(m * ldx), std::nanf("0x5a5"));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t g = 0; g * 32 < k; ++g) {
      const int kind = static_cast<int>((rng() >> 7) % 8);
      for (int64_t kk = 0; kk < 32 && g * 32 + kk < k; ++kk) {
        float v = uni(rng);
        switch (kind) {
          case 0: v *= 1e-3f; break;
          case 1: v *= 3e4f; break;
          case 2: v = static_cast<float>(static_cast<double>(static_cast<int64_t>(rng() % 16066) - 8033) * 0x1p-149); break;
          case 3: v = 0.0f; break;
          case 4: if (kk == 5) v = std::numeric_limits<float>::quiet_NaN(); break;
          case 5: if (kk == 7) v = -std::numeric_limits<float>::infinity(); break;
          case 6: if (kk % 3 == 0) v = -0.0f; break;
          default: break;
        }
        x[static_cast<size_t>(r * ldx + g * 32 + kk)] = v;
      }
    }
  }
  return x;
}

}  // namespace twinbit::testing
