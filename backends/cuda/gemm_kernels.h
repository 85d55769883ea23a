// The CUDA gemm: one mapping for decode (M = 1) and prefill (M > 1) on device-resident strips.
//
// NUMERIC CONTRACT. Bit-identical to twinbit::ref::gemm_f32 (mode F32) and twinbit::ref::gemm_i8
// (mode I8) of core/reference.h, i.e. NUMERICS.md: per column the group dot is a sequential
// __fmaf_rn chain over the 32 k of the group (F32) or an exact int32 dot (I8: dp4a, or one integer
// tensor-core mma.sync m16n8k32 per group where the plan runs them: gemm_mma.cu); slice z of
// split_plan(N, K) accumulates fma(p[g], t[g], a) over its groups in ascending g; the slices are
// folded out = +0 + a[0] + a[1] + ... in ascending z. Nothing depends on M or launch geometry.
//
// MAPPING (the schedule; the layout is twinbit/backend.h's tb_strips).
//   - One warp owns one strip (32 output columns): lane l owns column 32*strip + l. Prefill on
//     large grids (lm_head) gives a warp two strips, so each activation read feeds two columns.
//   - A block holds 4 warps = 4 (or 8) adjacent strips, one slice z of split_plan, and one tile
//     of up to MT rows (MT = 1 at M = 1; 8, or 16 past 64 Ki columns, otherwise): all warps share
//     the activations of that slice, staged in shared memory and read as broadcasts.
//   - Per group a lane loads its column's 32 codes with two 16-byte loads (q8; the warp reads the
//     whole 1 KiB tile) or one 16-byte load (q4, packed: the warp reads 512 contiguous bytes), the
//     next group's loads are issued before the current group is computed, codes become floats by
//     a byte permute into the mantissa of 2^23 and one exact subtraction, and every loaded weight
//     is reused across the MT rows of the tile.
//   - All slices run in ONE launch. With nsplit > 1 every block writes its slice's partial sums;
//     the last block to finish a (strips, row-tile) folds the nsplit partials in ascending z (a
//     counter decides who is last; the sum itself never uses atomics). Decode kernels of this
//     form are held to 40 registers (12 blocks per SM: lm_head's grid is then whole waves).
//   - Prefill grids that fill the GPU twice instead give a block EVERY slice of its strips and
//     row tile: it walks them in ascending z and folds each completed slice into registers
//     (out = out + a), so there are no partials, no counter and no second pass.
//   - Decode of the small projections (M = 1, nsplit >= 8, strips <= SMs, every warp's share in
//     flight at once: q/o, k/v, qkv; in mode I8 also gate, down, lm_head) runs ONE BLOCK PER STRIP: its
//     up to 16 warps take contiguous slice ranges, keep 4 tiles in flight each, read the
//     activations as global broadcasts, leave the slice partials in shared memory, and after one
//     barrier warp 0 folds them in ascending z.
//   - Mode I8 past 96 rows (and from 16 where the strip blocks do not run) runs the integer tensor cores instead
//     (gemm_mma.cu, its own MAPPING; the rule: gemm_plan.h): a
//     warp's strip is the A operand of two m16n8k32 mmas per group, rows in tiles of 8 to 64 are
//     the B operand, staged in shared memory in fragment order; the float step stays per (column,
//     row, group) on the CUDA cores, in the contract's order.
//   - Mode I8 up to 8 rows, up to 96 where they fit (q8: 32 where the row tiles fill the GPU twice), and up to 32 where the row tiles leave the GPU half empty, runs tensor-core STRIP BLOCKS
//     instead (gemm_mma_strips.cuh): a block's 8 warps take the slices of its 1-8 strips round
//     by round and fold them through shared memory in ascending z; a warp's weight tiles in
//     flight are a ring of registers, or slots in shared memory filled by cp.async on grids of
//     more than one wave.
//   - Which of these schedules runs is the plan's choice per shape (gemm_plan.h; the measurements
//     behind each rule: docs/results/cuda-kernel-choices.md). The library compiles only the
//     kernels the plan can choose; the measured-slower alternatives are benchmark code
//     (bench/cuda/gemm_variants.h), bit-tested there.
//
// PRECONDITIONS (checked on the host by launch_gemm before every launch; a failed check is a
// status, never a silent in-kernel guard): K % 32 == 0; the grid covers every (strip, slice,
// row tile); the workspace is large enough; counters are zero (kernels leave them zero).
//
// THREAD SAFETY. launch_gemm is reentrant; concurrent launches need distinct workspaces.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <twinbit/backend.h>
#include "core/precision.h"
#include <twinbit/status.hpp>

namespace twinbit::cuda {

// The kernels are templates instantiated for q8 and q4, picked by a switch over tb_prec. A row
// added to the precision table stops the build here until its kernels exist; kernels_have()
// keeps supports() and weights_bind from accepting a precision without them.
static_assert(kPrecisionCount == 2, "cuda kernels exist for q8 and q4 only: write the new "
                                    "precision's kernels, add them to the pickers' switches, "
                                    "then extend kernels_have()");
constexpr bool kernels_have(tb_prec prec) {
  switch (prec) {
    case TB_PREC_Q8:
    case TB_PREC_Q4:
      return true;
  }
  return false;
}

// A strip set resident in device memory (the canonical layout, uploaded unchanged).
struct DeviceStrips {
  tb_prec prec = TB_PREC_Q8;
  int64_t n = 0, k = 0, np = 0, kp = 0;
  int64_t n_total = 0;  // the projection's N: the fold plan is split_plan(n_total, k) (fold_plan)
  int64_t n_begin = 0;  // where these columns start in the projection (messages)
  const uint8_t* codes = nullptr;    // q8: (np/32, kp/32, 32 cols, 32 k) int8; q4: (.., 16 bytes)
  const uint16_t* scales = nullptr;  // (np/32, kp/32, 32 cols) fp16 bits
};

// Which kernel runs decode (M = 1, nsplit > 1); every path gives the same bits.
enum class DecodePath {
  kAuto = 0,         // strip blocks when nsplit >= 8, the strips fit one wave (I8: two) and
                     // each warp's share is in flight at once (q/o, k/v, qkv), in mode I8 also
                     // where the shares are longer (down, lm_head); slice blocks otherwise
  kSliceBlocks = 1,  // a block per (4 strips, slice range): global partials, last-block fold
  kStripBlocks = 2,  // a block per strip: slices over its warps, shared-memory fold
};

// One gemm on device buffers, with the plan's schedule (gemm_plan.h).
struct GemmLaunch {
  tb_act_mode mode = TB_ACT_F32;
  int64_t m = 0;                 // rows
  const float* x = nullptr;      // mode F32: (m, kp) floats, row stride kp
  const int8_t* xq = nullptr;    // mode I8:  (m, kp) codes, row stride kp
  const float* xd = nullptr;     // mode I8:  (m, kp/32) scales, row stride kp/32
  float* y = nullptr;            // (m, n), row stride n
  float* partial = nullptr;      // workspace: gemm_partial_floats() floats
  unsigned* counters = nullptr;  // workspace: gemm_counter_count() zeroed counters

  DecodePath decode = DecodePath::kAuto;  // decode (M = 1): the plan's choice, or a forced one
                                          // (both kernels are the product's; same bits)
  bool overlap_previous = true;  // on sm_90+, where the plan finds it pays (gemm_plan.h): start
                                 // while the previous kernel in the stream runs
                                 // (dependent_launch.cuh); off: after it
};

// Most rows one launch takes (row tiles index the grid; callers loop over larger M).
constexpr int64_t kMaxRowsPerLaunch = int64_t{1} << 20;

// Workspace a launch with `m` rows needs (0 when split_plan gives one slice); enough for any
// row_tile choice.
size_t gemm_partial_floats(const DeviceStrips& w, int64_t m);
size_t gemm_counter_count(const DeviceStrips& w, int64_t m);
// Rows per launch that keep the partial buffer within `max_partial_bytes` (>= 1).
int64_t gemm_rows_per_launch(const DeviceStrips& w, size_t max_partial_bytes);

// Why a shape is refused (nullptr when supported): "K % 32 != 0 (K = 100) ...".
const char* gemm_unsupported_reason(int64_t n, int64_t k);

// Checks the geometry on the host, then launches asynchronously on `stream`.
Status launch_gemm(const DeviceStrips& w, const GemmLaunch& a, cudaStream_t stream);

}  // namespace twinbit::cuda
