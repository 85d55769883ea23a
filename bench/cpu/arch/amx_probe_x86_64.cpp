// twinbit-amx-probe: where the time of the amx tag's tile block goes, on one core with hot data.
//
// The amx tag's quadrant schedule (backends/cpu/isa/kernels_amx.cpp) spends, per block of 16 weight
// columns x 16 activation rows x one 32-code group: two tile loads (A 16 x 32 bytes, B 8 x 64),
// a tile zero, one TDPBSSD, one tile store (16 x 64 bytes) and the contract's float step (16 x
// load, convert, scale product, fma). This probe times each part alone and in combinations, in
// loops over the same 16 groups x 4 quadrants (the M = 32 pass) with everything in L1/L2, so
// what it reports is the core's cost, not the memory's. It checks no bits (the test suite does):
// its numbers tell which part of the schedule to work on.
//
// Usage: twinbit-amx-probe [--reps N]   (exit 77 where the CPU or OS gives no AMX-INT8 tiles)
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_amx.h"

namespace {

constexpr int kGroups = 16, kQuadrants = 4;

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {32, 32, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 8, 8, 16, 16, 16, 16};
};

int8_t* a_codes = nullptr;                    // chunks of 16 groups x 1024 bytes: A of half h at + 512 h
int64_t a_chunks = 1;                         // how many: 1 stays in L1; more stream from L2, L3, memory
alignas(64) int8_t b_records[kGroups][576];   // packed activations: B tile, then 16 scales
alignas(64) int32_t isum[3][2][16][16];
alignas(64) float ws[kGroups][32];
alignas(64) float sink[16][16];

// One chunk pass of the M = 32 quadrant schedule, parts switched by the template flags.
template <bool kLoads, bool kDot, bool kStore, bool kFloat, int kDepth, bool kLateStore>
void chunk(__m512 (&acc)[16], const int8_t* a) {
  const int buffers = kDepth + 1;
  for (int q = 0; q < kQuadrants; ++q) {
    const int h = q / 2;
    auto tile_store = [&](int j) {
      int32_t (*dst)[16][16] = isum[(j / 2) % buffers];
      _tile_stored(4, dst[0], 64);
      _tile_stored(5, dst[1], 64);
    };
    auto tile_pair = [&](int j, bool store) {
      if (kLoads) {
        _tile_loadd(0, a + j * 1024 + h * 512, 32);
        _tile_loadd(2, b_records[j], 64);
      }
      if (kDot) {
        _tile_zero(4);
        _tile_dpbssd(4, 0, 2);
      }
      if (kLoads) {
        _tile_loadd(1, a + (j + 1) * 1024 + h * 512, 32);
        _tile_loadd(3, b_records[j + 1], 64);
      }
      if (kDot) {
        _tile_zero(5);
        _tile_dpbssd(5, 1, 3);
      }
      if (kStore && store) tile_store(j);
    };
    for (int d = 0; d < kDepth; ++d) tile_pair(2 * d, true);
    for (int j = 0; j < kGroups; j += 2) {
      int32_t (*held)[16][16] = isum[(j / 2) % buffers];
      const bool ahead = j + 2 * kDepth < kGroups;
      if (ahead) tile_pair(j + 2 * kDepth, !kLateStore);
      if (kFloat) {
        for (int u = 0; u < 2; ++u) {
          const __m512 xd = _mm512_loadu_ps(reinterpret_cast<const float*>(b_records[j + u] + 512));
          const float* w = &ws[0][16 * h] + 32 * (j + u);
#pragma GCC unroll 16
          for (int c = 0; c < 16; ++c) {
            const __m512 pf = _mm512_cvtepi32_ps(_mm512_load_si512(held[u][c]));
            const __m512 t = _mm512_mul_ps(_mm512_set1_ps(w[c]), xd);
            acc[c] = _mm512_fmadd_ps(pf, t, acc[c]);
          }
        }
      }
      if (kStore && kLateStore && ahead) tile_store(j + 2 * kDepth);
    }
  }
}

template <bool kLoads, bool kDot, bool kStore, bool kFloat, int kDepth = 1, bool kLateStore = false>
double ns_per_block(const char* name, int reps) {
  __m512 acc[16];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int r = 0; r < 100; ++r) chunk<kLoads, kDot, kStore, kFloat, kDepth, kLateStore>(acc, a_codes + (r % a_chunks) * 16384);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) chunk<kLoads, kDot, kStore, kFloat, kDepth, kLateStore>(acc, a_codes + (r % a_chunks) * 16384);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  for (int c = 0; c < 16; ++c) _mm512_store_ps(sink[c], acc[c]);
  const double per_block = ns / (static_cast<double>(reps) * kGroups * kQuadrants);
  std::printf("%-44s %7.2f ns/block\n", name, per_block);
  return per_block;
}

// The core clock while vector code runs: a chain of dependent 512-bit fmas is 4 cycles a link on
// every AVX-512 core Intel has shipped with AMX.
double fma_chain_ghz() {
  __m512 x = _mm512_set1_ps(1.0f);
  const __m512 m = _mm512_set1_ps(1.0f), a = _mm512_set1_ps(0.0f);
  const int64_t links = 200'000'000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < links; ++i) {
    x = _mm512_fmadd_ps(x, m, a);
    __asm__ volatile("" : "+v"(x));
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  _mm512_store_ps(sink[0], x);
  return 4.0 * static_cast<double>(links) / ns;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  if (!twinbit::cpu::amx_os_ready()) {
    std::fprintf(stderr, "twinbit-amx-probe: SKIPPED: this CPU or OS gives no AMX-INT8 tiles\n");
    return 77;
  }
  constexpr int64_t kMaxChunks = 4096;  // 64 MiB of weight codes
  a_codes = static_cast<int8_t*>(std::aligned_alloc(64, kMaxChunks * 16384));
  for (int64_t i = 0; i < kMaxChunks * 16384; ++i) a_codes[i] = static_cast<int8_t>((i * 7 + i / 1024 * 31) % 255 - 127);
  for (int g = 0; g < kGroups; ++g) {
    for (int i = 0; i < 512; ++i) b_records[g][i] = static_cast<int8_t>((g * 17 + i * 3) % 255 - 127);
    for (int i = 0; i < 16; ++i) reinterpret_cast<float*>(b_records[g] + 512)[i] = 0.01f * static_cast<float>(i + 1);
    for (int c = 0; c < 32; ++c) ws[g][c] = 0.001f * static_cast<float>(c + g);
  }
  static const TileConfig cfg;
  __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
  const double ghz = fma_chain_ghz();
  std::printf("twinbit-amx-probe: one core, hot data, the M = 32 quadrant pass (16 groups x 4 quadrants), "
              "%d reps; fma-chain clock %.2f GHz\n", reps, ghz);
  const double full = ns_per_block<true, true, true, true>("schedule (loads, dot, store, float step)", reps);
  ns_per_block<true, true, true, true, 2>("schedule, two pairs in flight", reps);
  ns_per_block<true, true, true, true, 1, true>("schedule, stores after the float step", reps);
  ns_per_block<true, true, true, true, 2, true>("schedule, two pairs, stores after", reps);
  const double tile = ns_per_block<true, true, true, false>("tiles only (loads, dot, store)", reps);
  const double fl = ns_per_block<false, false, false, true>("float step only (isum from L1)", reps);
  ns_per_block<true, true, false, false>("loads and dot, no store", reps);
  ns_per_block<false, true, false, false>("dot only (tiles loaded once)", reps);
  ns_per_block<false, false, true, false>("store only", reps);
  ns_per_block<true, false, false, false>("loads only", reps);
  ns_per_block<false, true, true, false>("dot and store, no loads", reps);
  ns_per_block<false, true, true, true>("dot, store, float step, no loads", reps);
  ns_per_block<true, true, false, true>("loads, dot, float step, no store", reps);
  std::printf("in cycles at %.2f GHz: schedule %.1f, tiles %.1f, float %.1f (sum %.1f)\n", ghz, full * ghz, tile * ghz,
              fl * ghz, (tile + fl) * ghz);
  // The same schedule with each chunk's codes new to L1: streaming from L2 (1 MiB of codes), from
  // L3 or memory (64 MiB), as the 16 threads of a gemm read them.
  for (const int64_t chunks : {int64_t{64}, kMaxChunks}) {
    a_chunks = chunks;
    const std::string name = "schedule, codes streamed over " + std::to_string(chunks * 16) + " KiB";
    const double streamed = ns_per_block<true, true, true, true>(name.c_str(), reps);
    ns_per_block<true, true, true, false>((name + ", tiles only").c_str(), reps);
    std::printf("  %.1f cycles a block\n", streamed * ghz);
  }
  a_chunks = 1;
  std::free(a_codes);
  _tile_release();
  return 0;
}
