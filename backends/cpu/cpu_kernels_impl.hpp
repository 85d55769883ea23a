// The kernel templates of the CPU backend, written once over the instruction-set tag I and
// instantiated per tag by isa/kernels_<tag>.cpp (each compiled with that tag's flags). The
// contract each one implements is stated in cpu_kernels.h; the generic code is xsimd over
// FBatch<I>, and the tag-specific fast paths sit inside `if constexpr` with the generic path
// below them (cpu_kernels_x86.hpp).
//
// Include only from isa/*.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_expf_simd.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/cpu_kernels_x86.hpp"
#include "backends/cpu/cpu_simd.h"
#include "core/numerics.h"
#include "core/tb_expf.h"

namespace twinbit::cpu::detail {

// The slice accumulation and fixed-order fold of both gemm modes, for NR rows x 32 columns
// (one lane per column):  a_z = fma(p[g], t[g], a_z) over the slice's groups, ascending;
// out = out + a_z after the slice's last group.
template <Isa I, int NR>
struct SliceAccumulator {
  static constexpr int W = kLanes<I>;
  static constexpr int V = 32 / W;  // batches per 32 columns
  using F = FBatch<I>;

  F a[NR][V];    // (NR rows, 32 columns): the open slice
  F out[NR][V];  // (NR rows, 32 columns): the fold of the closed slices
  int64_t ngroups, nsplit, z = 0, group_end;

  SliceAccumulator(int64_t ngroups_, int64_t nsplit_) : ngroups(ngroups_), nsplit(nsplit_) {
    for (int r = 0; r < NR; ++r) {
      for (int v = 0; v < V; ++v) a[r][v] = out[r][v] = F(0.0f);
    }
    group_end = slice_end(ngroups, nsplit, 0);
  }
  void add(int r, int v, const F& p, const F& t) { a[r][v] = fma_exact<I>(p, t, a[r][v]); }
  // Call after group g was added for every row and column.
  void end_group(int64_t g) {
    if (g + 1 != group_end) return;
    for (int r = 0; r < NR; ++r) {
      for (int v = 0; v < V; ++v) {
        out[r][v] = out[r][v] + a[r][v];
        a[r][v] = F(0.0f);
      }
    }
    if (++z < nsplit) group_end = slice_end(ngroups, nsplit, z);
  }
  // Writes columns [n0, n0 + ncols) of rows [row0, row0 + NR).
  void store(float* y, int64_t ldy, int64_t row0, int64_t n0, int64_t ncols) const {
    alignas(64) float buf[32];
    for (int r = 0; r < NR; ++r) {
      for (int v = 0; v < V; ++v) out[r][v].store_aligned(buf + v * W);
      std::memcpy(y + (row0 + r) * ldy + n0, buf, static_cast<size_t>(ncols) * sizeof(float));
    }
  }
};

// Software prefetch of the tile GemmParams::prefetch_bytes ahead (strips are contiguous, so
// "ahead" runs on into the next strip): the kernels consume a tile per ~30-60 ns per thread,
// faster than the hardware prefetchers ramp up on a fresh strip. Prefetches never fault, even
// past the end. 0 turns them off. The distance is in bytes (the best distance measured about the
// same for q8 and q4), and the lines go into L2 only (prefetch_line; the measurements:
// docs/results/cpu-kernel-choices.md).
inline int64_t prefetch_tiles(const GemmParams& p, int64_t tile_bytes) { return p.prefetch_bytes / tile_bytes; }
inline void prefetch_ahead(const GemmParams& p, const uint8_t* tile, int64_t tile_bytes) {
  if (p.prefetch_bytes > 0) {
    const char* a = reinterpret_cast<const char*>(tile + prefetch_tiles(p, tile_bytes) * tile_bytes);
    for (int64_t b = 0; b < tile_bytes; b += 64) prefetch_line(a + b);
  }
}

// gemm, mode F32, the row kernel's step over groups [g0, g0 + gs) (gs <= GS) of one strip, tile
// path: transpose each tile into L1, then per k and column batch a sign-extend + convert shared
// by the NR rows. With GS = 2 two groups' chains run side by side (a chain is 32 dependent fmas,
// 4 cycles each: one group's chains alone are too few to hide the latency); they are independent
// until the slice accumulation, which still takes g0, then g0 + 1.
template <Isa I, int NR, int GS>
void f32_groups_tile(const GemmParams& p, int64_t strip, int64_t g0, int gs, const float* const* xr,
                     SliceAccumulator<I, NR>& acc) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>, V = 32 / W;
  const int64_t tb = p.tile_bytes;
  alignas(64) int8_t wt[GS][32 * 32];  // (GS groups, the tile transposed: see code_offset)
  alignas(64) float ws[GS][32];        // (GS groups, 32 columns) weight scales
  F dot[GS][NR][V];  // (groups, rows, 32 columns): p[g], one sequential fma chain per lane
  for (int j = 0; j < GS; ++j) {
    const int64_t tile = strip * p.ngroups + g0 + (j < gs ? j : 0);
    prefetch_ahead(p, p.codes + tile * tb, tb);
    transpose_tile<I>(p.codes + tile * tb, p.prec, wt[j]);
    load_scales32<I>(p.scales + tile * 32, ws[j]);
    for (int r = 0; r < NR; ++r) {
      for (int v = 0; v < V; ++v) dot[j][r][v] = F(0.0f);
    }
  }
  for (int kk = 0; kk < 32; ++kk) {
    for (int j = 0; j < GS; ++j) {
      // (With gs < GS the extra chain recomputes group g0 and is discarded.)
      const int64_t xk = (g0 + (j < gs ? j : 0)) * 32 + kk;
      F xb[NR];
      for (int r = 0; r < NR; ++r) xb[r] = F(xr[r][xk]);
      for (int v = 0; v < V; ++v) {
        const F wf = load_i8_as_f32<I>(wt[j] + code_offset<I>(kk, v));  // shared by the NR rows
        for (int r = 0; r < NR; ++r) dot[j][r][v] = fma_exact<I>(wf, xb[r], dot[j][r][v]);
      }
    }
  }
  for (int j = 0; j < gs; ++j) {
    for (int v = 0; v < V; ++v) {
      const F wsv = F::load_aligned(ws[j] + v * W);
      for (int r = 0; r < NR; ++r) acc.add(r, v, dot[j][r][v], wsv);
    }
    acc.end_group(g0 + j);
  }
}

#if defined(__AVX512VBMI__)
// The same step on the spread path (avx512vnni; cpu_kernels_x86.hpp): the same chains, the same
// fma operands as real numbers (code * 2^24 times x * 2^-24), so the same bits. Returns false,
// having done nothing, when some x * 2^-24 of these groups is not exact; the caller then takes
// the tile path for them.
// The next tiles' software prefetches are issued a few at a time inside the k loop, not all 16
// lines of a tile before it (which measured slower: docs/results/cpu-kernel-choices.md).
template <int NR, int GS>
bool f32_groups_spread(const GemmParams& p, int64_t strip, int64_t g0, int gs, const float* const* xr,
                       SliceAccumulator<Isa::kAvx512vnni, NR>& acc) {
  using F = FBatch<Isa::kAvx512vnni>;
  alignas(64) float xs[GS][NR][32];  // (groups, rows, 32 k) x * 2^-24
  const __m512 down = _mm512_set1_ps(0x1p-24f), up = _mm512_set1_ps(0x1p24f);
  __mmask16 exact = 0xffff;
  for (int j = 0; j < GS; ++j) {
    const int64_t g = g0 + (j < gs ? j : 0);
    for (int r = 0; r < NR; ++r) {
      for (int h = 0; h < 2; ++h) {
        const __m512 x = _mm512_loadu_ps(xr[r] + g * 32 + 16 * h);
        const __m512 s = _mm512_mul_ps(x, down);
        exact &= _mm512_cmp_ps_mask(_mm512_mul_ps(s, up), x, _CMP_EQ_OQ);  // NaN: unordered, false
        _mm512_store_ps(xs[j][r] + 16 * h, s);
      }
    }
  }
  if (exact != 0xffff) return false;
  const int64_t tb = p.tile_bytes;
  alignas(64) int8_t st[GS][32 * 32];  // (groups, 16 registers (h, q): the dword transpose)
  alignas(64) float ws[GS][32];
  for (int j = 0; j < GS; ++j) {
    const int64_t tile = strip * p.ngroups + g0 + (j < gs ? j : 0);
    spread_tile_to_quads(p.codes + tile * tb, p.prec, st[j]);
    load_scales32<Isa::kAvx512vnni>(p.scales + tile * 32, ws[j]);
  }
  __m512 dot[GS][NR][2];  // (groups, rows, halves): one sequential fma chain per lane
  for (int j = 0; j < GS; ++j) {
    for (int r = 0; r < NR; ++r) dot[j][r][0] = dot[j][r][1] = _mm512_setzero_ps();
  }
  // The GS tiles prefetch_bytes ahead: GS * tb / 64 lines, tb / 256 per q step and group.
  const char* ahead = reinterpret_cast<const char*>(p.codes + (strip * p.ngroups + g0 + prefetch_tiles(p, tb)) * tb);
  const int64_t lines_per_q = tb / 512;  // per q step, per group: q8 2, q4 1 lines
  const bool spread_prefetch = p.prefetch_bytes > 0;  // hoisted out of the k loop
  for (int q = 0; q < 8; ++q) {  // k = 4q .. 4q+3: the same registers
    if (spread_prefetch) {
      for (int j = 0; j < GS; ++j) {
        for (int64_t l = 0; l < lines_per_q; ++l) {
          _mm_prefetch(ahead + j * tb + (q * lines_per_q + l) * 64, _MM_HINT_T1);
        }
      }
    }
    __m512i src[GS][2];          // (groups, halves)
    for (int j = 0; j < GS; ++j) {
      for (int h = 0; h < 2; ++h) src[j][h] = _mm512_load_si512(st[j] + 64 * (h * 8 + q));
    }
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      const int kk = 4 * q + b;
      for (int j = 0; j < GS; ++j) {
        for (int h = 0; h < 2; ++h) {
          const __m512 w = quad_code_x2p24(src[j][h], b);  // shared by the rows
          for (int r = 0; r < NR; ++r) dot[j][r][h] = _mm512_fmadd_ps(w, _mm512_set1_ps(xs[j][r][kk]), dot[j][r][h]);
        }
      }
    }
  }
  for (int j = 0; j < gs; ++j) {
    for (int h = 0; h < 2; ++h) {
      const F wsv = F::load_aligned(ws[j] + 16 * h);
      for (int r = 0; r < NR; ++r) acc.add(r, h, F(dot[j][r][h]), wsv);
    }
    acc.end_group(g0 + j);
  }
  return true;
}
#endif  // __AVX512VBMI__

// gemm, mode F32: one strip (32 columns) x NR rows starting at row0. NR <= 2 (decode) keeps two
// groups in flight (GS = 2, see f32_groups_tile).
template <Isa I, int NR>
void gemm_f32_strip(const GemmParams& p, int64_t strip, int64_t row0) {
  constexpr int GS = NR <= 2 ? 2 : 1;  // groups in flight
  SliceAccumulator<I, NR> acc(p.ngroups, p.nsplit);
  const float* xr[NR];
  for (int r = 0; r < NR; ++r) xr[r] = p.x + (row0 + r) * p.ldx;
  for (int64_t g0 = 0; g0 < p.ngroups; g0 += GS) {
    const int gs = static_cast<int>(std::min<int64_t>(GS, p.ngroups - g0));
#if defined(__AVX512VBMI__)
    if constexpr (I == Isa::kAvx512vnni && NR <= 2) {
      if (f32_groups_spread<NR, GS>(p, strip, g0, gs, xr, acc)) continue;
    }
#endif
    f32_groups_tile<I, NR, GS>(p, strip, g0, gs, xr, acc);
  }
  acc.store(p.y, p.ldy, row0, strip * 32, std::min<int64_t>(32, p.n - strip * 32));
}

// gemm, mode F32, NR >= 16 rows (prefill): tile-outer. Each tile is transposed and converted to
// floats ONCE for all NR rows (a 4 KiB float tile in L1), then 8-row sub-blocks run their 16 fma
// chains reading the float codes with plain loads - no sign-extend or convert on the FMA ports.
// Per row the operations are those of gemm_f32_strip: the dot chain sequential in k, the slice
// step after it, groups ascending.
template <Isa I, int NR>
void gemm_f32_strip_tile_outer(const GemmParams& p, int64_t strip, int64_t row0) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>, V = 32 / W, SUB = 8;
  static_assert(NR % SUB == 0, "tile-outer rows come in 8-row sub-blocks");
  SliceAccumulator<I, NR> acc(p.ngroups, p.nsplit);  // (NR rows, 32 columns): in memory
  const int64_t tb = p.tile_bytes;
  alignas(64) int8_t wt[32 * 32];  // the tile transposed (code_offset layout)
  alignas(64) float wf[32 * 32];   // (32 k, 32 columns) the codes as floats
  alignas(64) float ws[32];
  for (int64_t g = 0; g < p.ngroups; ++g) {
    const int64_t tile = strip * p.ngroups + g;
    prefetch_ahead(p, p.codes + tile * tb, tb);
    transpose_tile<I>(p.codes + tile * tb, p.prec, wt);
    load_scales32<I>(p.scales + tile * 32, ws);
    for (int kk = 0; kk < 32; ++kk) {
      for (int v = 0; v < V; ++v) load_i8_as_f32<I>(wt + code_offset<I>(kk, v)).store_aligned(wf + kk * 32 + v * W);
    }
    for (int rb = 0; rb < NR; rb += SUB) {
      const float* xr[SUB];
      for (int r = 0; r < SUB; ++r) xr[r] = p.x + (row0 + rb + r) * p.ldx + g * 32;
      F dot[SUB][V];
      for (int r = 0; r < SUB; ++r) {
        for (int v = 0; v < V; ++v) dot[r][v] = F(0.0f);
      }
      for (int kk = 0; kk < 32; ++kk) {
        F xb[SUB];
        for (int r = 0; r < SUB; ++r) xb[r] = F(xr[r][kk]);
        for (int v = 0; v < V; ++v) {
          const F wv = F::load_aligned(wf + kk * 32 + v * W);
          for (int r = 0; r < SUB; ++r) dot[r][v] = fma_exact<I>(wv, xb[r], dot[r][v]);
        }
      }
      for (int v = 0; v < V; ++v) {
        const F wsv = F::load_aligned(ws + v * W);
        for (int r = 0; r < SUB; ++r) acc.add(rb + r, v, dot[r][v], wsv);
      }
    }
    acc.end_group(g);
  }
  acc.store(p.y, p.ldy, row0, strip * 32, std::min<int64_t>(32, p.n - strip * 32));
}

// gemm, mode I8: one strip x NR rows. The group dots are exact int32 (group_dots, any order).
template <Isa I, int NR>
void gemm_i8_strip(const GemmParams& p, int64_t strip, int64_t row0) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>, V = 32 / W;
  SliceAccumulator<I, NR> acc(p.ngroups, p.nsplit);
  const int64_t tb = p.tile_bytes;
  alignas(64) int32_t isum[NR][32];  // (NR rows, 32 columns) exact group dots
  alignas(64) float ws[32];
  const int8_t* xr[NR];
  const int32_t* sr[NR];
  for (int r = 0; r < NR; ++r) {
    xr[r] = p.xq + (row0 + r) * p.ldxq;
    sr[r] = p.xsum ? p.xsum + (row0 + r) * p.ngroups : nullptr;
  }
  // The spread prefetch exists on the avx512vnni tag (group_dots_vnni); elsewhere a burst.
  const bool spread = I == Isa::kAvx512vnni && p.prefetch_bytes > 0;
  for (int64_t g = 0; g < p.ngroups; ++g) {
    const int64_t tile = strip * p.ngroups + g;
    const uint8_t* t = p.codes + tile * tb;
    if (spread) {
      group_dots<I, NR>(t, p.prec, xr, sr, g, isum, reinterpret_cast<const char*>(t + prefetch_tiles(p, tb) * tb),
                        static_cast<int>(tb / 64));
    } else {
      prefetch_ahead(p, t, tb);
      group_dots<I, NR>(t, p.prec, xr, sr, g, isum);
    }
    load_scales32<I>(p.scales + tile * 32, ws);
    F xdb[NR];
    for (int r = 0; r < NR; ++r) xdb[r] = F(p.xd[(row0 + r) * p.ldxd + g]);
    for (int v = 0; v < V; ++v) {
      const F wsv = F::load_aligned(ws + v * W);
      for (int r = 0; r < NR; ++r) {
        const F pf = load_i32_as_f32<I>(isum[r] + v * W);  // exact: |isum| <= 516128
        acc.add(r, v, pf, wsv * xdb[r]);                    // t = ws * xd, one rounding
      }
    }
    acc.end_group(g);
  }
  acc.store(p.y, p.ldy, row0, strip * 32, std::min<int64_t>(32, p.n - strip * 32));
}

// Rows in groups of four (prefill: four rows share each tile's transpose and conversion), then
// the row kernel for the remainder; the bits of a row do not depend on which kernel ran it.
// Both modes also have an 8-row group: in the F32 mode 16 independent fma chains per tile keep
// both FMA ports busy (latency 4 x 2 ports needs >= 8 chains; conversions share the ports); in
// the I8 mode the tile transpose is shared by twice the rows. And a 32-row group (kMaxRows = 32)
// that prepares each tile once for 32 rows (F32: gemm_f32_strip_tile_outer; I8: group_dots
// with 32 rows, accumulators in L1).
template <Isa I, template <Isa, int> class Strip, int kMaxRows>
struct RowGrouping {
  static void run(const GemmParams& p, int64_t s0, int64_t s1, int64_t r0, int64_t r1) {
    for (int64_t s = s0; s < s1; ++s) {
      int64_t r = r0;
      if constexpr (kMaxRows >= 32) {
        for (; r + 32 <= r1; r += 32) Strip<I, 32>::run(p, s, r);
      }
      if constexpr (kMaxRows >= 8) {
        for (; r + 8 <= r1; r += 8) Strip<I, 8>::run(p, s, r);
      }
      for (; r + 4 <= r1; r += 4) Strip<I, 4>::run(p, s, r);
      switch (r1 - r) {
        case 3: Strip<I, 3>::run(p, s, r); break;
        case 2: Strip<I, 2>::run(p, s, r); break;
        case 1: Strip<I, 1>::run(p, s, r); break;
        default: break;
      }
    }
  }
};
template <Isa I, int NR> struct F32Strip {
  static void run(const GemmParams& p, int64_t s, int64_t r) {
    if constexpr (NR >= 16) {
      gemm_f32_strip_tile_outer<I, NR>(p, s, r);
    } else {
      gemm_f32_strip<I, NR>(p, s, r);
    }
  }
};
template <Isa I, int NR> struct I8Strip { static void run(const GemmParams& p, int64_t s, int64_t r) { gemm_i8_strip<I, NR>(p, s, r); } };

template <Isa I>
void gemm_f32(const GemmParams& p, int64_t s0, int64_t s1, int64_t r0, int64_t r1) {
  RowGrouping<I, F32Strip, 32>::run(p, s0, s1, r0, r1);
}
template <Isa I>
void gemm_i8(const GemmParams& p, int64_t s0, int64_t s1, int64_t r0, int64_t r1) {
  RowGrouping<I, I8Strip, 32>::run(p, s0, s1, r0, r1);
}

// gemv_f32: lane l of the reference's 32 lanes is lane l % W of batch l / W.
template <Isa I>
void gemv_f32(const tb_matrix_f32& w, const float* x, float* y, int64_t r0, int64_t r1) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>, V = 32 / W;
  const int64_t full = (w.cols / 32) * 32;
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = w.data + r * w.cols;
    F s[V];
    for (int v = 0; v < V; ++v) s[v] = F(0.0f);
    for (int64_t c0 = 0; c0 < full; c0 += 32) {
      for (int v = 0; v < V; ++v) {
        s[v] = fma_exact<I>(F::load_unaligned(row + c0 + v * W), F::load_unaligned(x + c0 + v * W), s[v]);
      }
    }
    alignas(64) float lane[32];
    for (int v = 0; v < V; ++v) s[v].store_aligned(lane + v * W);
    // The partial last block: only lanes that own a column take a step (a zero-padded fma
    // would turn a -0 lane into +0).
    for (int64_t l = 0; l < w.cols - full; ++l) lane[l] = std::fma(row[full + l], x[full + l], lane[l]);
    for (int off = 16; off >= 1; off /= 2) {
      for (int l = 0; l < off; ++l) lane[l] = lane[l] + lane[l + off];
    }
    y[r] = lane[0];
  }
}

// gdn_delta for one value head, columns dv in [dv0, dv0 + NB*W): NB batches of W columns whose
// accumulators stay in registers through one pass over the state per phase. kNB > 0 fixes the
// count at compile time (the kd == vd == 128 fast path); kNB == 0 takes nb at run time.
template <Isa I, int kNB>
void gdn_columns(const tb_gdn_args& a, int64_t vi, int64_t dv0, int nb_runtime, float alpha) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>;
  constexpr int kMax = kNB > 0 ? kNB : 8;
  const int nb = kNB > 0 ? kNB : nb_runtime;
  const int64_t per_key = a.vh / a.kh;
  const float* q = a.q + (vi / per_key) * a.kd;
  const float* k = a.k + (vi / per_key) * a.kd;
  float* S = a.state + vi * a.kd * a.vd;  // (kd, vd)
  const F alpha_b(alpha), beta_b(a.beta[vi]);
  F kv[kMax], tmp[kMax], oa[kMax];
  for (int b = 0; b < nb; ++b) kv[b] = oa[b] = F(0.0f);
  for (int64_t dk = 0; dk < a.kd; ++dk) {
    const F kb(k[dk]);
    float* srow = S + dk * a.vd + dv0;
    for (int b = 0; b < nb; ++b) {
      const F t = F::load_unaligned(srow + b * W) * alpha_b;
      t.store_unaligned(srow + b * W);
      kv[b] = fma_exact<I>(t, kb, kv[b]);
    }
  }
  for (int b = 0; b < nb; ++b) {
    tmp[b] = (F::load_unaligned(a.v + vi * a.vd + dv0 + b * W) - kv[b]) * beta_b;
  }
  for (int64_t dk = 0; dk < a.kd; ++dk) {
    const F kb(k[dk]), qb(q[dk]);
    float* srow = S + dk * a.vd + dv0;
    for (int b = 0; b < nb; ++b) {
      const F t = fma_exact<I>(kb, tmp[b], F::load_unaligned(srow + b * W));
      t.store_unaligned(srow + b * W);
      oa[b] = fma_exact<I>(t, qb, oa[b]);
    }
  }
  for (int b = 0; b < nb; ++b) oa[b].store_unaligned(a.o + vi * a.vd + dv0 + b * W);
}

// The reference's scalar steps for one column dv (the tail past the last full batch).
template <Isa I>
inline void gdn_column_scalar(const tb_gdn_args& a, int64_t vi, int64_t dv, float alpha) {
  const int64_t per_key = a.vh / a.kh;
  const float* q = a.q + (vi / per_key) * a.kd;
  const float* k = a.k + (vi / per_key) * a.kd;
  float* S = a.state + vi * a.kd * a.vd;
  float kv = +0.0f;
  for (int64_t dk = 0; dk < a.kd; ++dk) {
    const float t = S[dk * a.vd + dv] * alpha;
    S[dk * a.vd + dv] = t;
    kv = std::fma(t, k[dk], kv);
  }
  const float tmp = (a.v[vi * a.vd + dv] - kv) * a.beta[vi];
  float oa = +0.0f;
  for (int64_t dk = 0; dk < a.kd; ++dk) {
    const float t = std::fma(k[dk], tmp, S[dk * a.vd + dv]);
    S[dk * a.vd + dv] = t;
    oa = std::fma(t, q[dk], oa);
  }
  a.o[vi * a.vd + dv] = oa;
}

template <Isa I>
void gdn_delta(const tb_gdn_args& a, int64_t h0, int64_t h1) {
  constexpr int W = kLanes<I>;
  for (int64_t vi = h0; vi < h1; ++vi) {
    const float alpha = tb_expf(a.g[vi]);  // scalar tb_expf: the same bits as every SIMD lane
    if (a.kd == 128 && a.vd == 128) {
      // Fast path: 128 columns = 128 / W batches held in registers (avx512: 8 zmm per phase).
      if constexpr (128 / W <= 8) {
        gdn_columns<I, 128 / W>(a, vi, 0, 0, alpha);
      } else {
        for (int64_t dv0 = 0; dv0 < 128; dv0 += 8 * W) gdn_columns<I, 8>(a, vi, dv0, 8, alpha);
      }
      continue;
    }
    const int64_t full = (a.vd / W) * W;
    for (int64_t dv0 = 0; dv0 < full; dv0 += 8 * W) {
      gdn_columns<I, 0>(a, vi, dv0, static_cast<int>(std::min<int64_t>(8, (full - dv0) / W)), alpha);
    }
    for (int64_t dv = full; dv < a.vd; ++dv) gdn_column_scalar<I>(a, vi, dv, alpha);
  }
}

template <Isa I>
void expf_n(const float* in, float* out, int64_t count) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>;
  int64_t i = 0;
  for (; i + W <= count; i += W) tb_expf_simd<I>(F::load_unaligned(in + i)).store_unaligned(out + i);
  for (; i < count; ++i) out[i] = tb_expf(in[i]);
}

// The I8 activation quantiser (ref::quantize_activations): amax is exact in any order (NaN
// lanes never win a `>` compare, as in the reference), then one IEEE division, round half to
// even and the clamp to [-127, 127] per value (it bites only for a subnormal d), a NaN quotient
// giving 0 - all while still float, so no out-of-range value reaches the conversion.
template <Isa I>
void quantize(int64_t k, const float* x, int64_t ldx, int8_t* xq, int64_t ldxq, float* xd,
              int64_t ldxd, int32_t* xsum, int64_t r0, int64_t r1) {
  using F = FBatch<I>;
  constexpr int W = kLanes<I>, V = 32 / W;
  const int64_t ngroups = ngroups_of(k);
  alignas(64) float v[32];
  alignas(64) int32_t q[32];
  for (int64_t row = r0; row < r1; ++row) {
    for (int64_t g = 0; g < ngroups; ++g) {
      const int64_t base = g * 32;
      const int64_t have = std::min<int64_t>(32, k - base);
      std::memcpy(v, x + row * ldx + base, static_cast<size_t>(have) * sizeof(float));
      for (int64_t kk = have; kk < 32; ++kk) v[kk] = +0.0f;
      F amax(0.0f);
      for (int b = 0; b < V; ++b) {
        const F av = xsimd::abs(F::load_aligned(v + b * W));
        amax = xsimd::select(av > amax, av, amax);
      }
      alignas(64) float lanes[W];
      amax.store_aligned(lanes);
      float m = +0.0f;
      for (int l = 0; l < W; ++l) m = lanes[l] > m ? lanes[l] : m;
      const float d = m / 127.0f;
      int32_t sum = 0;
      if (d == 0.0f) {
        for (int kk = 0; kk < 32; ++kk) q[kk] = 0;
      } else {
        const F db(d), lo(-127.0f), hi(127.0f), zero(0.0f);
        for (int b = 0; b < V; ++b) {
          const F r = xsimd::nearbyint(div_exact<I>(F::load_aligned(v + b * W), db));
          const F code = xsimd::select(r == r, xsimd::min(xsimd::max(r, lo), hi), zero);
          xsimd::to_int(code).store_aligned(q + b * W);
        }
      }
      for (int kk = 0; kk < 32; ++kk) {
        xq[row * ldxq + base + kk] = static_cast<int8_t>(q[kk]);
        sum += q[kk];
      }
      xd[row * ldxd + g] = d;
      if (xsum) xsum[row * ngroups + g] = sum;
    }
  }
}

// The read floor: wide loads, xor-combined in four independent registers (no dependency chain
// slower than the loads themselves).
template <Isa I>
uint64_t read_bytes(const uint8_t* bytes, int64_t count, int64_t prefetch_bytes) {
  using U = xsimd::batch<uint64_t, Arch<I>>;
  constexpr int64_t B = static_cast<int64_t>(sizeof(U));
  U acc[4] = {U(uint64_t{0}), U(uint64_t{0}), U(uint64_t{0}), U(uint64_t{0})};
  const uint64_t* p = reinterpret_cast<const uint64_t*>(bytes);
  constexpr int64_t E = B / 8;  // uint64 per batch
  int64_t i = 0;
  const int64_t words = count / 8;
  // The kernels' software prefetch (same distance, into L2), one line per 64 bytes read: the floor
  // streams at least as well as the kernels do.
  const char* ahead = reinterpret_cast<const char*>(bytes) + prefetch_bytes;
  int64_t next_line = 0;
  for (; i + 4 * E <= words; i += 4 * E) {
    if (prefetch_bytes > 0) {
      for (; next_line <= (i + 4 * E) * 8; next_line += 64) prefetch_line(ahead + next_line);
    }
    for (int j = 0; j < 4; ++j) acc[j] = acc[j] ^ U::load_unaligned(p + i + j * E);
  }
  uint64_t s = 0;
  for (int j = 0; j < 4; ++j) { alignas(64) uint64_t t[E]; acc[j].store_aligned(t); for (int64_t e = 0; e < E; ++e) s ^= t[e]; }
  for (; i < words; ++i) s ^= p[i];
  for (int64_t b = words * 8; b < count; ++b) s ^= bytes[b];
  return s;
}

}  // namespace twinbit::cpu::detail

namespace twinbit::cpu {

template <Isa I>
KernelTable make_kernel_table() {
  return KernelTable{
      .isa = I,
      .gemm_f32 = &detail::gemm_f32<I>,
      .gemm_i8 = &detail::gemm_i8<I>,
      .gemv_f32 = &detail::gemv_f32<I>,
      .gdn_delta = &detail::gdn_delta<I>,
      .expf = &detail::expf_n<I>,
      .read_bytes = &detail::read_bytes<I>,
      .quantize = &detail::quantize<I>,
  };
}

}  // namespace twinbit::cpu
