// Shared helpers of the CPU backend tests: random strip sets in the canonical layout (made here,
// independently of artifacts/), random activations, and a backend per instruction-set tag.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "core/backend.hpp"
#include "core/numerics.h"
#include "core/registry.h"

namespace twinbit::test {

// A strip set that owns its bytes. Codes cover the whole range (q8: -127..127 including both
// ends; q4: -8..7), scales are random finite binary16 values including subnormal halves, and
// padding (columns >= N, k >= K) holds code 0 / nibble 8 and scale 0, as FORMAT.md requires.
struct OwnedStrips {
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  tb_strips view{};
};

inline uint16_t random_half(std::mt19937_64& rng) {
  for (;;) {
    const uint16_t h = static_cast<uint16_t>(rng());
    const uint32_t exp = (h >> 10) & 0x1f;
    if (exp == 0x1f) continue;                   // no inf / NaN
    if (rng() % 8 == 0) return h & 0x83ffu;      // 1 in 8: a subnormal (or zero) half
    if (exp < 5 || exp > 20) continue;           // keep most scales in a useful range
    return h;
  }
}

inline OwnedStrips random_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  OwnedStrips s;
  const int64_t np = pad32(n), kp = pad32(k), ng = kp / 32;
  const int64_t tile_bytes = prec == TB_PREC_Q8 ? 1024 : 512;
  s.codes.assign(static_cast<size_t>((np / 32) * ng * tile_bytes), prec == TB_PREC_Q8 ? 0 : 0x88);
  s.scales.assign(static_cast<size_t>(np * ng), 0);
  for (int64_t col = 0; col < n; ++col) {
    const int64_t strip = col / 32, c = col % 32;
    for (int64_t g = 0; g < ng; ++g) {
      const int64_t tile = strip * ng + g;
      s.scales[tile * 32 + c] = random_half(rng);
      for (int64_t kk = 0; kk < 32 && g * 32 + kk < k; ++kk) {
        if (prec == TB_PREC_Q8) {
          const int r = static_cast<int>(rng() % 260);
          const int code = r < 255 ? r - 127 : (r % 2 ? 127 : -127);  // extra weight on the ends
          s.codes[tile * 1024 + c * 32 + kk] = static_cast<uint8_t>(static_cast<int8_t>(code));
        } else {
          const uint8_t nib = static_cast<uint8_t>(rng() % 16);
          uint8_t& b = s.codes[tile * 512 + c * 16 + (kk % 16)];
          b = kk < 16 ? static_cast<uint8_t>((b & 0xf0) | nib) : static_cast<uint8_t>((b & 0x0f) | (nib << 4));
        }
      }
    }
  }
  s.view.prec = prec;
  s.view.n = n;
  s.view.k = k;
  s.view.np = np;
  s.view.kp = kp;
  s.view.codes = s.codes.data();
  s.view.codes_bytes = s.codes.size();
  s.view.scales = s.scales.data();
  s.view.scales_bytes = s.scales.size() * 2;
  return s;
}

// Activations with mixed magnitudes, exact zeros of both signs and subnormals.
inline std::vector<float> random_activations(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(count));
  for (auto& v : x) {
    const unsigned r = static_cast<unsigned>(rng() % 64);
    if (r == 0) v = 0.0f;
    else if (r == 1) v = -0.0f;
    else if (r == 2) v = u(rng) * 1e-39f;  // subnormal
    else if (r == 3) v = u(rng) * 1e4f;
    else v = u(rng);
  }
  return x;
}

// The built-in "cpu" backend with creation parameters (a spec's ",KEY=VALUE" part).
inline Result<Backend> create_cpu_backend(std::vector<BackendParam> params = {}) {
  BackendSpec spec;
  spec.name = "cpu";
  spec.params = std::move(params);
  return create_backend(spec);
}

// The cpu backend forced to one instruction-set tag (the isa= creation parameter).
inline Result<Backend> cpu_backend_for(cpu::Isa isa) {
  return create_cpu_backend({{"isa", cpu::isa_name(isa)}});
}

inline bool same_bits(const float* a, const float* b, size_t count) {
  return std::memcmp(a, b, count * sizeof(float)) == 0;
}

// Index of the first differing float, or -1.
inline int64_t first_difference(const float* a, const float* b, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(float)) != 0) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace twinbit::test
