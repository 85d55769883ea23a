// The launch choice of the CUDA gemm: the plan that picks, per shape, which of the product's
// schedules (gemm_kernels.h, MAPPING) runs, and the launch of a planned schedule.
//
// THE RULES (each chosen by an interleaved measurement on the H200; the numbers and their runs:
// docs/results/cuda-kernel-choices.md). nstrips = np / 32; "fill the GPU k times" means k blocks
// per multiprocessor of the device the launch runs on.
//   - Decode (M = 1) with nsplit > 1 runs ONE BLOCK PER STRIP when each warp's share of slices
//     is in flight at once (<= 4 tiles), nsplit >= 8 and the strips fit one wave (nstrips <=
//     SMs; two waves in mode I8): a short latency chain with no global partials (q/o, k/v, qkv;
//     I8 gate). In mode I8 also wherever a warp's share is longer (down, lm_head), where its dp4a
//     rounds, terms first, beat the slice blocks. Otherwise slice blocks, one slice per block,
//     held to 12 blocks per SM (F32 gate, gate_up, down, lm_head; I8 gate_up: more strips or
//     longer shares, where those strip blocks would serialise).
//   - Decode and the slice blocks may start while the kernel before them runs (programmatic
//     dependent launch, sm_90+, where the caller allows it: GemmLaunch::overlap_previous): their
//     first weight tiles load during that kernel's tail, the activations after it ends. Back to
//     back on the H100 every M = 1 and F32 M = 4 shape gained 1.6-2.9 us a call (q_o F32 6.25 vs
//     7.88, gate_up 12.67 vs 15.11) and none lost.
//   - Prefill in mode I8 runs the integer tensor cores on devices that have them (sm_80+) at
//     every M > 1: the strip blocks (gemm_mma_strips.cuh: a strip's slices over a block's warps)
//     up to 8 rows, up to 96 where the 16-row blocks staging activations fit (below; in q8 only
//     up to 32 where the row-tile blocks fill the GPU twice: their fold in shared memory wins
//     there), and up to
//     32 where the row-tile blocks would not fill the GPU twice, in 8-row tiles up to 16 rows, 16
//     above; otherwise the row-tile kernel (gemm_mma.cu), every slice per block, rows per block
//     the smallest of 8, 16, 32 that holds M; past 32 rows 64, or 32 where there would be fewer
//     than two 64-row blocks an SM (gate_up M = 97..128).
//     The strip blocks keep their weight tiles in flight in shared memory (cp.async, 4 per warp)
//     when they need more than one wave of blocks (lm_head; gate_up from 16 rows), in a ring of
//     registers otherwise (gate_up up to 8 rows: one wave, where the staged form was slower).
//     From 9 to 96 rows the strip blocks take 16-row tiles that stage the row tile's activations
//     in shared memory once, with the register ring, held to 3 blocks per SM, where three such
//     blocks' shared memory fits an SM and the blocks fill the GPU twice (gate_up, lm_head at K =
//     2048; not gate's 192); they then run even where row-tile blocks would fill the GPU twice
//     (lm_head M = 16: 125.7 vs 150.8 us; M = 32: 197.8 vs 203.7; M = 96: 533.0 vs 580.8). Where one row tile holds every
//     row and they take more than one wave (lm_head M 9-16), each warp asks its weight tiles into
//     L2 four groups before its ring loads them (lm_head M = 16: 119.3 vs 123.3 us; with two row
//     tiles the blocks of a strip already share its tiles in L2). Past 16 rows (two row tiles or more) such
//     blocks take two strips each, four warps per strip, where three of them still fit an SM:
//     one staging of the activations for both strips, one wave instead of two (gate_up M = 32).
//     Strip blocks start while the kernel before them (the quantiser) runs where they are at
//     least two per SM and one per strip: where fewer, early blocks crowd onto the SMs the
//     quantiser has left (down M = 16: 22.0 vs 18.9 us); with two strips a block the quantiser's
//     last blocks find no room beside them (gate_up M = 32: 25.5 vs 25.0).
//     The dp4a slice blocks run where the tensor cores do not (older devices, or forced). The
//     rules below are then mode F32's, and I8's where the tensor cores do not run.
//   - Prefill rows per block: 16 on vocabulary-sized outputs (np > 65536), 8 otherwise (a larger
//     tile reuses each weight more but leaves small grids with too few blocks).
//   - Prefill strips per warp: two when one-strip blocks would fill the GPU 8 times over (each
//     shared-memory activation read then feeds two fma chains; it costs registers, so it pays
//     only on large grids). With two: mode F32 keeps one slice per block, mode I8 walks every
//     slice.
//   - Prefill with one strip per warp walks every slice in a block (the fold in registers: no
//     partials, counter or second pass) when such blocks fill the GPU twice, and then mode F32
//     puts the rows inside the k loop; with one slice per block the rows stay outside.
// Every schedule gives the contract's bits; the plan decides speed only.
//
// THREAD SAFETY. Pure functions, and launches as launch_gemm (gemm_kernels.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/gemm_kernels.h"
#include <twinbit/status.hpp>

namespace twinbit::cuda {

// One schedule of the slice-block or strip kernels.
struct GemmSchedule {
  int64_t nsplit = 1;         // slices: fold_plan, split_plan(n_total, K) (a benchmark may ask fewer)
  bool strip_blocks = false;  // decode: one block per strip (the fields below are then unused)
  int row_tile = 1;           // rows per block: 1 (decode), 8 or 16 (prefill)
  int cols = 1;               // strips per warp: 1, or 2 (prefill)
  bool all_slices = false;    // prefill: a block walks every slice of its strips, folding in
                              // registers (otherwise one slice per block, last-block fold)
  bool rows_inner = false;    // prefill, mode F32, one strip per warp: the rows inside the k loop
  bool mma = false;           // prefill, mode I8: integer tensor cores (gemm_mma.cu), row tile 8,
                              // 16, 32 or 64, one strip per warp, one or every slice per block
  bool mma_strips = false;    // with mma: the strip-block form (gemm_mma_strips.cuh): the slices
                              // of a strip over a block's warps, row tile 8, 16 or 32
  int mma_stage = 0;          // with mma_strips: weight tiles staged in shared memory per warp
                              // (detail::kMmaStripStage), or 0: a ring of registers
  bool mma_acts = false;      // with mma_strips: the block stages its row tile's activations in shared
                              // memory (16-row tiles, register ring, 3 blocks per SM)
  int mma_ways = 0;           // with mma_strips: warps per strip, 0 for min(nsplit, 8); fewer put
                              // more strips in a block (each warp runs more slices in turn)
  bool overlap_previous = false;  // the launch may start during the kernel before it
                                  // (GemmLaunch::overlap_previous, dependent_launch.cuh): decode,
                                  // the slice blocks, and strip blocks where the plan says so
                                  // (never the row-tile tensor-core kernel)
  int mma_l2_ahead = 0;       // with mma_acts: weight tiles asked into L2 this many groups before
                              // the register ring loads them (0: none)
};

// A choice of the plan left to it (kAuto) or forced off / on.
enum class Toggle { kAuto = 0, kOff = 1, kOn = 2 };

// Prefill choices a caller forces instead of the plan's (the benchmark's A/B). A forced choice
// feeds the plan's other rules as the plan's own would (forcing one strip per warp re-decides
// the slices per block for one strip). Forcing may name a schedule the product has no kernel
// for: launch_gemm_schedule refuses those, and only the benchmark's variants run them.
struct GemmForce {
  int row_tile = 0;                   // 0: the plan's; 8 or 16
  int cols = 0;                       // 0: the plan's; 1 or 2
  Toggle all_slices = Toggle::kAuto;
  Toggle rows_inner = Toggle::kAuto;
  Toggle mma = Toggle::kAuto;         // mode I8, M >= 2: the tensor cores (kOn), the dp4a slice
                                      // blocks (kOff), or the plan's rule (kAuto)
  Toggle mma_strips = Toggle::kAuto;  // with the tensor cores: strip blocks (kOn) or row-tile
                                      // blocks (kOff)
  Toggle mma_staged = Toggle::kAuto;  // with strip blocks: weight tiles staged in shared memory
                                      // (kOn) or a register ring (kOff)
  Toggle mma_acts = Toggle::kAuto;    // with strip blocks: activations staged (kOn, where they fit
                                      // and nothing forced conflicts) or read per group (kOff)
};

// The plan for a.m rows in mode a.mode with nsplit slices on a device of `sms` multiprocessors;
// a.decode forces the decode kernel (DecodePath). Pure: no device call.
GemmSchedule plan_gemm(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, int64_t sms,
                       const GemmForce& force = {});

// The plan launch_gemm runs for `a` on the current device (its SMs; the dp4a slice blocks
// before sm_80).
Result<GemmSchedule> device_plan(const DeviceStrips& w, const GemmLaunch& a);

// Launches schedule `s` of the product, asynchronously on `stream`, after launch_gemm's checks.
// INVALID_ARGUMENT (before any device call) when `s` is not one the product compiles (e.g. two
// strips per warp over every slice in mode F32), names a row tile or strips per warp outside
// the sets above, or asks nsplit outside 1 .. split_plan(N, K) (fewer slices give other bits
// than the contract: timing only).
Status launch_gemm_schedule(const DeviceStrips& w, const GemmLaunch& a, const GemmSchedule& s,
                            cudaStream_t stream);

}  // namespace twinbit::cuda
