// Block quantisers (llama.cpp's reference, written out the same way) and the canonical tiling.
// Compiled with -ffp-contract=off: `x * id + 8.5f` must stay two roundings, as in the reference
// built without contraction (docs/FORMAT.md notes what a contracting build of llama.cpp does).
#include "artifacts/quantize.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/numerics.h"
#include "core/op_checks.h"

namespace twinbit::quant {

namespace {

using ll = long long;
using ull = unsigned long long;

constexpr int64_t kTileCodesQ8 = 32 * 32;  // bytes of one (strip, group) tile
constexpr int64_t kTileCodesQ4 = 32 * 16;

int64_t run_bytes(tb_prec prec) { return prec == TB_PREC_Q4 ? 16 : 32; }

// Byte offset of column `col` of strip `strip`, group g, in the codes; and its scale index.
int64_t code_offset(tb_prec prec, int64_t kp, int64_t n, int64_t g) {
  const int64_t tile = (n / 32) * (kp / 32) + g;
  return tile * (prec == TB_PREC_Q4 ? kTileCodesQ4 : kTileCodesQ8) + (n % 32) * run_bytes(prec);
}
int64_t scale_index(int64_t kp, int64_t n, int64_t g) { return ((n / 32) * (kp / 32) + g) * 32 + n % 32; }

Status check_shape(tb_prec prec, int64_t n, int64_t k) {
  if (prec != TB_PREC_Q8 && prec != TB_PREC_Q4) {
    return Error(TB_INVALID_ARGUMENT, "precision %d is unknown (expected 0 = q8, 1 = q4)",
                 static_cast<int>(prec));
  }
  if (n < 1 || n > kMaxDim || k < 1 || k > kMaxDim) {
    return Error(TB_INVALID_ARGUMENT, "shape N = %lld, K = %lld is out of range (expected 1 .. "
                 "%lld each)", (ll)n, (ll)k, (ll)kMaxDim);
  }
  return Status();
}

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

tb_strips PackedStrips::view() const {
  tb_strips s{};
  s.prec = prec;
  s.n = n;
  s.k = k;
  s.np = pad32(n);
  s.kp = pad32(k);
  s.codes = codes.data();
  s.codes_bytes = codes.size();
  s.scales = scales.data();
  s.scales_bytes = scales.size() * 2;
  return s;
}

PackedStrips make_strips(tb_prec prec, int64_t n, int64_t k) {
  PackedStrips p;
  p.prec = prec;
  p.n = n;
  p.k = k;
  // q4 padding holds nibble 8 (code 0) in both halves of each byte.
  p.codes.assign(strip_codes_bytes(prec, n, k), prec == TB_PREC_Q4 ? 0x88 : 0x00);
  p.scales.assign(strip_scales_bytes(n, k) / 2, 0);
  return p;
}

void pack_rows(PackedStrips& dst, int64_t n0, int64_t rows, const float* w, int64_t ldw) {
  const int64_t kp = pad32(dst.k), ngroups = kp / 32;
  float block[32];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = n0 + r;
    const float* row = w + r * ldw;
    for (int64_t g = 0; g < ngroups; ++g) {
      const int64_t k0 = g * 32, valid = dst.k - k0 < 32 ? dst.k - k0 : 32;
      std::memcpy(block, row + k0, static_cast<size_t>(valid) * sizeof(float));
      for (int64_t j = valid; j < 32; ++j) block[j] = 0.0f;  // K padding quantises as zeros
      uint8_t* out = dst.codes.data() + code_offset(dst.prec, kp, n, g);
      uint16_t* d = &dst.scales[scale_index(kp, n, g)];
      if (dst.prec == TB_PREC_Q8) {
        quantize_block_q8_0(block, reinterpret_cast<int8_t*>(out), d);
      } else {
        quantize_block_q4_0(block, out, d);
      }
    }
  }
}

PackedStrips pack_strips(const float* w, int64_t n, int64_t k, tb_prec prec) {
  PackedStrips p = make_strips(prec, n, k);
  const int64_t nstrips = pad32(n) / 32;
  // One strip (32 columns) per task: each writes its own tiles and scales, nothing shared.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, nstrips), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t s = r.begin(); s < r.end(); ++s) {
      const int64_t n0 = s * 32, rows = n - n0 < 32 ? n - n0 : 32;
      pack_rows(p, n0, rows, w + n0 * k, k);
    }
  });
  return p;
}

Result<PackedStrips> retile_gguf(std::span<const uint8_t> blocks, int64_t n, int64_t k,
                                 tb_prec prec) {
  TB_RETURN_IF_ERROR(check_shape(prec, n, k));
  if (k % 32 != 0) {
    return Error(TB_INVALID_ARGUMENT, "GGUF rows hold whole blocks of 32: K = %lld is not a "
                 "multiple of 32", (ll)k);
  }
  const int64_t block_bytes = 2 + run_bytes(prec), ngroups = k / 32;
  const uint64_t want = static_cast<uint64_t>(n) * static_cast<uint64_t>(ngroups) * block_bytes;
  if (blocks.size() != want) {
    return Error(TB_INVALID_ARGUMENT, "GGUF %s_0 tensor of %lld x %lld needs %llu bytes, got %zu",
                 prec_name(prec), (ll)n, (ll)k, (ull)want, blocks.size());
  }
  PackedStrips p = make_strips(prec, n, k);
  const int64_t kp = k, rb = run_bytes(prec);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 32), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      const uint8_t* src = blocks.data() + row * ngroups * block_bytes;
      for (int64_t g = 0; g < ngroups; ++g, src += block_bytes) {
        p.scales[scale_index(kp, row, g)] = static_cast<uint16_t>(src[0] | (src[1] << 8));
        std::memcpy(p.codes.data() + code_offset(prec, kp, row, g), src + 2, rb);
      }
    }
  });
  return p;
}

Result<PackedStrips> concat_strips(std::span<const PackedStrips* const> parts) {
  if (parts.empty()) return Error(TB_INVALID_ARGUMENT, "concat_strips needs at least one part");
  std::vector<int64_t> first_col;  // fused column where each part starts
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const PackedStrips* q = parts[i];
    if (!q) return Error(TB_INVALID_ARGUMENT, "concat_strips: part %zu is null", i);
    TB_RETURN_IF_ERROR(check_strips(q->view()));
    if (q->prec != parts[0]->prec || q->k != parts[0]->k) {
      return Error(TB_INVALID_ARGUMENT, "concat_strips: part %zu is %s with K = %lld; part 0 is "
                   "%s with K = %lld (parts must share precision and K)", i, prec_name(q->prec),
                   (ll)q->k, prec_name(parts[0]->prec), (ll)parts[0]->k);
    }
    first_col.push_back(total);
    total += q->n;
    if (total > kMaxDim) {
      return Error(TB_INVALID_ARGUMENT, "concat_strips: fused N = %lld exceeds %lld", (ll)total,
                   (ll)kMaxDim);
    }
  }
  const tb_prec prec = parts[0]->prec;
  const int64_t k = parts[0]->k, kp = pad32(k), ngroups = kp / 32, rb = run_bytes(prec);
  PackedStrips out = make_strips(prec, total, k);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, total, 32), [&](const tbb::blocked_range<int64_t>& r) {
    size_t part = 0;
    for (int64_t n = r.begin(); n < r.end(); ++n) {
      while (part + 1 < parts.size() && first_col[part + 1] <= n) ++part;
      while (n < first_col[part]) --part;
      const PackedStrips& src = *parts[part];
      const int64_t c = n - first_col[part];
      for (int64_t g = 0; g < ngroups; ++g) {
        std::memcpy(out.codes.data() + code_offset(prec, kp, n, g),
                    src.codes.data() + code_offset(prec, kp, c, g), rb);
        out.scales[scale_index(kp, n, g)] = src.scales[scale_index(kp, c, g)];
      }
    }
  });
  return out;
}

}  // namespace twinbit::quant
