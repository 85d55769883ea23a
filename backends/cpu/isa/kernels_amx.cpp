// The amx tag's I8 gemm (cpu_amx.h says what and why), compiled with the avx512vnni flags plus
// -mamx-tile -mamx-int8 (backends/cpu/CMakeLists.txt). Raw intrinsics, no xsimd, everything in
// an anonymous namespace: no inline function of this file can be merged with another tag's copy.
//
// TWO SCHEDULES (GemmParams::amx_schedule, the spec key amx_schedule=auto|shared|quadrants; by
// default shared for 16 rows and quadrants past them, cpu_amx.h amx_schedule_for, measured in
// docs/results/cpu-amx-2026-12-06.md). 1, the shared one, is described at
// amx_strip_pass_shared. 0, the quadrant one, per strip (32 weight columns) and pass of up to
// 64 rows (4 row blocks):
// groups go in chunks of kChunk. Per chunk and quadrant (weight half h = columns 16h .. 16h+15,
// row block b) the 16 accumulators a_z (one zmm per weight column, one lane per row) stay in
// registers while the chunk's groups run in order:
//     tile load A (16 columns x 32 codes of group g), B (the packed 16 rows of group g),
//     zero C, C += A.B (TDPBSSD: isum, exact int32), store C (16 columns x 16 rows);
//     per column c: a_z[c] = fma(float(isum[c]), ws[c][g] * xd[g], a_z[c])   (16 lanes = rows)
//     after the slice's last group: out[c] = out[c] + a_z[c]; a_z[c] = +0.
// A group's tile work is issued one group pair ahead of its host work (two C tiles, two buffers),
// so the tile stores have landed before the vector loads read them. The chunk's codes (q8
// 16 KiB) stay in L1 for the four quadrants; the next chunk is prefetched into L2 a few lines
// per group step. q4 tiles are widened to codes once per chunk into a stack buffer.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_amx.h"
#include "core/numerics.h"

namespace twinbit::cpu {
namespace {

constexpr int kChunk = 16;      // groups per chunk
constexpr int kPassBlocks = 4;  // row blocks of 16 per pass over a strip

// Packed activations (GemmParams::xpack): one 576-byte record per (row block of 16, group),
// blocks outer: the B tile (8 quads x 16 rows x 4 codes), then the 16 rows' scales as floats.
// Rows past M hold code 0 and scale 0 (their results are never stored).
constexpr int64_t kBTileBytes = 512;
constexpr int64_t kRecordBytes = kBTileBytes + 16 * sizeof(float);
int64_t row_blocks(int64_t m) { return ceil_div(m, 16); }

int64_t pack_bytes(int64_t m, int64_t ngroups) {
  return m < kAmxMinRows ? 0 : row_blocks(m) * ngroups * kRecordBytes;
}

void pack(const GemmParams& p, int64_t m, void* out) {
  auto* bytes = static_cast<int8_t*>(out);
  std::memset(out, 0, static_cast<size_t>(pack_bytes(m, p.ngroups)));
  for (int64_t r = 0; r < m; ++r) {
    const int64_t b = r / 16, lane = r % 16;
    for (int64_t g = 0; g < p.ngroups; ++g) {
      int8_t* record = bytes + (b * p.ngroups + g) * kRecordBytes;
      const int8_t* x = p.xq + r * p.ldxq + g * 32;
      for (int q = 0; q < 8; ++q) std::memcpy(record + q * 64 + lane * 4, x + 4 * q, 4);
      const float d = p.xd[r * p.ldxd + g];
      std::memcpy(record + kBTileBytes + lane * 4, &d, 4);
    }
  }
}

// The tile configuration (palette 1): tiles 0, 1 = A (16 rows x 32 bytes), 2, 3 = B (8 rows x
// 64 bytes), 4 .. 7 = C (16 rows x 16 int32). Quadrant schedule: one group of a pair per
// A/B/C = 0/2/4 and 1/3/5. Shared schedule: C 4 + 2h + b = A h . B 2 + b for one group.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {32, 32, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 8, 8, 16, 16, 16, 16};
};
static_assert(sizeof(TileConfig) == 64);

// The tile instructions. ldtilecfg is inline asm with the configuration as a memory operand:
// GCC 12 has been seen to drop the stores of a configuration passed to _tile_loadconfig (the
// first tile instruction then faults), and an "m" operand makes the compiler write it first.
struct HardwareTiles {
  void configure() {
    static const TileConfig cfg;
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
  }
  void release() { _tile_release(); }
  // Pair slot u (0 or 1) uses tiles A = u, B = 2 + u, C = 4 + u. (GCC's tile intrinsics paste
  // the tile number into the assembly text, so each must be a literal.)
  void load_a(int u, const void* p, int64_t stride) { if (u == 0) _tile_loadd(0, p, stride); else _tile_loadd(1, p, stride); }
  void load_b(int u, const void* p, int64_t stride) { if (u == 0) _tile_loadd(2, p, stride); else _tile_loadd(3, p, stride); }
  void zero_c(int u) { if (u == 0) _tile_zero(4); else _tile_zero(5); }
  void dot(int u) { if (u == 0) _tile_dpbssd(4, 0, 2); else _tile_dpbssd(5, 1, 3); }
  void store_c(int u, void* p, int64_t stride) { if (u == 0) _tile_stored(4, p, stride); else _tile_stored(5, p, stride); }
  // The shared schedule's four C tiles, i = 2h + b: C 4 + i = A h . B 2 + b.
  void zero_q(int i) {
    switch (i) { case 0: _tile_zero(4); break; case 1: _tile_zero(5); break; case 2: _tile_zero(6); break; default: _tile_zero(7); }
  }
  void dot_q(int i) {
    switch (i) {
      case 0: _tile_dpbssd(4, 0, 2); break;
      case 1: _tile_dpbssd(5, 0, 3); break;
      case 2: _tile_dpbssd(6, 1, 2); break;
      default: _tile_dpbssd(7, 1, 3);
    }
  }
  void store_q(int i, void* p, int64_t stride) {
    switch (i) {
      case 0: _tile_stored(4, p, stride); break;
      case 1: _tile_stored(5, p, stride); break;
      case 2: _tile_stored(6, p, stride); break;
      default: _tile_stored(7, p, stride);
    }
  }
};

// The same instructions as plain code, for the tests (cpu_amx.h): TDPBSSD as the ISA manual
// defines it, C[m][n] += sum over k-quads q and bytes i of A[m][4q+i] * B[q][4n+i].
struct EmulatedTiles {
  alignas(64) uint8_t t[8][16][64];
  static constexpr int kRows[8] = {16, 16, 8, 8, 16, 16, 16, 16};
  static constexpr int kColsb[8] = {32, 32, 64, 64, 64, 64, 64, 64};
  void configure() { std::memset(t, 0, sizeof t); }
  void release() {}
  void load(int T, const void* p, int64_t stride) {
    for (int r = 0; r < kRows[T]; ++r) std::memcpy(t[T][r], static_cast<const uint8_t*>(p) + r * stride, kColsb[T]);
  }
  void load_a(int u, const void* p, int64_t stride) { load(u, p, stride); }
  void load_b(int u, const void* p, int64_t stride) { load(2 + u, p, stride); }
  void zero_c(int u) { std::memset(t[4 + u], 0, sizeof t[4 + u]); }
  void dot(int u) { dot_tiles(4 + u, u, 2 + u); }
  void zero_q(int i) { std::memset(t[4 + i], 0, sizeof t[4 + i]); }
  void dot_q(int i) { dot_tiles(4 + i, i / 2, 2 + i % 2); }
  void store_q(int i, void* p, int64_t stride) { store_tile(4 + i, p, stride); }
  void store_c(int u, void* p, int64_t stride) { store_tile(4 + u, p, stride); }
  void store_tile(int T, void* p, int64_t stride) {
    for (int r = 0; r < kRows[T]; ++r) std::memcpy(static_cast<uint8_t*>(p) + r * stride, t[T][r], kColsb[T]);
  }
  void dot_tiles(int C, int A, int B) {
    for (int m = 0; m < kRows[C]; ++m) {
      for (int n = 0; n < kColsb[C] / 4; ++n) {
        int32_t s;
        std::memcpy(&s, t[C][m] + 4 * n, 4);
        for (int q = 0; q < kColsb[A] / 4; ++q) {
          for (int i = 0; i < 4; ++i) {
            s += static_cast<int32_t>(static_cast<int8_t>(t[A][m][4 * q + i])) * static_cast<int8_t>(t[B][q][4 * n + i]);
          }
        }
        std::memcpy(t[C][m] + 4 * n, &s, 4);
      }
    }
  }
};

// q4 tiles (32 columns x 16 bytes: byte j = code k=j in the low nibble, k=j+16 in the high one,
// both stored + 8) -> q8 tiles (32 columns x 32 signed codes).
void widen_q4_tiles(const uint8_t* q4, int64_t tiles, int8_t* out) {
  const __m512i mask = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i odd = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int64_t i = 0; i < tiles * 8; ++i) {  // 64 bytes = 4 columns each
    const __m512i v = _mm512_loadu_si512(q4 + 64 * i);
    const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(v, mask), eight);
    const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight);
    _mm512_store_si512(out + 128 * i, _mm512_permutex2var_epi64(lo, even, hi));
    _mm512_store_si512(out + 128 * i + 64, _mm512_permutex2var_epi64(lo, odd, hi));
  }
}

// Columns 16h .. 16h+15 of strip s, rows [max(r_begin, row_lo), min(r_begin + 16, row_end)), from the
// (column, row) fold of one quadrant: a row's 16 columns are a stride-16 gather, stored masked to
// the columns that exist (masked-off lanes never touch memory).
void write_quadrant(const GemmParams& p, const float (*out)[16], int64_t s, int h, int64_t r_begin, int64_t row_lo,
                    int64_t row_end) {
  const int64_t n0 = s * 32 + 16 * h;
  const int64_t c_end = std::min<int64_t>(16, p.n - n0);
  if (c_end <= 0) return;  // a last strip's second half past N
  const __m512i column_stride = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                    _mm512_set1_epi32(16));
  const __mmask16 columns = static_cast<__mmask16>((1u << c_end) - 1);
  const int64_t r_end = std::min(row_end, r_begin + 16);
  for (int64_t r = std::max(r_begin, row_lo); r < r_end; ++r) {
    const __m512 row = _mm512_i32gather_ps(column_stride, &out[0][r - r_begin], 4);
    _mm512_mask_storeu_ps(p.y + r * p.ldy + n0, columns, row);
  }
}

// One pass: strip s, row blocks [b0, b0 + nb) (nb <= kPassBlocks), rows [row_lo, row_end) written.
template <class Tiles>
void amx_strip_pass(Tiles& tiles, const GemmParams& p, int64_t s, int64_t b0, int nb, int64_t row_lo,
                    int64_t row_end) {
  const int64_t ng = p.ngroups, tb = p.tile_bytes;
  const auto* records = static_cast<const int8_t*>(p.xpack);
  const int nq = 2 * nb;  // quadrants: q = h * nb + b
  alignas(64) float acc_mem[2 * kPassBlocks][16][16];  // (quadrant, column, row): the open slice
  alignas(64) float out_mem[2 * kPassBlocks][16][16];  // the closed slices' fold
  alignas(64) int32_t isum[2][2][16][16];              // (buffer, group of the pair, column, row)
  alignas(64) float ws[kChunk][32];                    // the chunk's weight scales
  alignas(64) int8_t wide[kChunk][1024];               // q4: the chunk's tiles as codes
  std::memset(acc_mem, 0, sizeof acc_mem);             // +0.0f
  std::memset(out_mem, 0, sizeof out_mem);
  const bool q4 = p.prec == TB_PREC_Q4;
  for (int64_t c0 = 0; c0 < ng; c0 += kChunk) {
    const int cn = static_cast<int>(std::min<int64_t>(kChunk, ng - c0));
    const uint8_t* chunk = p.codes + (s * ng + c0) * tb;
    const int8_t* a_base = reinterpret_cast<const int8_t*>(chunk);
    if (q4) {
      widen_q4_tiles(chunk, cn, &wide[0][0]);
      a_base = &wide[0][0];
    }
    for (int j = 0; j < cn; ++j) {
      for (int h = 0; h < 2; ++h) {
        _mm512_store_ps(ws[j] + 16 * h, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.scales + (s * ng + c0 + j) * 32 + 16 * h))));
      }
    }
    // The next chunk's codes (running on into the next strip), spread over this chunk's steps.
    const char* ahead = reinterpret_cast<const char*>(chunk + static_cast<int64_t>(cn) * tb);
    const int64_t ahead_lines = kChunk * tb / 64;
    const int64_t per_step = p.prefetch_bytes > 0 ? ceil_div(ahead_lines, int64_t{nq} * cn) : 0;
    int64_t next_line = 0;
    for (int q = 0; q < nq; ++q) {
      const int h = q / nb, b = q % nb;
      const int8_t* a_tiles = a_base + h * 512;  // A of group c0 + j at a_tiles + j * 1024
      const int64_t a_stride = q4 ? 1024 : tb;
      const int8_t* block = records + (b0 + b) * ng * kRecordBytes;  // record of group g: + g * kRecordBytes
      __m512 acc[16];
      for (int c = 0; c < 16; ++c) acc[c] = _mm512_load_ps(acc_mem[q][c]);
      int64_t z = 0;
      while (slice_end(ng, p.nsplit, z) <= c0) ++z;
      int64_t group_end = slice_end(ng, p.nsplit, z);
      // Tile work of groups [j, j + 2) of the chunk into isum[(j / 2) % 2].
      auto tile_pair = [&](int j) {
        const int64_t g = c0 + j;
        int32_t (*dst)[16][16] = isum[(j / 2) % 2];
        const int pair = std::min(2, cn - j);
        for (int u = 0; u < pair; ++u) {
          tiles.load_a(u, a_tiles + (j + u) * a_stride, 32);
          tiles.load_b(u, block + (g + u) * kRecordBytes, 64);
          tiles.zero_c(u);
          tiles.dot(u);
        }
        for (int u = 0; u < pair; ++u) tiles.store_c(u, dst[u], 64);
      };
      tile_pair(0);
      for (int j = 0; j < cn; j += 2) {
        int32_t (*held)[16][16] = isum[(j / 2) % 2];  // this pair's sums; the next pair's go to the other buffer
        if (j + 2 < cn) tile_pair(j + 2);
        for (int64_t l = 0; l < per_step * 2 && next_line < ahead_lines; ++l, ++next_line) {
          _mm_prefetch(ahead + next_line * 64, _MM_HINT_T1);
        }
        for (int u = 0; u < 2 && j + u < cn; ++u) {
          const int64_t g = c0 + j + u;
          const __m512 xd = _mm512_loadu_ps(reinterpret_cast<const float*>(block + g * kRecordBytes + kBTileBytes));
          const float* w = ws[j + u] + 16 * h;
#pragma GCC unroll 16
          for (int c = 0; c < 16; ++c) {
            const __m512 pf = _mm512_cvtepi32_ps(_mm512_load_si512(held[u][c]));  // exact
            const __m512 t = _mm512_mul_ps(_mm512_set1_ps(w[c]), xd);            // ws * xd
            acc[c] = _mm512_fmadd_ps(pf, t, acc[c]);
          }
          if (g + 1 == group_end) {
            for (int c = 0; c < 16; ++c) {
              _mm512_store_ps(out_mem[q][c], _mm512_add_ps(_mm512_load_ps(out_mem[q][c]), acc[c]));
              acc[c] = _mm512_setzero_ps();
            }
            if (++z < p.nsplit) group_end = slice_end(ng, p.nsplit, z);
          }
        }
      }
      for (int c = 0; c < 16; ++c) _mm512_store_ps(acc_mem[q][c], acc[c]);
    }
  }
  for (int q = 0; q < nq; ++q) {
    const int h = q / nb, b = q % nb;
    write_quadrant(p, out_mem[q], s, h, (b0 + b) * 16, row_lo, row_end);
  }
}

// The shared schedule (GemmParams::amx_schedule = 1): per group ONE load of each A (both weight
// halves) and each B (row blocks b0, b0 + 1), four C tiles (2h + b) in flight, stored together;
// the accumulators of the four quadrants live in L1 (64 zmm would not fit the registers).
// Half the tile loads of the quadrant schedule and twice the C tiles in flight, for one load and
// one store of an accumulator per fma. nb <= 2. The same operations per output, so the same bits.
template <class Tiles>
void amx_strip_pass_shared(Tiles& tiles, const GemmParams& p, int64_t s, int64_t b0, int nb, int64_t row_lo,
                           int64_t row_end) {
  const int64_t ng = p.ngroups, tb = p.tile_bytes;
  const auto* records = static_cast<const int8_t*>(p.xpack);
  alignas(64) float acc_mem[4][16][16];        // (quadrant 2h + b, column, row)
  alignas(64) float out_mem[4][16][16];
  alignas(64) int32_t isum[2][4][16][16];      // (buffer, quadrant, column, row)
  alignas(64) float ws[kChunk][32];
  alignas(64) int8_t wide[kChunk][1024];
  std::memset(acc_mem, 0, sizeof acc_mem);
  std::memset(out_mem, 0, sizeof out_mem);
  const bool q4 = p.prec == TB_PREC_Q4;
  int64_t z = 0, group_end = slice_end(ng, p.nsplit, 0);
  for (int64_t c0 = 0; c0 < ng; c0 += kChunk) {
    const int cn = static_cast<int>(std::min<int64_t>(kChunk, ng - c0));
    const uint8_t* chunk = p.codes + (s * ng + c0) * tb;
    const int8_t* a_base = reinterpret_cast<const int8_t*>(chunk);
    if (q4) {
      widen_q4_tiles(chunk, cn, &wide[0][0]);
      a_base = &wide[0][0];
    }
    const int64_t a_stride = q4 ? 1024 : tb;
    for (int j = 0; j < cn; ++j) {
      for (int h = 0; h < 2; ++h) {
        _mm512_store_ps(ws[j] + 16 * h, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.scales + (s * ng + c0 + j) * 32 + 16 * h))));
      }
    }
    const char* ahead = reinterpret_cast<const char*>(chunk + static_cast<int64_t>(cn) * tb);
    const int64_t ahead_lines = kChunk * tb / 64;
    const int64_t per_group = p.prefetch_bytes > 0 ? ceil_div(ahead_lines, cn) : 0;
    int64_t next_line = 0;
    auto tile_group = [&](int j) {
      const int64_t g = c0 + j;
      tiles.load_a(0, a_base + j * a_stride, 32);
      tiles.load_a(1, a_base + j * a_stride + 512, 32);
      for (int b = 0; b < nb; ++b) tiles.load_b(b, records + ((b0 + b) * ng + g) * kRecordBytes, 64);
      for (int h = 0; h < 2; ++h) {
        for (int b = 0; b < nb; ++b) {
          tiles.zero_q(2 * h + b);
          tiles.dot_q(2 * h + b);
        }
      }
      for (int h = 0; h < 2; ++h) {
        for (int b = 0; b < nb; ++b) tiles.store_q(2 * h + b, isum[j % 2][2 * h + b], 64);
      }
    };
    tile_group(0);
    for (int j = 0; j < cn; ++j) {
      if (j + 1 < cn) tile_group(j + 1);
      for (int64_t l = 0; l < per_group && next_line < ahead_lines; ++l, ++next_line) {
        _mm_prefetch(ahead + next_line * 64, _MM_HINT_T1);
      }
      const int64_t g = c0 + j;
      const bool slice_closes = g + 1 == group_end;
      for (int h = 0; h < 2; ++h) {
        const float* w = ws[j] + 16 * h;
        for (int b = 0; b < nb; ++b) {
          const int q = 2 * h + b;
          const __m512 xd = _mm512_loadu_ps(reinterpret_cast<const float*>(records + ((b0 + b) * ng + g) * kRecordBytes + kBTileBytes));
#pragma GCC unroll 16
          for (int c = 0; c < 16; ++c) {
            const __m512 pf = _mm512_cvtepi32_ps(_mm512_load_si512(isum[j % 2][q][c]));  // exact
            const __m512 t = _mm512_mul_ps(_mm512_set1_ps(w[c]), xd);                  // ws * xd
            __m512 acc = _mm512_fmadd_ps(pf, t, _mm512_load_ps(acc_mem[q][c]));
            if (slice_closes) {
              _mm512_store_ps(out_mem[q][c], _mm512_add_ps(_mm512_load_ps(out_mem[q][c]), acc));
              acc = _mm512_setzero_ps();
            }
            _mm512_store_ps(acc_mem[q][c], acc);
          }
        }
      }
      if (slice_closes && ++z < p.nsplit) group_end = slice_end(ng, p.nsplit, z);
    }
  }
  for (int h = 0; h < 2; ++h) {
    for (int b = 0; b < nb; ++b) write_quadrant(p, out_mem[2 * h + b], s, h, (b0 + b) * 16, row_lo, row_end);
  }
}

template <class Tiles>
void gemm_i8_tiles(const GemmParams& p, int64_t s0, int64_t s1, int64_t r0, int64_t r1) {
  // Packed activations exist for M >= kAmxMinRows only (the backend then computes no VNNI
  // correction terms); below it the call is the avx512vnni kernel's (the same bits).
  if (!p.xpack) {
    kernel_table(Isa::kAvx512vnni).gemm_i8(p, s0, s1, r0, r1);
    return;
  }
  Tiles tiles;
  tiles.configure();
  const int pass_blocks = p.amx_schedule == 1 ? 2 : kPassBlocks;
  for (int64_t s = s0; s < s1; ++s) {
    // Passes start on the row block holding r0 and write rows [r0, r1) only.
    for (int64_t b0 = r0 / 16; b0 * 16 < r1; b0 += pass_blocks) {
      const int nb = static_cast<int>(std::min<int64_t>(pass_blocks, row_blocks(r1) - b0));
      if (p.amx_schedule == 1) {
        amx_strip_pass_shared(tiles, p, s, b0, nb, r0, r1);
      } else {
        amx_strip_pass(tiles, p, s, b0, nb, r0, r1);
      }
    }
  }
  tiles.release();
}

KernelTable with_tiles(void (*gemm_i8)(const GemmParams&, int64_t, int64_t, int64_t, int64_t)) {
  KernelTable t = make_kernel_table<Isa::kAvx512vnni>();
  t.isa = Isa::kAmx;
  t.gemm_i8 = gemm_i8;
  t.i8_pack_bytes = &pack_bytes;
  t.i8_pack = &pack;
  return t;
}

}  // namespace

KernelTable make_amx_kernel_table() { return with_tiles(&gemm_i8_tiles<HardwareTiles>); }
KernelTable make_amx_emulated_kernel_table() { return with_tiles(&gemm_i8_tiles<EmulatedTiles>); }

}  // namespace twinbit::cpu
