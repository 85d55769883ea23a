// Small helpers shared by the tests: building strip sets by hand and comparing floats as bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/backend.h"
#include "core/numerics.h"
#include "core/op_checks.h"

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
      : prec(p), n(n_), k(k_), codes(strip_codes_bytes(p, n_, k_), p == TB_PREC_Q4 ? 0x88 : 0),
        scales(strip_scales_bytes(n_, k_) / 2, 0) {}

  void set(int64_t col, int64_t kk, int code) {
    const int64_t tile = (col / 32) * (pad32(k) / 32) + kk / 32;
    if (prec == TB_PREC_Q8) {
      codes[tile * 1024 + (col % 32) * 32 + kk % 32] = static_cast<uint8_t>(static_cast<int8_t>(code));
      return;
    }
    uint8_t& b = codes[tile * 512 + (col % 32) * 16 + (kk % 32) % 16];
    const uint8_t nib = static_cast<uint8_t>(code + 8);
    b = (kk % 32) < 16 ? static_cast<uint8_t>((b & 0xf0) | nib) : static_cast<uint8_t>((b & 0x0f) | (nib << 4));
  }
  void set_scale(int64_t col, int64_t g, uint16_t half) {
    scales[((col / 32) * (pad32(k) / 32) + g) * 32 + col % 32] = half;
  }
  tb_strips view() const {
    return tb_strips{prec, n, k, pad32(n), pad32(k), codes.data(), codes.size(),
                     scales.data(), scales.size() * 2};
  }
};

}  // namespace twinbit::testing
