// The two places where the instruction set decides the algorithm: getting a tile's codes into
// column-lane order for the F32 mode (transpose_tile) and the exact int8 group dots of the I8
// mode (group_dots). Each has a generic path valid on every tag and, inside `if constexpr`, a
// fast path for the tags whose instructions xsimd 8.1 cannot name (VBMI byte permutes, VNNI).
// Both fast paths compute exactly what the generic path computes: a permutation of bytes, or an
// int32 sum (exact in any order). The aarch64 tags' group dots are cpu_kernels_arm.hpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

#include "backends/cpu/cpu_simd.h"
#include <twinbit/backend.h>
#if defined(__aarch64__)
#include "backends/cpu/cpu_kernels_arm.hpp"
#endif

namespace twinbit::cpu::detail {

// One software prefetch of the line at a, into L2 only (T1): an L1 prefetch would hold one of the
// core's few L1 miss buffers for the whole DRAM round trip, an L2 prefetch does not, so more
// lines are in flight (measured: docs/results/cpu-kernel-choices.md). On aarch64 the same hint is
// PRFM PLDL2KEEP (GCC's locality 2); its distance there is unmeasured.
inline void prefetch_line(const char* a) {
#if defined(__x86_64__)
  _mm_prefetch(a, _MM_HINT_T1);
#else
  __builtin_prefetch(a, 0, 2);
#endif
}

// ---- avx512vnni: VBMI byte transpose of a tile for the F32 mode ------------------------------
// A q8 tile is 16 zmm registers, register r = columns 2r, 2r+1 (byte = (c & 1) * 32 + k). The
// F32 kernel needs, for each k, the 16 codes of a half tile's columns contiguous (one
// vpmovsxbd load). Three vpermt2b stages each trade one column bit of the register index for
// one k bit of the byte index (c1 <-> k4, c2 <-> k3, c3 <-> k2), 16 permutes per stage; the
// last stage also orders the bytes. Result: register R = (c4, k4, k3, k2), byte
// = (k & 3) * 16 + (c & 15); the 16 codes of (k, half h) start at byte vbmi_code_offset(k, h).
// 48 permutes per 1024 codes instead of 1024 scalar byte moves.
struct VbmiStage {
  uint8_t src_a[16], src_b[16];  // input registers of each output register
  uint8_t idx[16][64];           // vpermt2b indices: < 64 from src_a, >= 64 from src_b
};

// Where element (column c, k) lives after stage s (s = 0: the tile as loaded).
constexpr void vbmi_layout(int s, int c, int k, int* reg, int* byte) {
  const int c0 = c & 1, c1 = (c >> 1) & 1, c2 = (c >> 2) & 1, c3 = (c >> 3) & 1, c4 = c >> 4;
  const int k4 = k >> 4, k3 = (k >> 3) & 1, k2 = (k >> 2) & 1;
  switch (s) {
    case 0: *reg = c >> 1; *byte = c0 * 32 + k; break;
    case 1: *reg = (c4 << 3) | (c3 << 2) | (c2 << 1) | k4; *byte = (c0 << 5) | (c1 << 4) | (k & 15); break;
    case 2: *reg = (c4 << 3) | (c3 << 2) | (k4 << 1) | k3; *byte = ((c & 7) << 3) | (k & 7); break;
    default: *reg = (c4 << 3) | (k4 << 2) | (k3 << 1) | k2; *byte = ((k & 3) << 4) | (c & 15); break;
  }
}

// The permutes taking layout `from` to layout `to` (each output register drawing on two inputs).
constexpr VbmiStage make_vbmi_stage(int from, int to) {
  VbmiStage st{};
  for (int r = 0; r < 16; ++r) st.src_a[r] = st.src_b[r] = 0xff;
  for (int c = 0; c < 32; ++c) {
    for (int k = 0; k < 32; ++k) {
      int r_in = 0, b_in = 0, r_out = 0, b_out = 0;
      vbmi_layout(from, c, k, &r_in, &b_in);
      vbmi_layout(to, c, k, &r_out, &b_out);
      if (st.src_a[r_out] == 0xff || st.src_a[r_out] == r_in) {
        st.src_a[r_out] = static_cast<uint8_t>(r_in);
        st.idx[r_out][b_out] = static_cast<uint8_t>(b_in);
      } else {
        st.src_b[r_out] = static_cast<uint8_t>(r_in);
        st.idx[r_out][b_out] = static_cast<uint8_t>(64 + b_in);
      }
    }
  }
  return st;
}


constexpr int vbmi_code_offset(int k, int half) { return ((half << 3) | (k >> 2)) * 64 + (k & 3) * 16; }

#if defined(__AVX512VBMI__)
// q4 tile -> the 16 registers of a q8 tile (codes, not nibbles): each 64-byte load holds columns
// 4j..4j+3 (16 bytes each); low nibbles are k 0..15, high nibbles k 16..31.
// kStoredNibbles: keep the stored nibbles (code + 8, the VNNI path's unsigned operand) instead
// of the codes.
template <bool kStoredNibbles = false>
inline void q4_tile_to_q8_regs(const uint8_t* tile, __m512i* r) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  const __m512i eight = _mm512_set1_epi8(kStoredNibbles ? 0 : 8);
  const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i odd = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int j = 0; j < 8; ++j) {
    const __m512i v = _mm512_loadu_si512(tile + 64 * j);
    const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(v, mask), eight);
    const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight);
    r[2 * j] = _mm512_permutex2var_epi64(lo, even, hi);
    r[2 * j + 1] = _mm512_permutex2var_epi64(lo, odd, hi);
  }
}

// One stage with every register index a constant expression, so the 32 registers stay registers
// (indices read from the plan at run time would force the arrays into memory).
template <const VbmiStage& St, int... R>
inline void vbmi_permute(const __m512i* in, __m512i* out, std::integer_sequence<int, R...>) {
  ((out[R] = _mm512_permutex2var_epi8(in[St.src_a[R]], _mm512_loadu_si512(St.idx[R]),
                                      in[St.src_b[R]])), ...);
}
inline constexpr VbmiStage kVbmiStage0 = make_vbmi_stage(0, 1);
inline constexpr VbmiStage kVbmiStage1 = make_vbmi_stage(1, 2);
inline constexpr VbmiStage kVbmiStage2 = make_vbmi_stage(2, 3);
template <int S>
inline void vbmi_stage(const __m512i* in, __m512i* out, std::make_integer_sequence<int, 16> seq) {
  if constexpr (S == 0) vbmi_permute<kVbmiStage0>(in, out, seq);
  else if constexpr (S == 1) vbmi_permute<kVbmiStage1>(in, out, seq);
  else vbmi_permute<kVbmiStage2>(in, out, seq);
}

inline void transpose_tile_vbmi(const uint8_t* tile, tb_prec prec, int8_t* out) {
  __m512i a[16], b[16];
  if (prec == TB_PREC_Q8) {
    for (int r = 0; r < 16; ++r) a[r] = _mm512_loadu_si512(tile + 64 * r);
  } else {
    q4_tile_to_q8_regs(tile, a);
  }
  vbmi_stage<0>(a, b, std::make_integer_sequence<int, 16>());
  vbmi_stage<1>(b, a, std::make_integer_sequence<int, 16>());
  vbmi_stage<2>(a, b, std::make_integer_sequence<int, 16>());
  __m512i* in = b;
  for (int r = 0; r < 16; ++r) _mm512_store_si512(out + 64 * r, in[r]);
}

// ---- avx512vnni: exact int8 group dots with vpdpbusd ------------------------------------------
// vpdpbusd multiplies unsigned by signed bytes, four at a time, into each dword lane. So that a
// lane is a column, the tile is first transposed at dword granularity: the dword of column c and
// k-quad q (codes 4q .. 4q+3, contiguous in the tile) moves to register (c >> 4) * 8 + q, lane
// c & 15. Three vpermt2d stages do it (c1 <-> q2, c2 <-> q1, c3 <-> q0), shared by all rows;
// then each row is 16 vpdpbusd per tile with the row's 4 codes of quad q broadcast, and no
// horizontal reduction at all.
// Weights are the unsigned operand through a bias: q8: w ^ 0x80 = w + 128 in [1, 255]; q4: the
// stored nibble = w + 8 in [0, 15]. Then sum (w + bias) * a = isum + bias * sum(a), and sum(a)
// of the row's group (xsum, computed once per call) removes the bias exactly; every partial sum
// stays far below 2^31 (255 * 127 * 32).
struct DwordStage {
  uint8_t src_a[16], src_b[16];
  uint32_t idx[16][16];  // vpermt2d indices: < 16 from src_a, >= 16 from src_b
};
struct DwordPlan {
  DwordStage stage[3];
};

// Where dword (column c, quad q) lives after stage s.
constexpr void dword_layout(int s, int c, int q, int* reg, int* lane) {
  switch (s) {
    case 0: *reg = c >> 1; *lane = ((c & 1) << 3) | q; break;
    case 1: *reg = ((c >> 2) << 1) | (q >> 2); *lane = ((c & 3) << 2) | (q & 3); break;
    case 2: *reg = ((c >> 3) << 2) | (q >> 1); *lane = ((c & 7) << 1) | (q & 1); break;
    default: *reg = ((c >> 4) << 3) | q; *lane = c & 15; break;
  }
}

constexpr DwordPlan make_dword_plan() {
  DwordPlan plan{};
  for (int s = 0; s < 3; ++s) {
    DwordStage& st = plan.stage[s];
    for (int r = 0; r < 16; ++r) st.src_a[r] = st.src_b[r] = 0xff;
    for (int c = 0; c < 32; ++c) {
      for (int q = 0; q < 8; ++q) {
        int r_in = 0, l_in = 0, r_out = 0, l_out = 0;
        dword_layout(s, c, q, &r_in, &l_in);
        dword_layout(s + 1, c, q, &r_out, &l_out);
        if (st.src_a[r_out] == 0xff || st.src_a[r_out] == r_in) {
          st.src_a[r_out] = static_cast<uint8_t>(r_in);
          st.idx[r_out][l_out] = static_cast<uint32_t>(l_in);
        } else {
          st.src_b[r_out] = static_cast<uint8_t>(r_in);
          st.idx[r_out][l_out] = static_cast<uint32_t>(16 + l_in);
        }
      }
    }
  }
  return plan;
}
inline constexpr DwordPlan kDwordPlan = make_dword_plan();

template <int S, int... R>
inline void dword_stage(const __m512i* in, __m512i* out, std::integer_sequence<int, R...>) {
  ((out[R] = _mm512_permutex2var_epi32(in[kDwordPlan.stage[S].src_a[R]],
                                       _mm512_loadu_si512(kDwordPlan.stage[S].idx[R]),
                                       in[kDwordPlan.stage[S].src_b[R]])), ...);
}

// `ahead` (optional): a later tile of `lines` cache lines to prefetch, a quarter of them after the
// loads and after each transpose stage, spread between the permutes instead of all before the
// tile (which measured slower: docs/results/cpu-kernel-choices.md).
template <int NR>
inline void group_dots_vnni(const uint8_t* tile, tb_prec prec, const int8_t* const* xr,
                            const int32_t* const* xsum, int64_t g, int32_t (*isum)[32],
                            const char* ahead = nullptr, int lines = 0) {
  const int quarter = lines / 4;
  auto prefetch_quarter = [&](int part) {
    for (int l = part * quarter; l < (part + 1) * quarter; ++l) prefetch_line(ahead + 64 * l);
  };
  __m512i a[16], b[16];
  int32_t bias = 8;
  if (prec == TB_PREC_Q8) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int i = 0; i < 16; ++i) a[i] = _mm512_xor_si512(_mm512_loadu_si512(tile + 64 * i), flip);
    bias = 128;
  } else {
    q4_tile_to_q8_regs<true>(tile, a);
  }
  if (ahead) prefetch_quarter(0);
  dword_stage<0>(a, b, std::make_integer_sequence<int, 16>());
  if (ahead) prefetch_quarter(1);
  dword_stage<1>(b, a, std::make_integer_sequence<int, 16>());
  if (ahead) prefetch_quarter(2);
  dword_stage<2>(a, b, std::make_integer_sequence<int, 16>());
  if (ahead) prefetch_quarter(3);
  // b[h * 8 + q]: lane j = the 4 unsigned codes of quad q of column 16 h + j.
  for (int r = 0; r < NR; ++r) {
    const int8_t* x = xr[r] + g * 32;
    __m512i acc[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int q = 0; q < 8; ++q) {
      int32_t quad;
      std::memcpy(&quad, x + 4 * q, 4);
      const __m512i xb = _mm512_set1_epi32(quad);
      acc[0] = _mm512_dpbusd_epi32(acc[0], b[q], xb);
      acc[1] = _mm512_dpbusd_epi32(acc[1], b[8 + q], xb);
    }
    const __m512i correction = _mm512_set1_epi32(bias * xsum[r][g]);
    _mm512_store_si512(isum[r], _mm512_sub_epi32(acc[0], correction));
    _mm512_store_si512(isum[r] + 16, _mm512_sub_epi32(acc[1], correction));
  }
}
// ---- avx512vnni: the spread decode of the F32 mode (rows <= 2 per strip) ----------------------
// On this CPU family the two-source byte permute vpermt2b issues at about half the rate of
// vpermt2d and of the one-source vpermb (several uops, one of them on FMA port 0; the measured
// rates: docs/results/cpu-kernel-choices.md). The tile path above spends 48 vpermt2b per tile
// (more uops than its 64 fma) plus a vpmovsxbd + vcvtdq2ps per 16 codes. The spread path instead
//   1. transposes the tile at dword granularity exactly like the I8 path (48 vpermt2d): register
//      h * 8 + q, lane j = the 4 codes k = 4q .. 4q+3 of column 16 h + j;
//   2. per k = 4q + b moves byte b of every lane to the lane's top byte and zeroes the rest (one
//      zero-masked vpermb; for b = 3 a zero-masked byte move, on either vector port), so that
//      vcvtdq2ps gives code * 2^24 exactly.
// The 2^24 is taken back from the activation: fma(code * 2^24, x * 2^-24, acc) equals
// fma(code, x, acc) bit for bit whenever x * 2^-24 is exact - the product inside an fma is exact
// and both products are the same real number. Where it is not (|x| < 2^-102 nonzero, NaN) the
// kernel takes the tile path for those groups.
inline void spread_tile_to_quads(const uint8_t* tile, tb_prec prec, int8_t* out) {
  __m512i a[16], b[16];
  if (prec == TB_PREC_Q8) {
    for (int r = 0; r < 16; ++r) a[r] = _mm512_loadu_si512(tile + 64 * r);
  } else {
    q4_tile_to_q8_regs(tile, a);
  }
  const auto seq = std::make_integer_sequence<int, 16>();
  dword_stage<0>(a, b, seq);
  dword_stage<1>(b, a, seq);
  dword_stage<2>(a, b, seq);
  for (int r = 0; r < 16; ++r) _mm512_store_si512(out + 64 * r, b[r]);
}

// vpermb indices for byte b (0..2) of each dword lane -> the lane's top byte.
struct alignas(64) QuadIndex {
  uint8_t idx[3][64];
};
constexpr QuadIndex make_quad_index() {
  QuadIndex q{};
  for (int b = 0; b < 3; ++b) {
    for (int j = 0; j < 16; ++j) q.idx[b][4 * j + 3] = static_cast<uint8_t>(4 * j + b);
  }
  return q;
}
inline constexpr QuadIndex kQuadIndex = make_quad_index();

// Lane j = (code b of lane j of `quads`) * 2^24 as float, exact.
inline __m512 quad_code_x2p24(__m512i quads, int b) {
  constexpr __mmask64 kTopBytes = 0x8888888888888888ull;
  if (b == 3) return _mm512_cvtepi32_ps(_mm512_maskz_mov_epi8(kTopBytes, quads));
  return _mm512_cvtepi32_ps(_mm512_maskz_permutexvar_epi8(kTopBytes, _mm512_load_si512(kQuadIndex.idx[b]), quads));
}

#endif  // __AVX512VBMI__


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

// Where transpose_tile puts the kLanes<I> codes of (k, column batch v): wt + code_offset<I>(k, v).
template <Isa I>
constexpr int code_offset(int k, int v) {
  if constexpr (I == Isa::kAvx512vnni) return vbmi_code_offset(k, v);
  return k * 32 + v * kLanes<I>;
}

// A tile's codes as int8, transposed so that each k's codes of a column batch are contiguous:
// generic layout wt[k * 32 + c] = w[c][k]; avx512vnni: the VBMI layout above.
template <Isa I>
inline void transpose_tile(const uint8_t* tile, tb_prec prec, int8_t* wt) {
#if defined(__AVX512VBMI__)
  if constexpr (I == Isa::kAvx512vnni) {
    transpose_tile_vbmi(tile, prec, wt);
    return;
  }
#endif
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
// `ahead`: as group_dots_vnni (other tags ignore it; their callers prefetch before the tile).
template <Isa I, int NR>
inline void group_dots(const uint8_t* tile, tb_prec prec, const int8_t* const* xr,
                       const int32_t* const* xsum, int64_t g, int32_t (*isum)[32],
                       const char* ahead = nullptr, int lines = 0) {
#if defined(__AVX512VBMI__)
  if constexpr (I == Isa::kAvx512vnni) {
    group_dots_vnni<NR>(tile, prec, xr, xsum, g, isum, ahead, lines);
    return;
  }
#endif
  (void)xsum;
  (void)ahead;
  (void)lines;
  alignas(64) int8_t unpacked[32 * 32];
  const int8_t* cm = reinterpret_cast<const int8_t*>(tile);  // (32 columns, 32 k)
  if (prec == TB_PREC_Q4) {
    unpack_q4_tile<I>(tile, unpacked);
    cm = unpacked;
  }
#if defined(__aarch64__)
  if constexpr (kIsNeon<I>) {
    for (int r = 0; r < NR; ++r) {
      if constexpr (I == Isa::kNeonDotprod) {
        group_dot_row_sdot(cm, xr[r] + g * 32, isum[r]);
      } else {
        group_dot_row_neon(cm, xr[r] + g * 32, isum[r]);
      }
    }
    return;
  }
#endif
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
