// The block quantisers (llama.cpp's reference, written out the same way). Compiled with
// -ffp-contract=off like all of twinbit: `x * id + 8.5f` must stay two roundings, as in the
// reference built without contraction (docs/FORMAT.md notes what a contracting build does).
#include "core/block_quantizers.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace twinbit {

namespace {

// llama.cpp converts with a plain cast, which is undefined for a NaN or an infinity. Those are
// the only values that reach it outside int8: finite quotients stay within +-127.5 (q8) and
// [0.5, 16.5] (q4). They arise where 1/d overflows to inf - a nonzero block whose largest
// magnitude is at most 3.7321952e-37 (q8) or 2.3509893e-38 (q4); x * id is then +-inf, or NaN for
// a zero - and for NaN/inf weights. twinbit writes 0 there, as gguf-py does on x86-64 (numpy's
// conversion of a non-finite float gives 0): the stored scale of such a block is 0 anyway, and q8
// codes stay in [-127, 127] (a saturating cast wrote -128 here, and leaked q4's -128 into the
// neighbouring nibble). Inside the defined range this is exactly the cast.
int8_t cast_int8(float v) {
  if (!std::isfinite(v)) return 0;
  return static_cast<int8_t>(std::clamp(v, -128.0f, 127.0f));  // finite: in range, see above
}

}  // namespace

uint16_t float_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN: keep the top payload bits, force quiet so it stays a NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (half-way past 65504) and inf -> inf
  if (ax >= 0x38800000u) {                         // normal half: drop 13 mantissa bits, RNE
    uint32_t h = (ax - (112u << 23)) >> 13;
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half (or zero): the value in units of 2^-24, rounded to nearest even.
  const uint32_t e = ax >> 23;
  if (e < 102) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to even zero)
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14 .. 24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may become 0x400, the smallest normal
  return static_cast<uint16_t>(sign | q);
}

// llama.cpp quantize_row_q8_0_ref, one block.
void quantize_block_q8_0(const float* x, int8_t* codes, uint16_t* d_out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float v = std::fabs(x[j]);
    amax = amax > v ? amax : v;  // MAX(amax, fabsf(v))
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = float_to_fp16(d);
  for (int j = 0; j < 32; ++j) {
    const float x0 = x[j] * id;
    codes[j] = cast_int8(std::roundf(x0));  // ties away from zero
  }
}

// llama.cpp quantize_row_q4_0_ref, one block.
void quantize_block_q4_0(const float* x, uint8_t* qs, uint16_t* d_out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float v = x[j];
    if (amax < std::fabs(v)) {  // strict: the first value of largest magnitude wins
      amax = std::fabs(v);
      max = v;
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = float_to_fp16(d);
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id;
    const float x1 = x[16 + j] * id;
    const int8_t t0 = cast_int8(x0 + 8.5f);  // truncation toward zero
    const int8_t t1 = cast_int8(x1 + 8.5f);
    const uint8_t xi0 = static_cast<uint8_t>(t0 < 15 ? t0 : 15);  // MIN(15, ...) then uint8_t
    const uint8_t xi1 = static_cast<uint8_t>(t1 < 15 ? t1 : 15);
    qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}

}  // namespace twinbit
