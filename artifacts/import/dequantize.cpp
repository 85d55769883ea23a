// Reference decoders of the GGUF block formats (dequantize.h gives each one's arithmetic). A
// block's layout is written out where it is decoded; elements are numbered 0 .. block_elems-1.
#include "artifacts/import/dequantize.h"

#include <cstring>

#include "core/numerics.h"

namespace twinbit::import {

namespace {

float half_at(const uint8_t* p) { return fp16_to_float(static_cast<uint16_t>(p[0] | p[1] << 8)); }
uint32_t u32_at(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// q8_0 (34 bytes): fp16 d, int8 q[32].
void decode_q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
}

// q4_0 (18): fp16 d, qs[16]: element j in the low nibble of qs[j], j + 16 in its high nibble.
void decode_q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((b[2 + j] & 15) - 8);
    y[j + 16] = d * static_cast<float>((b[2 + j] >> 4) - 8);
  }
}

// q4_1 (20): fp16 d, fp16 m, qs[16] as q4_0.
void decode_q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(b[4 + j] & 15) + m;
    y[j + 16] = d * static_cast<float>(b[4 + j] >> 4) + m;
  }
}

// The 5-bit codes of q5_0 / q5_1: qs[16] as q4_0 for the low 4 bits, bit i of the u32 qh the
// fifth bit of element i.
void q5_codes(const uint8_t* qh_bytes, const uint8_t* qs, int q[32]) {
  const uint32_t qh = u32_at(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 15) | static_cast<int>((qh >> j) & 1) << 4;
    q[j + 16] = (qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
  }
}

// q5_0 (22): fp16 d, qh[4], qs[16].
void decode_q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  int q[32];
  q5_codes(b + 2, b + 6, q);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(q[i] - 16);
}

// q5_1 (24): fp16 d, fp16 m, qh[4], qs[16].
void decode_q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  int q[32];
  q5_codes(b + 4, b + 8, q);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(q[i]) + m;
}

// q2_k (84): scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64], fp16 d,
// fp16 dmin. Element e = 128 h + 32 s + l holds bits 2s, 2s+1 of qs[32 h + l].
void decode_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, s = e % 128 / 32, l = e % 32;
    const float dl = d * static_cast<float>(scales[e / 16] & 15);
    const float ml = dmin * static_cast<float>(scales[e / 16] >> 4);
    const int q = (qs[32 * h + l] >> (2 * s)) & 3;
    y[e] = dl * static_cast<float>(q) - ml;
  }
}

// q3_k (110): hmask[32], qs[64], scales[12], fp16 d. Element e = 128 h + 32 s + l: low 2 bits as
// q2_k, high bit (e / 32) of hmask[l]; the code is low - 4 when that bit is clear. The 16 6-bit
// scales (one per 16 elements, minus 32): scale i's low 4 bits are the low (i < 8) or high
// (i >= 8) nibble of scales[i % 8], its high 2 bits are bits 2 (i / 4) of scales[8 + i % 4].
void decode_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = half_at(b + 108);
  float dl[16];
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? sc[i] & 15 : sc[i - 8] >> 4;
    const int high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
    dl[i] = d * static_cast<float>((low | high << 4) - 32);
  }
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, s = e % 128 / 32, l = e % 32;
    const int low = (qs[32 * h + l] >> (2 * s)) & 3;
    const int q = low - (((hmask[l] >> (e / 32)) & 1) ? 0 : 4);
    y[e] = dl[e / 16] * static_cast<float>(q);
  }
}

// The 8 6-bit (scale, min) pairs of q4_k / q5_k, one per 32 elements, packed in 12 bytes: for
// j < 4 the low 6 bits of bytes j and j + 4; for j >= 4 the nibbles of byte j + 4 with the top 2
// bits of bytes j - 4 (scale) and j (min) above them.
void k_scale_min(const uint8_t* p, int sc[8], int m[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = p[j] & 63;
    m[j] = p[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = (p[j + 4] & 15) | (p[j - 4] >> 6) << 4;
    m[j] = (p[j + 4] >> 4) | (p[j] >> 6) << 4;
  }
}

// q4_k (144): fp16 d, fp16 dmin, scales[12], qs[128]. Element e = 32 s + l (s = 2c + k) is
// nibble k of qs[32 c + l].
void decode_q4_k(const uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  int sc[8], m[8];
  k_scale_min(b + 4, sc, m);
  const uint8_t* qs = b + 16;
  for (int s = 0; s < 8; ++s) {
    const float ds = d * static_cast<float>(sc[s]), ms = dmin * static_cast<float>(m[s]);
    for (int l = 0; l < 32; ++l) {
      const int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 15;
      y[32 * s + l] = ds * static_cast<float>(q) - ms;
    }
  }
}

// q5_k (176): fp16 d, fp16 dmin, scales[12], qh[32], qs[128]: q4_k's nibbles, with bit s of
// qh[l] as the fifth bit of element 32 s + l.
void decode_q5_k(const uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  int sc[8], m[8];
  k_scale_min(b + 4, sc, m);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int s = 0; s < 8; ++s) {
    const float ds = d * static_cast<float>(sc[s]), ms = dmin * static_cast<float>(m[s]);
    for (int l = 0; l < 32; ++l) {
      const int q = ((qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 15) | ((qh[l] >> s) & 1) << 4;
      y[32 * s + l] = ds * static_cast<float>(q) - ms;
    }
  }
}

// q6_k (210): ql[128], qh[64], int8 scales[16], fp16 d. Element e = 128 h + r: low 4 bits are
// nibble (r / 64) of ql[64 h + r % 64], high 2 bits are bits 2 (r / 32) of qh[32 h + r % 32].
void decode_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128;
    const int low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 15;
    const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    const float ds = d * static_cast<float>(sc[e / 16]);
    y[e] = ds * static_cast<float>((low | high << 4) - 32);
  }
}

void decode_f32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
void decode_f16(const uint8_t* b, float* y) { *y = half_at(b); }
void decode_bf16(const uint8_t* b, float* y) {
  *y = __builtin_bit_cast(float, static_cast<uint32_t>(b[0] << 16 | b[1] << 24));
}

using BlockDecoder = void (*)(const uint8_t*, float*);

BlockDecoder decoder_for(SourceType type) {
  switch (type) {
    case SourceType::f32: return decode_f32;
    case SourceType::f16: return decode_f16;
    case SourceType::bf16: return decode_bf16;
    case SourceType::q8_0: return decode_q8_0;
    case SourceType::q4_0: return decode_q4_0;
    case SourceType::q4_1: return decode_q4_1;
    case SourceType::q5_0: return decode_q5_0;
    case SourceType::q5_1: return decode_q5_1;
    case SourceType::q2_k: return decode_q2_k;
    case SourceType::q3_k: return decode_q3_k;
    case SourceType::q4_k: return decode_q4_k;
    case SourceType::q5_k: return decode_q5_k;
    case SourceType::q6_k: return decode_q6_k;
    case SourceType::other: break;
  }
  return nullptr;
}

}  // namespace

int64_t source_rows(const SourceTensor& t) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < t.dims.size(); ++i) {
    if (t.dims[i] < 1 || __builtin_mul_overflow(rows, t.dims[i], &rows)) return -1;
  }
  return rows;
}

Status to_float_rows(const SourceTensor& t, std::span<const uint8_t> bytes, int64_t row0,
                     int64_t rows, float* out) {
  using ll = long long;
  const BlockDecoder decode = decoder_for(t.type);
  if (decode == nullptr) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': type %s cannot be converted to float",
                 t.name.c_str(), t.type_name.c_str());
  }
  const SourceTypeTraits& tr = source_type_traits(t.type);
  const int64_t width = t.dims.empty() ? 0 : t.dims.back();
  const int64_t total = source_rows(t);
  if (width < 1 || total < 0) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': dims are empty or not positive",
                 t.name.c_str());
  }
  if (width % tr.block_elems != 0) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': a row of %lld elements is not whole %s blocks "
                 "(%lld elements each)", t.name.c_str(), (ll)width, tr.name, (ll)tr.block_elems);
  }
  const int64_t row_blocks = width / tr.block_elems;
  const int64_t row_bytes = row_blocks * tr.block_bytes;
  int64_t expected = 0;
  if (__builtin_mul_overflow(row_bytes, total, &expected) || t.bytes != uint64_t(expected) ||
      bytes.size() != t.bytes) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': %zu bytes given for %lld rows of %lld bytes "
                 "(%llu recorded)", t.name.c_str(), bytes.size(), (ll)total, (ll)row_bytes,
                 (unsigned long long)t.bytes);
  }
  if (row0 < 0 || rows < 0 || row0 > total || rows > total - row0) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': rows [%lld, %lld) are outside its %lld rows",
                 t.name.c_str(), (ll)row0, (ll)(row0 + rows), (ll)total);
  }
  const uint8_t* src = bytes.data() + row0 * row_bytes;
  if (rows == 0) return Status();
  if (t.type == SourceType::f32) {  // little-endian float32 is already the output
    std::memcpy(out, src, static_cast<size_t>(rows * row_bytes));
    return Status();
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t blk = 0; blk < row_blocks; ++blk) {
      decode(src + blk * tr.block_bytes, out + blk * tr.block_elems);
    }
    src += row_bytes;
    out += width;
  }
  return Status();
}

}  // namespace twinbit::import
