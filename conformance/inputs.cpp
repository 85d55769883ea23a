#include "conformance/inputs.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"

namespace twinbit::conformance {

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t Rng::range(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(next() % span);
}

bool Rng::chance(int per_mille) { return static_cast<int>(next() % 1000) < per_mille; }

uint64_t case_seed(uint64_t suite_seed, const std::string& case_name) {
  uint64_t h = 0xcbf29ce484222325ull ^ (suite_seed * 0x9e3779b97f4a7c15ull);
  for (char c : case_name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  Rng mix(h);
  return mix.next();
}

tb_strips OwnedStrips::view() const {
  return StripLayout{prec, n, k}.view(codes.data(), scales.data());
}

namespace {
// An fp16 scale: GGUF scales are usually positive normals around 2^-10..2^-4; the contract covers
// every finite half, so the mix reaches far beyond that.
uint16_t random_half_scale(Rng& rng) {
  const uint16_t sign = rng.chance(250) ? 0x8000 : 0;
  const int64_t pick = rng.range(0, 99);
  if (pick < 8) return sign | static_cast<uint16_t>(rng.range(1, 0x3ff));  // subnormal half
  if (pick < 10) return sign;                                               // +-0
  // normal: biased exponent 1..22 (2^-14 .. 2^7), random mantissa
  const uint16_t exp = static_cast<uint16_t>(rng.range(1, 22));
  return sign | static_cast<uint16_t>(exp << 10) | static_cast<uint16_t>(rng.range(0, 0x3ff));
}
}  // namespace

OwnedStrips random_strips(Rng& rng, tb_prec prec, int64_t n, int64_t k) {
  OwnedStrips s;
  s.prec = prec;
  s.n = n;
  s.k = k;
  const StripLayout layout{prec, n, k};
  const PrecisionTraits& t = layout.traits();
  // Every code the format can hold: the quantiser's range, and for q8 also -128, which the
  // packer never writes but a GGUF block may hold; every backend must compute with it exactly
  // (NUMERICS.md "Notation"). The storable range is what the packing's bits allow.
  const int lo = -(1 << (t.bits_per_code - 1)), hi = t.code_max;
  s.codes.assign(layout.codes_bytes(), t.padding_byte);
  s.scales.assign(layout.scales_bytes() / 2, 0);
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t g = 0; g < layout.groups(); ++g) {
      s.scales[layout.scale_index(col, g)] = random_half_scale(rng);
      for (int64_t kk = 0; kk < 32 && g * 32 + kk < k; ++kk) {
        layout.set_code(s.codes.data(), col, g * 32 + kk, static_cast<int>(rng.range(lo, hi)));
      }
    }
  }
  return s;
}

namespace {
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

std::vector<float> random_floats(Rng& rng, int64_t count, int scale_log2) {
  std::vector<float> v(static_cast<size_t>(count));
  bool any_nonzero = false;
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t sign = rng.chance(500) ? 0x80000000u : 0;
    const int64_t pick = rng.range(0, 999);
    uint32_t bits;
    if (pick < 20) {
      bits = sign;  // +0 / -0
    } else if (pick < 40) {
      bits = sign | static_cast<uint32_t>(rng.range(1, 0x7fffff));  // subnormal
    } else {
      // normal, magnitudes 2^-12 .. 2^2 (shifted by scale_log2)
      const int64_t e = 127 + scale_log2 + rng.range(-12, 1);
      bits = sign | (static_cast<uint32_t>(e) << 23) | static_cast<uint32_t>(rng.range(0, 0x7fffff));
      any_nonzero = true;
    }
    v[static_cast<size_t>(i)] = from_bits(bits);
  }
  if (!any_nonzero && count > 0) v[0] = from_bits(0x3f9d70a4u);  // 1.23f: never an all-zero input
  return v;
}

std::vector<float> subnormal_floats(Rng& rng, int64_t rows, int64_t cols) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  bool any_nonzero = false;
  for (int64_t r = 0; r < rows; ++r) {
    // The largest biased exponent of the row's normal values: 0 keeps the whole row subnormal.
    const int64_t top = rng.chance(250) ? 0 : rng.range(2, 24);
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t sign = rng.chance(500) ? 0x80000000u : 0;
      const int64_t pick = rng.range(0, 999);
      uint32_t bits;
      if (pick < 20) {
        bits = sign;  // +0 / -0
      } else if (pick < 350 || top == 0) {
        // subnormal: a random mantissa below a random power of two, so every binade shows up
        const int64_t width = rng.range(1, 23);
        bits = sign | static_cast<uint32_t>(rng.range(1, (int64_t{1} << width) - 1));
      } else {
        const int64_t e = rng.range(1, top);
        bits = sign | (static_cast<uint32_t>(e) << 23) | static_cast<uint32_t>(rng.range(0, 0x7fffff));
      }
      any_nonzero = any_nonzero || (bits & 0x7fffffffu) != 0;
      v[static_cast<size_t>(r * cols + c)] = from_bits(bits);
    }
  }
  if (!any_nonzero && !v.empty()) v[0] = from_bits(0x00012345u);  // a subnormal, never all zero
  return v;
}

namespace {
// One group of 32 values whose largest magnitude is a tiny amax (see tiny_activation_groups).
void tiny_group(Rng& rng, float* v) {
  static constexpr uint32_t kEdgeUnits[] = {63, 64, 126, 127, 128, 129, 150, 189, 190, 191,
                                            254, 16065, 16066, 16192, 16193};
  constexpr uint32_t kNormalD = 0x03fe0000u;  // 127 * 2^-126: d = 2^-126, the smallest normal
  const int64_t pick = rng.range(0, 9);
  uint32_t top;  // the bits of amax
  if (pick < 4) {
    top = kEdgeUnits[rng.range(0, static_cast<int64_t>(std::size(kEdgeUnits)) - 1)];
  } else if (pick < 7) {
    top = static_cast<uint32_t>(rng.range(64, 16200));  // the saturating range and around it
  } else if (pick < 9) {
    top = static_cast<uint32_t>(rng.range(1, kNormalD + 1));  // d subnormal (or zero) anywhere
  } else {
    top = kNormalD + static_cast<uint32_t>(rng.range(-1, 1));  // d's return to normal
  }
  for (int i = 0; i < 32; ++i) {
    const uint32_t sign = rng.chance(500) ? 0x80000000u : 0;
    v[i] = from_bits(sign | static_cast<uint32_t>(rng.range(0, top)));
  }
  // amax itself, in both signs; and exact ties x / d = j + 1/2 where d is an even number of
  // units (below 2^-126 a float is an integer number of units, and d = rne(amax / 127) units).
  const int64_t at = rng.range(0, 31);
  v[at] = from_bits(top);
  v[(at + 7) % 32] = from_bits(top | 0x80000000u);
  const int64_t a = top, d_units = a / 127 + (2 * (a % 127) > 127 ? 1 : 0);  // 127 is odd: no ties
  if (a < kNormalD && d_units > 0 && d_units % 2 == 0) {
    for (int i = 0; i < 4; ++i) {  // ties near the top, where codes reach and pass 127
      const int64_t j = rng.range(std::max<int64_t>(0, a / d_units - 8), a / d_units - 1);
      const uint32_t sign = rng.chance(500) ? 0x80000000u : 0;
      v[rng.range(0, 31)] = from_bits(sign | static_cast<uint32_t>(j * d_units + d_units / 2));
    }
  }
}
}  // namespace

void tiny_activation_groups(Rng& rng, std::vector<float>& x, int64_t m, int64_t k, int64_t ldx) {
  const int64_t ngroups = ngroups_of(k);
  for (int64_t row = 0; row < m; ++row) {
    const bool whole_row = rng.chance(250);
    for (int64_t g = 0; g < ngroups; ++g) {
      if (!whole_row && !rng.chance(62)) continue;
      float v[32];
      tiny_group(rng, v);
      for (int64_t kk = 0; kk < 32 && g * 32 + kk < k; ++kk) {
        x[static_cast<size_t>(row * ldx + g * 32 + kk)] = v[kk];
      }
    }
  }
}

std::vector<float> random_gates(Rng& rng, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) {
    // g = -(i / 2^20) for i in [-2^19, 2^23): (-8, 0.5), exact in float (multiples of 2^-20)
    x = -static_cast<float>(rng.range(-(int64_t{1} << 19), (int64_t{1} << 23) - 1)) * 0x1p-20f;
  }
  return v;
}

std::vector<float> random_unit(Rng& rng, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) x = static_cast<float>(rng.range(0, 1 << 24)) * 0x1p-24f;
  return v;
}

}  // namespace twinbit::conformance
