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
// per group step. q4 tiles are widened to codes once per chunk into a stack buffer. How far
// ahead, in which order and with which int-to-float conversion is GemmParams::amx_tuning
// (cpu_amx.h, AmxTuning), measured in docs/results/cpu-amx-2026-12-06-tuning.md.
//
// WHERE THE TIME GOES (bench/cpu/arch/amx_probe_x86_64.cpp, one core, hot data): a block costs
// ~67 cycles, the sum of its tile work (~35: loads ~13, TDPBSSD ~16, store ~16, partly
// overlapped) and its float step (~30); the two do not overlap, in any order or conversion
// tried, so the per-group float step the contract needs sets the pace past M = 16.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
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

// Conversion 1 and 2 (cpu_amx.h, AmxTuning): the bits of the float 1.5 * 2^23, and a C tile of
// them (16 rows x 16 words) to start the dot from.
constexpr int32_t kMagicBits = 0x4B400000;
constexpr float kMagicFloat = 12582912.0f;
struct alignas(64) MagicTile {
  int32_t words[256];
  constexpr MagicTile() : words() {
    for (int32_t& w : words) w = kMagicBits;
  }
};
constexpr MagicTile kMagicTileWords;
const int32_t* const kMagicTile = kMagicTileWords.words;

int64_t pack_bytes(int64_t m, int64_t ngroups) {
  return m < kAmxMinRows ? 0 : row_blocks(m) * ngroups * kRecordBytes;
}

// The plain form, for row strides whose 15 rows overflow a gather's int32 offsets.
void pack_scalar(const GemmParams& p, int64_t m, int8_t* bytes) {
  std::memset(bytes, 0, static_cast<size_t>(pack_bytes(m, p.ngroups)));
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

// Per record, each of the 8 B-tile rows is one gather of a 4-byte quad from the block's 16 rows,
// and the scales one gather more; lanes of rows past M are masked off and write zeros, so every
// byte of the buffer is written (no clearing pass).
void pack(const GemmParams& p, int64_t m, void* out) {
  auto* bytes = static_cast<int8_t*>(out);
  if (15 * p.ldxq > INT32_MAX || 15 * p.ldxd > INT32_MAX) return pack_scalar(p, m, bytes);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // Offsets of a block's 16 rows: bytes of xq (scale 1), floats of xd (scale 4). Both fit int32:
  // 15 rows of a row stride the buffer holds.
  const __m512i code_rows = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(p.ldxq)));
  const __m512i scale_rows = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(p.ldxd)));
  for (int64_t b = 0; b < row_blocks(m); ++b) {
    const __mmask16 rows = static_cast<__mmask16>((1u << std::min<int64_t>(16, m - 16 * b)) - 1);
    const int8_t* x = p.xq + 16 * b * p.ldxq;
    const float* d = p.xd + 16 * b * p.ldxd;
    for (int64_t g = 0; g < p.ngroups; ++g) {
      int8_t* record = bytes + (b * p.ngroups + g) * kRecordBytes;
      for (int q = 0; q < 8; ++q) {
        const __m512i quad = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, code_rows, x + g * 32 + 4 * q, 1);
        _mm512_storeu_si512(record + q * 64, quad);
      }
      _mm512_storeu_ps(record + kBTileBytes, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), rows, scale_rows, d + g, 4));
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
  void load_c(int u, const void* p, int64_t stride) { if (u == 0) _tile_loadd(4, p, stride); else _tile_loadd(5, p, stride); }
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
  void load_c(int u, const void* p, int64_t stride) { load(4 + u, p, stride); }
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
template <class Tiles, int kConversion>
void amx_strip_pass(Tiles& tiles, const GemmParams& p, int64_t s, int64_t b0, int nb, int64_t row_lo,
                    int64_t row_end) {
  const int64_t ng = p.ngroups, tb = p.tile_bytes;
  const auto* records = static_cast<const int8_t*>(p.xpack);
  const int nq = 2 * nb;  // quadrants: q = h * nb + b
  alignas(64) float acc_mem[2 * kPassBlocks][16][16];  // (quadrant, column, row): the open slice
  alignas(64) float out_mem[2 * kPassBlocks][16][16];  // the closed slices' fold
  alignas(64) int32_t isum[4][2][16][16];              // (buffer, group of the pair, column, row)
  alignas(64) float ws[kChunk][32];                    // the chunk's weight scales
  alignas(64) int8_t wide[kChunk][1024];               // q4: the chunk's tiles as codes
  std::memset(acc_mem, 0, sizeof acc_mem);             // +0.0f
  std::memset(out_mem, 0, sizeof out_mem);
  const bool q4 = p.prec == TB_PREC_Q4;
  const AmxTuning tune = AmxTuning::decode(p.amx_tuning);
  const int depth = tune.depth, buffers = tune.depth + 1;  // pairs of tile work in flight
  const int64_t line_stride = int64_t{1} << tune.prefetch_stride_log2;
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
    // One chunk's codes prefetch_chunks chunks ahead (running on into the next strip), every
    // line_stride-th line, spread over this chunk's steps.
    const char* ahead = reinterpret_cast<const char*>(chunk + (static_cast<int64_t>(cn) + (tune.prefetch_chunks - 1) * kChunk) * tb);
    const int64_t ahead_lines = ceil_div(kChunk * tb / 64, line_stride);
    const int64_t per_step =
        p.prefetch_bytes > 0 && tune.prefetch_chunks > 0 ? ceil_div(ahead_lines, int64_t{nq} * cn) : 0;
    int64_t next_line = 0;
    for (int q = 0; q < nq; ++q) {
      const int h = q / nb, b = q % nb;
      const int8_t* a_tiles = a_base + h * 512;  // A of group c0 + j at a_tiles + j * 1024
      const int64_t a_stride = q4 ? 1024 : tb;
      const int8_t* block = records + (b0 + b) * ng * kRecordBytes;  // record of group g: + g * kRecordBytes
      const float* ws_half = &ws[0][16 * h];  // scale of column c, group c0 + j: ws_half[32 * j + c]
      __m512 acc[16];
      for (int c = 0; c < 16; ++c) acc[c] = _mm512_load_ps(acc_mem[q][c]);
      int64_t z = 0;
      while (slice_end(ng, p.nsplit, z) <= c0) ++z;
      int64_t group_end = slice_end(ng, p.nsplit, z);
      // Tile work of group j + u of the chunk (u = 0, 1: a pair's two tile sets), in parts (A,
      // B, then C's start and the dot), its sums kept in the tiles; then the pair's stores into
      // isum[(j / 2) % buffers]. With conversion 2 C starts at kMagicBits, so the stored words are
      // the bits of the floats 1.5 * 2^23 + isum.
      auto tile_part = [&](int j, int u, int part) {
        if (j + u >= cn) return;
        if (part == 0) tiles.load_a(u, a_tiles + (j + u) * a_stride, 32);
        if (part == 1) tiles.load_b(u, block + (c0 + j + u) * kRecordBytes, 64);
        if (part == 2) {
          if (kConversion == 2) {
            tiles.load_c(u, kMagicTile, 64);
          } else {
            tiles.zero_c(u);
          }
          tiles.dot(u);
        }
      };
      auto tile_dot = [&](int j, int u) {
        for (int part = 0; part < 3; ++part) tile_part(j, u, part);
      };
      auto tile_store = [&](int j) {
        int32_t (*dst)[16][16] = isum[(j / 2) % buffers];
        for (int u = 0; u < 2 && j + u < cn; ++u) tiles.store_c(u, dst[u], 64);
      };
      // The host work of group j + u, columns [c_lo, c_hi): the contract's float step on its
      // sums; after the last column, the slice's fold when the group closes a slice.
      const __m512 magic = _mm512_set1_ps(kMagicFloat);
      const __m512i magic_bits = _mm512_set1_epi32(kMagicBits);
      auto host_columns = [&](int j, int u, int c_lo, int c_hi) {
        if (j + u >= cn) return;
        int32_t (*held)[16][16] = isum[(j / 2) % buffers];
        const int64_t g = c0 + j + u;
        const __m512 xd = _mm512_loadu_ps(reinterpret_cast<const float*>(block + g * kRecordBytes + kBTileBytes));
        const float* w = ws_half + 32 * (j + u);
#pragma GCC unroll 16
        for (int c = c_lo; c < c_hi; ++c) {
          const __m512i sums = _mm512_load_si512(held[u][c]);
          // float(isum), exact in every form: |isum| < 2^22, so 1.5 * 2^23 + isum is a float
          // whose bits are kMagicBits + isum, and subtracting 1.5 * 2^23 is exact.
          const __m512 pf = kConversion == 0   ? _mm512_cvtepi32_ps(sums)
                            : kConversion == 1 ? _mm512_sub_ps(_mm512_castsi512_ps(_mm512_add_epi32(sums, magic_bits)), magic)
                                                   : _mm512_sub_ps(_mm512_castsi512_ps(sums), magic);
          const __m512 t = _mm512_mul_ps(_mm512_set1_ps(w[c]), xd);  // ws * xd
          acc[c] = _mm512_fmadd_ps(pf, t, acc[c]);
        }
        if (c_hi == 16 && g + 1 == group_end) {
          for (int c = 0; c < 16; ++c) {
            _mm512_store_ps(out_mem[q][c], _mm512_add_ps(_mm512_load_ps(out_mem[q][c]), acc[c]));
            acc[c] = _mm512_setzero_ps();
          }
          if (++z < p.nsplit) group_end = slice_end(ng, p.nsplit, z);
        }
      };
      auto host = [&](int j, int u) { host_columns(j, u, 0, 16); };
      for (int d = 0; d < depth && 2 * d < cn; ++d) {
        tile_dot(2 * d, 0);
        tile_dot(2 * d, 1);
        tile_store(2 * d);
      }
      int stores_due = -1;  // order 3: the pair whose dots the last step issued, stored this step
      for (int j = 0; j < cn; j += 2) {
        const int next = j + 2 * depth;  // the pair whose tile work goes in flight now
        const bool ahead_pair = next < cn;
        for (int64_t l = 0; l < per_step * 2 && next_line < ahead_lines; ++l, ++next_line) {
          _mm_prefetch(ahead + next_line * line_stride * 64, _MM_HINT_T1);
        }
        if (tune.order == 0) {  // the next pair's tile work, then this pair's host work
          if (ahead_pair) {
            tile_dot(next, 0);
            tile_dot(next, 1);
            tile_store(next);
          }
          host(j, 0);
          host(j, 1);
        } else if (tune.order == 1) {  // stores after the host work: the dots' latency behind it
          if (ahead_pair) {
            tile_dot(next, 0);
            tile_dot(next, 1);
          }
          host(j, 0);
          host(j, 1);
          if (ahead_pair) tile_store(next);
        } else if (tune.order == 2) {  // each dot beside one group's host work, the stores last
          if (ahead_pair) tile_dot(next, 0);
          host(j, 0);
          if (ahead_pair) tile_dot(next, 1);
          host(j, 1);
          if (ahead_pair) tile_store(next);
        } else {  // 3 (depth >= 2): last step's stores first, then each tile part between four columns
          if (stores_due >= 0) tile_store(stores_due);
          stores_due = ahead_pair ? next : -1;
          for (int u = 0; u < 2; ++u) {
            for (int part = 0; part < 4; ++part) {
              if (ahead_pair && part < 3) tile_part(next, u, part);
              host_columns(j, u, 4 * part, 4 * part + 4);
            }
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
        switch (AmxTuning::decode(p.amx_tuning).conversion) {
          case 0: amx_strip_pass<Tiles, 0>(tiles, p, s, b0, nb, r0, r1); break;
          case 1: amx_strip_pass<Tiles, 1>(tiles, p, s, b0, nb, r0, r1); break;
          default: amx_strip_pass<Tiles, 2>(tiles, p, s, b0, nb, r0, r1);
        }
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
