// The pieces of the CUDA gemm shared by its translation units (decode kernels, prefill kernels,
// the plan) and by the benchmark's variant launcher (bench/cuda/gemm_variants.cu), which launches
// measured-slower kernels through the same geometry checks. Not part of the backend's face: the
// backend and its users go through gemm_kernels.h and gemm_plan.h.
//
// Host-side only (no device code): the kernels' parameter block, the block shape constants, the
// kernel pickers of the product set, and the two launchers every schedule ends in.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/gemm_kernels.h"
#include <twinbit/status.hpp>

namespace twinbit::cuda::detail {

constexpr int kStripsPerBlock = 4;                 // warps per block, one strip each
constexpr int kThreads = kStripsPerBlock * 32;
constexpr int kChunkGroups = 16;                   // activation groups staged per pass
constexpr int kRowTile = 8;                        // rows per block when M > 1
constexpr int kRowTileLarge = 16;                  // rows per block on vocabulary-sized outputs
constexpr int kStripDepth = 4;                     // strip kernel: weight tiles in flight per warp

// The parameters of the slice-block kernel (gemm_slice_kernel.cuh), decode and prefill alike.
struct Params {
  const uint8_t* codes;     // (np/32, ngroups, 32 cols, 32 k) int8 | (.., 32 cols, 16 bytes) q4
  const uint16_t* scales;   // (np/32, ngroups, 32 cols) fp16 bits
  const float* x;           // F32: (m, kp)
  const int8_t* xq;         // I8: (m, kp)
  const float* xd;          // I8: (m, ngroups)
  float* y;                 // (m, n)
  float* partial;           // (nsplit, m, np)
  unsigned* counters;       // (strip_blocks, row_tiles)
  int64_t m;
  int n, np, ngroups, nsplit, nstrips, strip_blocks, row_tiles;
  int slices_per_block;     // consecutive slices one block runs (fills the GPU in one wave)
  int gbase, grem;          // slice_begin's terms, ngroups / nsplit and ngroups % nsplit (a division
                            // on the device is a subroutine call)
  int strip_ways;           // tensor-core strip blocks: warps per strip (launch_mma_strips sets it)
  int l2_ahead;             // tensor-core strip blocks built to ask tiles into L2 (kL2): how many
                            // groups ahead, 0 for none (launch_mma_strips sets it)
};

// The tensor-core kernels' product forms of kLean (slice bounds from gbase / grem, and a packed NaN
// test of the weight scales; gemm_mma.cuh, tile_operands): the strip blocks run it (gate_up M = 2
// 14.43 vs 14.69 us, M = 32 34.14 vs 35.07, lm_head M = 8 93.92 vs 95.10 on the H200), the row-tile
// blocks do not (lm_head M = 16 166.3 vs 150.8, M = 32 206.5 vs 202.6; h200-2026-12-03-rows.md).
// Once the row tiles of 32 and 64 rows folded in shared memory they did for q8 (64 rows: lm_head
// M = 128 / 512 500.1 / 1816.2 vs 556.5 / 2034.8, gate_up M = 512 174.5 vs 194.7; 32 rows: gate_up
// M = 128 58.4 vs 60.2) but still not for q4 (lm_head M = 512 2396.0 vs 2213.9, gate_up 215.7 vs
// 208.1; h200-2026-12-04-smem-fold.md).
constexpr bool kMmaStripsLean = true;
template <tb_prec P, int MT>
constexpr bool kMmaRowsLean = P == TB_PREC_Q8 && MT >= 32;

// Slice z's first group, as twinbit::slice_begin (core/numerics.h) from the host's terms.
#ifdef __CUDACC__
__device__ __forceinline__ int slice_lo(const Params& p, int z) { return z * p.gbase + min(z, p.grem); }
#endif

using KernelFn = void (*)(Params);

// The parameter block of a launch over strip_blocks x row_tiles (x slice groups) blocks.
Params gemm_params(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, int64_t strip_blocks,
                   int64_t row_tiles, int64_t slices_per_block);

// ---- the product's kernels (each nullptr where the product has none) ----

// Decode slice blocks (gemm_decode.cu): one slice per block, prefetch depth 1, held to 40
// registers (12 blocks per SM).
KernelFn decode_slice_kernel(tb_prec prec, tb_act_mode mode);
// Prefill slice blocks (gemm_prefill.cu) for row tile mt (8 or 16), cols strips per warp (1 or
// 2), every slice per block or one, rows inside the k loop or not: only the combinations the plan
// chooses (gemm_plan.cu, plan_prefill) exist; any other gives nullptr.
KernelFn prefill_kernel(tb_prec prec, tb_act_mode mode, int mt, int cols, bool all_slices, bool rows_inner);
// Integer tensor-core kernels (gemm_mma.cu; mode I8, M >= 2, sm_80 and newer): row tile mt (8,
// 16, 32 or 64), one strip per warp, one slice per block or every slice; nullptr otherwise.
KernelFn mma_kernel(tb_prec prec, int mt, bool all_slices);
// Tensor-core strip blocks (gemm_mma_strips.cu; mode I8, M >= 2, sm_80 and newer): row tile mt
// (8, 16 or 32), weight tiles in a register ring (stage 0) or staged in shared memory (stage
// kMmaStripStage); or `acts`: the block's activations staged (row tile kMmaStripActsRows, stage 0,
// held to kMmaStripActsBlocksPerSm); nullptr otherwise.
// `l2`: the register-ring kernel that asks each weight tile into L2 some groups before it loads
// it (Params::l2_ahead; acts only).
KernelFn mma_strips_kernel(tb_prec prec, int mt, int stage = 0, bool acts = false, bool l2 = false);
// Weight tiles staged per warp by the product's staged strip blocks.
constexpr int kMmaStripStage = 4;
// How a ring of two register sets turns (kStage = 0, kDepth = 2): kRingRotate copies the younger
// set into the older after each group (register moves every group); kRingEarly and kRingLate
// let the sets alternate, the consumed one refilled in place right after its operands are taken
// (early: the next load leaves sooner) or after the group's float step (late: fewer registers
// live at once).
enum MmaRing { kRingRotate = 0, kRingEarly = 1, kRingLate = 2 };
// The product's.
constexpr int kMmaStripRing = kRingLate;
// The strip kernels' product forms: q8 fragment words loaded one by one (kWords, gemm_mma.cuh's
// load_mma_tile_lane), and slice sums folded four floats at a time (kFold4: a lane's four sums of
// a 16-column half leave as one 16-byte store; gemm_mma_strips.cuh).
constexpr bool kMmaStripWords = true;
constexpr bool kMmaStripFold4 = true;
// How many groups ahead of its register ring's loads an activation-staging strip kernel asks
// its weight tiles into L2 (cp.async.bulk.prefetch), where the plan turns it on (one row tile,
// more blocks than one wave: lm_head M 12 / 16 on the H200 114.5 / 119.6 us against 117.1 /
// 123.4 without; 2 ahead 113.9 / 118.7, 6 ahead 114.5 / 119.4, 8 ahead slower; in one wave,
// gate_up, level or slower).
constexpr int kMmaStripL2Ahead = 4;

// Warps per strip block, and the blocks per SM the strip kernels are built for (their
// __launch_bounds__): the plan's wave count.
constexpr int kMmaStripWarps = 8;
constexpr int64_t mma_strips_blocks_per_sm(int mt) { return mt == 8 ? 3 : 2; }
// The strip blocks that stage their activations (kActs): 16-row tiles, the register ring, held to
// three blocks per SM.
constexpr int kMmaStripActsRows = 16;
constexpr int64_t kMmaStripActsBlocksPerSm = 3;
// Shared memory per SM the plan counts on (sm_90: 228 KiB, 1 KiB of it reserved per block). On a
// device with less the same kernels run, fewer blocks at a time.
constexpr int64_t kSmemPerSm = 228 * 1024, kSmemReservedPerBlock = 1024;

// Bytes of one staged weight tile in shared memory (kStage > 0): the codes, then its 32 scales.
constexpr int mma_stage_slot_bytes(tb_prec prec) { return (prec == TB_PREC_Q8 ? 1024 : 512) + 64; }

// Bytes of a block's staged activations (kActs) for `ngroups` groups: per group the B fragments of
// the row tile's 8-row tiles (8 bytes a lane) and its MT scales.
constexpr size_t mma_strips_act_bytes(int mt, int64_t ngroups) {
  return static_cast<size_t>(ngroups) * (static_cast<size_t>(mt / 8) * 32 * 8 + static_cast<size_t>(mt) * sizeof(float));
}

// Dynamic shared memory of a launch: two rounds of slot sums (one slot per warp) and the running
// outputs of the block's strips, MT x 32 floats each; then, staged, `stage` tile slots per warp;
// then (kActs) the activations of `act_groups` groups.
constexpr size_t mma_strips_smem_bytes(int mt, int strips, int stage = 0, tb_prec prec = TB_PREC_Q8,
                                       int64_t act_groups = 0) {
  return static_cast<size_t>(2 * kMmaStripWarps + strips) * static_cast<size_t>(mt) * 32 * sizeof(float) +
         static_cast<size_t>(kMmaStripWarps) * static_cast<size_t>(stage) * mma_stage_slot_bytes(prec) +
         mma_strips_act_bytes(mt, act_groups);
}

// Checks the geometry, then launches a tensor-core strip-block kernel (the product's, or a
// benchmark instantiation of gemm_mma_strips.cuh) over row tiles of mt rows on `stream`; `stage`
// is the kernel's kStage (shared-memory tile slots per warp, 0 for the register ring).
// `acts`: the kernel stages the block's activations (kActs), so the launch adds their shared memory.
// `ways`: warps per strip, 0 for the product's min(nsplit, 8) (fewer, dividing 8: more strips per
// block, each warp more slices in turn). `l2_ahead`: for a kernel built with kL2, groups ahead
// its tiles are asked into L2 (0: none; also none where the codes or scales are not on 16 bytes).
Status launch_mma_strips(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, KernelFn kernel, int mt,
                         cudaStream_t stream, int stage = 0, bool acts = false, int ways = 0, int l2_ahead = 0);
// Threads per block of the tensor-core kernel of row tile mt (kThreads, or twice that at 64 rows:
// two warps per strip split the rows).
int mma_threads(int mt);
// Dynamic shared memory of the product's row-tile tensor-core kernel of row tile mt over every
// slice (all_slices) or one: its fold's sums where it keeps them there (kMmaRowsSmemFold), else 0.
size_t mma_rows_smem(int mt, bool all_slices);
// Lets `kernel` take `bytes` of dynamic shared memory (past the default 48 KiB), once per size.
Status allow_smem(KernelFn kernel, size_t bytes);

// ---- the strip kernel (decode, one block per strip; gemm_decode.cu) ----

// Warps per strip block: one per slice up to 16.
int strip_warps(int64_t nsplit);
// The strip kernel takes decode with nsplit > 1 when its partials fit the default shared memory.
bool strip_fits(int64_t nsplit);
// Checks the geometry on the host, then launches the strip kernel (y = a.y, M = 1) on `stream`;
// with `overlap` (and sm_90+) it may start during the kernel before it (dependent_launch.cuh).
// `product_form`: the kernel's form for this precision and mode (gemm_decode.cu,
// kStripTermsFirst); false, the other one (the benchmark's variant).
Status launch_strip(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, cudaStream_t stream,
                    bool overlap = false, bool product_form = true);

// ---- launch (gemm_plan.cu) ----

// launch_gemm's checks of the shape, rows and buffers (no device call): UNIMPLEMENTED for
// K % 32 != 0, INVALID_ARGUMENT for rows outside 1 .. kMaxRowsPerLaunch, INTERNAL for a null
// device pointer the mode reads.
Status check_launch(const DeviceStrips& w, const GemmLaunch& a);

// Multiprocessors of the current device, asked once per device.
Result<int64_t> device_sms();
// Whether the current device has integer mma (compute capability 8.0 or newer), asked once.
Result<bool> device_has_int_mma();
// Whether the current device runs programmatic dependent launches (9.0 or newer; dependent_launch.cuh).
Result<bool> device_has_dependent_launch();
// Blocks of `kernel` (kThreads per block) resident on the whole device at once (one "wave"),
// from the device's own occupancy answer; asked once per kernel.
Result<int64_t> resident_blocks(KernelFn kernel);
// Checks that every (strip, slice, row tile) has a warp and the workspace is there, then
// launches `kernel` over row tiles of mt rows, cols strips per warp, slices_per_block
// consecutive slices per block, on `stream`.
// `threads` per block: kThreads, or a multiple of it for kernels whose extra warps share the
// same strips (the tensor-core kernel at 64 rows); `smem`: the kernel's dynamic shared memory.
// `overlap` (sm_90+): the launch may start during the kernel before it; only for kernels that
// keep dependent_launch.cuh's CONTRACT (the slice-block template of gemm_slice_kernel.cuh does).
Status launch_slice_blocks(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, KernelFn kernel,
                           int mt, int cols, int64_t slices_per_block, cudaStream_t stream,
                           int threads = kThreads, size_t smem = 0, bool overlap = false);

}  // namespace twinbit::cuda::detail
