// Small helpers shared by the tests: building strip sets by hand and comparing floats as bits.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <twinbit/backend.h>
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"

namespace twinbit::testing {

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A strip set built cell by cell: set(n, k, code) and set_scale(n, g, fp16 bits).
struct HandStrips {
  tb_prec prec;
  int64_t n, k;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;

  HandStrips(tb_prec p, int64_t n_, int64_t k_)
      : prec(p), n(n_), k(k_),
        codes(StripLayout{p, n_, k_}.codes_bytes(), precision_traits(p).padding_byte),
        scales(StripLayout{p, n_, k_}.scales_bytes() / 2, 0) {}

  StripLayout layout() const { return StripLayout{prec, n, k}; }
  void set(int64_t col, int64_t kk, int code) { layout().set_code(codes.data(), col, kk, code); }
  void set_scale(int64_t col, int64_t g, uint16_t half) {
    scales[layout().scale_index(col, g)] = half;
  }
  tb_strips view() const { return layout().view(codes.data(), scales.data()); }
};

// Column ranges covering [0, n) as an engine would cut a projection: boundaries at random
// multiples of 32, at least two ranges when n > 32, the last one ending ragged where n does.
struct ColumnRange {
  int64_t begin, count;
};
inline std::vector<ColumnRange> random_column_ranges(std::mt19937_64& rng, int64_t n) {
  const int64_t strips = ceil_div(n, 32);
  std::vector<ColumnRange> out;
  for (int64_t s = 0; s < strips;) {
    const int64_t left = strips - s;
    const int64_t len = left == 1 ? 1 : 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(
                                            s == 0 ? left - 1 : left));
    out.push_back({s * 32, std::min(n, (s + len) * 32) - s * 32});
    s += len;
  }
  return out;
}

}  // namespace twinbit::testing
