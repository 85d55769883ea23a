// Shared helpers of the CPU backend tests: random strip sets in the canonical layout (the
// conformance suite's builder, independent of artifacts/), random activations, and a backend per
// instruction-set tag.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "conformance/inputs.h"
#include "core/backend.hpp"
#include "core/numerics.h"
#include "core/registry.h"
#include "core/strip_layout.h"

namespace twinbit::test {

// A strip set that owns its bytes, made by the conformance suite's strip builder (the one every
// test builds strips with, conformance/inputs.h): codes over the whole range (q8 -128..127, q4
// -8..7), scales of both signs with subnormal halves and zeros, padding (columns >= N, k >= K)
// holding code 0 / nibble 8 and scale 0, as FORMAT.md requires.
struct OwnedStrips {
  conformance::OwnedStrips owned;
  tb_strips view{};
};

inline OwnedStrips random_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  conformance::Rng rng(seed);
  OwnedStrips s;
  s.owned = conformance::random_strips(rng, prec, n, k);
  s.view = s.owned.view();
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
