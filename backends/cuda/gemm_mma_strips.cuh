// The tensor-core strip-block kernel of the CUDA gemm (mode I8, M >= 2): a template shared by the
// product (gemm_mma_strips.cu) and the benchmark's variants (bench/cuda/gemm_variants.cu), which
// instantiate it with the other mma ordering.
//
// WHY. The row-tile tensor-core kernel (gemm_mma.cu) gives a block 4 strips and every slice: on
// a projection of a few hundred strips (gate_up: 384) that is fewer blocks than the GPU has
// multiprocessors, and with one slice per block the partials round trip through global memory.
// Here the parallelism is the contract's own: the slices of a column are independent sums until
// the fold, so the warps of a block take the slices of its strips and fold them through shared
// memory, in ascending z, after each round.
//
// MAPPING. A block of 8 warps owns `strips` = 8 / ways adjacent strips and a tile of MT rows
// (8, 16 or 32; row tile fastest in the grid, so the tiles of a strip read its weights from L2);
// ways warps per strip (Params::strip_ways: min(nsplit, 8), or 4 where the plan gives a block two
// strips; the benchmark tries others). In round r, warp `way` of a strip computes slice
// z = r * ways + way: per group one 1 KiB (q8) weight tile, two m16n8k32 mmas per 8-row tile
// (gemm_mma.cuh), and the float step of the contract per (column, row, group) in ascending g on
// the CUDA cores: three instructions, as the mma's accumulators start at the bits of 1.5 * 2^23
// (p = one exact FADD, t = ws * xd one FMUL, the FFMA). The activations are read from global memory (L1-resident: every warp of the
// SM reads the same row tile), or (kActs) staged by the block in shared memory once. Each warp keeps weight tiles in flight across slice and round
// boundaries: kDepth (2) in registers, or kStage in shared memory slots filled by cp.async (no
// registers, so more tiles; the plan stages where the grid is more than one wave). After a round every warp leaves its slice sums in shared memory; after one
// barrier the block adds them to its running outputs, out = out + a[z] in ascending z (double-
// buffered rounds: one barrier per round). The last barrier is followed by coalesced stores.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_numerics.cuh"
#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_mma.cuh"
#include "core/numerics.h"

namespace twinbit::cuda::detail {

constexpr int kMmaStripThreads = kMmaStripWarps * 32;
// Weight tiles in flight per warp ahead of the one computed. Two: more hold more registers, hence
// fewer blocks per SM, and measured slower on the H200 (gate_up M = 2: 14.1 us at 2, 20.6 at 4,
// 22.8 at 6; lm_head M = 2: 101 / 124 / 145; the benchmark's mma_strips_depth* variants).
template <int MT>
constexpr int kMmaStripDepth = 2;

// Blocks per SM the registers are held to: three for 8-row tiles with 2 tiles in flight, two
// otherwise (ptxas's free choice left 8-row tiles at 87 registers, two blocks, and 32-row tiles
// at 160, one block; 8-row tiles with 4 tiles in flight spill when held to three).
template <int MT, int D>
constexpr int kMmaStripMinBlocks = MT == 8 && D <= 2 ? 3 : 2;
static_assert(kMmaStripMinBlocks<8, kMmaStripDepth<8>> == mma_strips_blocks_per_sm(8) &&
              kMmaStripMinBlocks<16, kMmaStripDepth<16>> == mma_strips_blocks_per_sm(16) &&
              kMmaStripMinBlocks<32, kMmaStripDepth<32>> == mma_strips_blocks_per_sm(32),
              "the plan's wave count (gemm_internal.h) follows the launch bounds");

// kStage = 0: the warp's weight tiles in flight are a ring of kDepth registers sets. kStage > 0:
// a ring of kStage tile slots in shared memory filled by cp.async, so a warp keeps kStage tiles
// in flight without the registers (kDepth and kRing are then unused).
// kMinBlocks: the blocks per SM the registers are held to (the benchmark tries others). kLean:
// slice bounds from the host's terms (slice_lo) and the packed NaN test of the scales
// (tile_operands); otherwise 64-bit divisions on the device and a select per scale. kActs: the
// block stages its row tile's activations of every group in shared memory once (B-fragment order,
// scales group-major), so a group's operands are two shared loads, not three predicated global
// loads with their addresses. kL2: each warp asks the tile Params::l2_ahead groups ahead of its
// ring's loads into L2 (one bulk prefetch by one lane), so the ring's loads wait on L2, not DRAM.
template <tb_prec P, int MT, bool kOrdered, int kDepth = kMmaStripDepth<MT>, int kStage = 0, int kRing = kMmaStripRing,
          int kMinBlocks = kMmaStripMinBlocks<MT, kDepth>, bool kLean = kMmaStripsLean, bool kActs = false,
          bool kWords = kMmaStripWords, bool kFold4 = kMmaStripFold4, bool kL2 = false>
__global__ void __launch_bounds__(kMmaStripThreads, kMinBlocks) gemm_mma_strips_kernel(const Params p) {
  constexpr int kJ = MT / 8, kTile = MT * 32;
  constexpr int kTileBytes = P == TB_PREC_Q8 ? 1024 : 512;
  constexpr int kSlotBytes = mma_stage_slot_bytes(P);
  extern __shared__ __align__(16) float smem[];
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const int gid = lane >> 2, tig = lane & 3;
  const int ways = p.strip_ways, strips = kMmaStripWarps / ways;
  const int mt = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.row_tiles));
  const int sb = static_cast<int>(blockIdx.x / static_cast<unsigned>(p.row_tiles));
  const int ls = warp / ways, way = warp % ways;
  const int strip = sb * strips + ls;
  const bool active = ls < strips && strip < p.nstrips;
  const int64_t m0 = static_cast<int64_t>(mt) * MT;
  const int rows = static_cast<int>(min(static_cast<int64_t>(MT), p.m - m0));
  const int64_t kp = static_cast<int64_t>(p.ngroups) * 32;
  const int rounds = (p.nsplit + ways - 1) / ways;

  // Fragment order: element e of 8-row tile j in lane l at (8j + e) * 32 + l; kFold4: at
  // ((2j + e / 4) * 32 + l) * 4 + e % 4, a lane's four sums of one mma side by side.
  const auto at = [](int j, int e, int l) {
    return kFold4 ? (((2 * j + (e >> 2)) * 32 + l) << 2) + (e & 3) : (j * 8 + e) * 32 + l;
  };
  float* const slots = smem;                              // [2][warps][kTile], fragment order
  float* const out = smem + 2 * kMmaStripWarps * kTile;   // [strips][kTile], fragment order
  const int nout = strips * kTile;
  for (int i = static_cast<int>(threadIdx.x); i < nout; i += kMmaStripThreads) out[i] = 0.0f;  // out = +0

  // The load cursor: the warp's next group to fetch (slices way, way + ways, ...).
  const int64_t tile0 = static_cast<int64_t>(active ? strip : 0) * p.ngroups;
  const uint8_t* const codes = p.codes + tile0 * kTileBytes;
  const uint16_t* const scales = p.scales + tile0 * 32;
  const auto first_group = [&](int z) {
    return kLean ? slice_lo(p, z) : static_cast<int>(slice_begin(p.ngroups, p.nsplit, z));
  };
  const auto end_group = [&](int z) {
    return kLean ? slice_lo(p, z + 1) : static_cast<int>(slice_end(p.ngroups, p.nsplit, z));
  };
  int wz = active ? way : p.nsplit;
  int wg = 0, wend = 0;
  if (wz < p.nsplit) {
    wg = first_group(wz);
    wend = end_group(wz);
  }
  const auto advance = [&] {
    if (++wg == wend) {
      wz += ways;
      if (wz < p.nsplit) {
        wg = first_group(wz);
        wend = end_group(wz);
      }
    }
  };
  const uint8_t* const lane_codes = codes + lane_code_offset<P>(gid, tig);
  const uint16_t* const lane_scales = scales + gid;
  const auto fetch = [&](MmaTile& t) {
    t = load_mma_tile_lane<P, false, kWords>(lane_codes + static_cast<int64_t>(wg) * kTileBytes, lane_scales + static_cast<int64_t>(wg) * 32);
    if constexpr (kL2) {  // the tile l2_ahead further on in this slice, into L2
      const int ahead = wg + p.l2_ahead;
      if (lane == 0 && p.l2_ahead > 0 && ahead < wend) {
        prefetch_l2_bulk(codes + static_cast<int64_t>(ahead) * kTileBytes, kTileBytes);
        prefetch_l2_bulk(scales + static_cast<int64_t>(ahead) * 32, 64);
      }
    }
    advance();
  };
  // Staged: this warp's slots (16-byte aligned: the float areas before them are whole 16 bytes).
  uint8_t* const stage = reinterpret_cast<uint8_t*>(smem + (2 * kMmaStripWarps + strips) * kTile) +
                         warp * (kStage > 0 ? kStage : 1) * kSlotBytes;
  // Issues the copies of the cursor's tile into `slot` (nothing past the warp's last tile) and
  // commits them as one group, so that every fetch is one group whatever it copied.
  const auto stage_tile = [&](int slot) {
    if (wz < p.nsplit) {
      const uint8_t* src = codes + static_cast<int64_t>(wg) * kTileBytes;
      uint8_t* dst = stage + slot * kSlotBytes;
#pragma unroll
      for (int i = lane; i < kTileBytes / 16; i += 32) cp_async16(dst + 16 * i, src + 16 * i);
      if (lane < 4) cp_async16(dst + kTileBytes + 16 * lane, scales + static_cast<int64_t>(wg) * 32 + 8 * lane);
      advance();
    }
    cp_async_commit();
  };
  // kActs: the block's activations, after every warp's slots.
  uint2* const act_b = reinterpret_cast<uint2*>(smem + (2 * kMmaStripWarps + strips) * kTile) +
                       kMmaStripWarps * kStage * kSlotBytes / 8;
  float* const act_xd = reinterpret_cast<float*>(act_b + static_cast<int64_t>(p.ngroups) * kJ * 32);
  MmaTile ring[kStage > 0 ? 1 : kDepth];
  int next_slot = 0;  // staged: the slot of the next tile to compute
  int phase = 0;      // two registers sets: which holds the oldest tile (they alternate, no copies)
  if constexpr (kStage > 0) {
#pragma unroll
    for (int i = 0; i < kStage; ++i) stage_tile(i);
  } else {
#pragma unroll
    for (int i = 0; i < kDepth; ++i) {
      if (wz < p.nsplit) fetch(ring[i]);
    }
  }

  // Launched after the quantiser (launch_mma_strips): the weight tiles above are in flight; the
  // activations and the outputs wait for the kernel before this one.
  griddep_wait();

  if constexpr (kActs) {  // with the first weight tiles in flight
    // Each thread keeps one fragment slot (8-row tile j, lane l) and one row's scales and walks the
    // groups: the row and its predicate stay, the addresses move by a group, and a batch of loads
    // leaves before its stores (a thread waits once per batch; index arithmetic per element was a
    // quarter of the kernel's instructions at gate_up M = 32).
    constexpr int kSlots = kJ * 32, kSlotStep = kMmaStripThreads / kSlots, kBatch = 8;
    constexpr int kRowStep = kMmaStripThreads / MT;
    static_assert(kMmaStripThreads % kSlots == 0 && kMmaStripThreads % MT == 0, "whole steps");
    const int slot = static_cast<int>(threadIdx.x) % kSlots, l = slot & 31;
    const int rb = (slot >> 5) * 8 + (l >> 2);
    const int8_t* const xrow = p.xq + (m0 + (rb < rows ? rb : 0)) * kp;
    int g = static_cast<int>(threadIdx.x) / kSlots;
    for (; g + (kBatch - 1) * kSlotStep < p.ngroups; g += kBatch * kSlotStep) {
      uint2 v[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) v[b] = load_act_fragment<P>(xrow + (g + b * kSlotStep) * 32, rb < rows, l & 3);
#pragma unroll
      for (int b = 0; b < kBatch; ++b) act_b[(g + b * kSlotStep) * kSlots + slot] = v[b];
    }
    for (; g < p.ngroups; g += kSlotStep) act_b[g * kSlots + slot] = load_act_fragment<P>(xrow + g * 32, rb < rows, l & 3);
    const int rx = static_cast<int>(threadIdx.x) % MT;
    const float* const drow = p.xd + (m0 + (rx < rows ? rx : 0)) * p.ngroups;
    g = static_cast<int>(threadIdx.x) / MT;
    for (; g + (kBatch - 1) * kRowStep < p.ngroups; g += kBatch * kRowStep) {
      float v[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) v[b] = rx < rows ? __ldg(drow + g + b * kRowStep) : 0.0f;
#pragma unroll
      for (int b = 0; b < kBatch; ++b) act_xd[(g + b * kRowStep) * MT + rx] = v[b];
    }
    for (; g < p.ngroups; g += kRowStep) act_xd[g * MT + rx] = rx < rows ? __ldg(drow + g) : 0.0f;
    __syncthreads();
  }

#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
    const int z = r * ways + way;
    float acc[kJ][8];
#pragma unroll
    for (int j = 0; j < kJ; ++j) {
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[j][e] = 0.0f;
    }
    if (active && z < p.nsplit) {
      const int gb = first_group(z);
      const int ge = end_group(z);
      // One group: the tile's operands, the two mmas and the contract's float step per (row,
      // column); with an alternating ring, the consumed register set is refilled with the tile
      // two ahead (kRing says when).
      const auto group = [&](const MmaTile& t, MmaTile* refill, int g) {
        uint32_t a[2][4];
        float ws[4];
        tile_operands<P, kLean>(t, a, ws);
        if (kRing == kRingEarly && refill && wz < p.nsplit) fetch(*refill);
#pragma unroll
        for (int j = 0; j < kJ; ++j) {
          if (j * 8 < rows) {  // block-uniform: empty 8-row tiles are skipped
            const int rb = j * 8 + gid, rx = j * 8 + 2 * tig;
            uint2 bf;
            float xd0, xd1;
            if constexpr (kActs) {
              bf = act_b[(g * kJ + j) * 32 + lane];
              const float2 x2 = *reinterpret_cast<const float2*>(act_xd + g * MT + rx);
              xd0 = x2.x;
              xd1 = x2.y;
            } else {
              bf = load_act_fragment<P>(p.xq + (m0 + (rb < rows ? rb : 0)) * kp + g * 32, rb < rows, tig);
              xd0 = rx < rows ? __ldg(p.xd + (m0 + rx) * p.ngroups + g) : 0.0f;
              xd1 = rx + 1 < rows ? __ldg(p.xd + (m0 + rx + 1) * p.ngroups + g) : 0.0f;
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              int d[4];
              mma_s8<kOrdered>(a[h], bf, d, kFloatBias);  // the sums arrive biased: p costs one FADD
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const float tg = __fmul_rn(ws[2 * h + (e >> 1)], (e & 1) ? xd1 : xd0);  // t = ws * xd
                acc[j][4 * h + e] = __fmaf_rn(biased_float(d[e]), tg, acc[j][4 * h + e]);
              }
            }
          }
        }
        if (kRing == kRingLate && refill && wz < p.nsplit) fetch(*refill);
      };
      if constexpr (kStage > 0) {
#pragma unroll 1
        for (int g = gb; g < ge; ++g) {  // ascending g
          cp_async_wait<kStage - 1>();  // this lane's copies of the oldest slot have landed
          __syncwarp();                 // and so have the other lanes'
          const uint8_t* slot = stage + next_slot * kSlotBytes;
          const MmaTile t = load_mma_tile<P, true>(slot, reinterpret_cast<const uint16_t*>(slot + kTileBytes), gid, tig);
          __syncwarp();                 // every lane has read the slot before it is refilled
          stage_tile(next_slot);
          next_slot = next_slot + 1 == kStage ? 0 : next_slot + 1;
          group(t, nullptr, g);
        }
      } else if constexpr (kDepth == 2 && kRing != kRingRotate) {
        // The two sets alternate: the oldest is consumed and refilled in place.
        int g = gb;
        if (phase == 1 && g < ge) {
          group(ring[1], &ring[1], g++);
          phase = 0;
        }
#pragma unroll 1
        for (; g + 1 < ge; g += 2) {  // ascending g
          group(ring[0], &ring[0], g);
          group(ring[1], &ring[1], g + 1);
        }
        if (g < ge) {
          group(ring[0], &ring[0], g);
          phase = 1;
        }
      } else {
#pragma unroll 1
        for (int g = gb; g < ge; ++g) {  // ascending g
          const MmaTile t = ring[0];
#pragma unroll
          for (int i = 0; i + 1 < kDepth; ++i) ring[i] = ring[i + 1];
          if (wz < p.nsplit) fetch(ring[kDepth - 1]);
          group(t, nullptr, g);
        }
      }
    }
    float* const slot = slots + ((r & 1) * kMmaStripWarps + warp) * kTile;
#pragma unroll
    for (int j = 0; j < kJ; ++j) {
      if constexpr (kFold4) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          *reinterpret_cast<float4*>(slot + at(j, 4 * h, lane)) =
              make_float4(acc[j][4 * h], acc[j][4 * h + 1], acc[j][4 * h + 2], acc[j][4 * h + 3]);
        }
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) slot[at(j, e, lane)] = acc[j][e];
      }
    }
    __syncthreads();
    // The fold of this round's slices r * ways .. (each element always by the same thread).
    const float* const round = slots + (r & 1) * kMmaStripWarps * kTile;
    const int valid = min(ways, p.nsplit - r * ways);
    if constexpr (kFold4) {
      constexpr int kTile4 = kTile / 4;
      for (int i = static_cast<int>(threadIdx.x); i < nout / 4; i += kMmaStripThreads) {
        const int s = i / kTile4, e = i % kTile4;
        float4 v = reinterpret_cast<const float4*>(out)[i];
#pragma unroll
        for (int q = 0; q < kMmaStripWarps; ++q) {
          if (q < valid) {  // ascending z
            const float4 a = reinterpret_cast<const float4*>(round)[(s * ways + q) * kTile4 + e];
            v = make_float4(__fadd_rn(v.x, a.x), __fadd_rn(v.y, a.y), __fadd_rn(v.z, a.z), __fadd_rn(v.w, a.w));
          }
        }
        reinterpret_cast<float4*>(out)[i] = v;
      }
    } else {
      for (int i = static_cast<int>(threadIdx.x); i < nout; i += kMmaStripThreads) {
        const int s = i / kTile, e = i % kTile;
        float v = out[i];
        for (int q = 0; q < valid; ++q) v = __fadd_rn(v, round[(s * ways + q) * kTile + e]);  // ascending z
        out[i] = v;
      }
    }
  }
  __syncthreads();
  // Stores, column fastest: element (row, c) of a strip is element e of 8-row tile j = row / 8 in
  // lane l (at(j, e, l)), e = 4 (c / 16) + 2 ((c / 8) % 2) + row % 2, l = 4 (c % 8) + (row % 8) / 2.
  for (int i = static_cast<int>(threadIdx.x); i < nout; i += kMmaStripThreads) {
    const int s = i / kTile, row = (i % kTile) >> 5, c = i & 31;
    const int st = sb * strips + s;
    if (row < rows && st < p.nstrips && st * 32 + c < p.n) {
      const int e = 4 * (c >> 4) + 2 * ((c >> 3) & 1) + (row & 1), ln = 4 * (c & 7) + ((row & 7) >> 1);
      p.y[(m0 + row) * p.n + st * 32 + c] = out[s * kTile + at(row >> 3, e, ln)];
    }
  }
}

}  // namespace twinbit::cuda::detail
