// The measured-slower schedules of the CUDA gemm, kept as benchmark code: twinbit-bench times
// them interleaved against the product's schedule (backends/cuda/gemm_plan.h), and
// tests/test_cuda_gemm_variants.cpp holds them to the reference's bits (a time means nothing
// if the bits are wrong). They are not compiled into the library. What each one measured, and
// why it lost: docs/results/cuda-kernel-choices.md.
//
// A variant is the product's plan with some choices forced (GemmForce, GemmLaunch::decode, a lower
// slice count) and optionally one of the kernels only this code has:
//   unpacked   decode slice blocks without the 12-blocks-per-SM register bound; prefill two
//              strips per warp without the 3-blocks-per-SM bound
//   merged     decode: a block runs several consecutive slices when that fits the grid in one
//              wave (partials stored as each slice completes)
//   depth 2    decode: two weight tiles in flight per warp instead of one
//   alt_codes  decode, mode F32, the packed slice blocks: codes become floats the other way
//              (gemm_lanes.cuh, kAltCodes): q8 by the I2F conversion instead of the byte permute
//              into 2^23 and one exact subtraction; q4 by that byte permute of each nibble masked
//              into its byte instead of one lop3 into a float of the nibble's exponent
//   mma_ordered  tensor-core strip blocks with the mmas in program order (asm volatile)
//   mma_depth  tensor-core strip blocks with 4 or 6 weight tiles in flight per warp (the product: 2)
//   mma_stage  tensor-core strip blocks with 4, 6 or 8 weight tiles in flight per warp in shared
//              memory (cp.async), not in registers
//   mma_ring   tensor-core strip blocks with the register ring turned another way (rotated by
//              copies, or the alternating sets refilled early or late)
//   mma_acts   the plan's tensor-core strip blocks with the row tile's activations of every group
//              staged in shared memory by the block once
//   mma_unlean (benchmark column mma_otherlean)  the plan's tensor-core kernel in the form of kLean
//              the product does not run for it (kMmaStripsLean, kMmaRowsLean)
//   mma_strips_min_blocks  tensor-core strip blocks of 16 rows held to 3 blocks per SM
//   mma_pairs  the plan's tensor-core strip blocks (register ring), q8, each column's fragment
//              words as one 8-byte load (register moves before every mma), not a load per word
//              (q4: the product's kernel)
//   mma_fold1  the plan's tensor-core strip blocks (register ring) folding their slice sums one
//              float at a time, not four
//   mma_l2_ahead  the plan's tensor-core strip blocks staging activations (register ring) asking
//              each weight tile into L2 (cp.async.bulk.prefetch) N groups before the ring loads
//              it, or not at all (-1) where the plan does. With mma_acts, mma_pairs, mma_fold1 and
//              mma_l2_ahead replace their form in the activation-staging kernel, whatever the plan
//   mma_ways   the plan's tensor-core strip blocks with fewer warps per strip (each warp runs more
//              slices in turn; more strips per block, fewer blocks)
//   mma_row_warps  tensor-core row-tile blocks with two warps per strip (half the rows each),
//              registers held to two blocks per SM
//   mma_rows_min_blocks 0  tensor-core row-tile blocks with ptxas's free register choice where
//              the product holds them to a number of blocks per SM (32 and 64 rows)
//   mma_unbiased   tensor-core row-tile blocks whose mmas start at 0 (four float-step
//              instructions per element, not three)
//   mma_reg_fold   tensor-core row-tile blocks of 32 or 64 rows folding their slice sums in
//              registers (128 floats a thread at 64 rows), testing each 8-row tile for rows,
//              at the block bound the product had with that fold (3 blocks an SM at 32 rows,
//              ptxas's choice at 64)
// and, through the forced prefill choices, the prefill forms the plan never picks (one strip per
// warp with rows inside the k loop over one slice, or rows outside over every slice; two strips
// per warp over every slice in mode F32, or one slice in mode I8). A variant the product
// compiles runs the library's own kernel.
//
// Every variant gives the contract's bits except nsplit below split_plan(N, K) (timing only).
// THREAD SAFETY. As launch_gemm.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_kernels.h"
#include "backends/cuda/gemm_plan.h"
#include <twinbit/status.hpp>

namespace twinbit::bench {

struct GemmVariant {
  int64_t nsplit = 0;         // 0: split_plan(N, K); 1 .. split_plan: fewer, longer slices
  cuda::GemmForce force;      // prefill choices forced instead of the plan's
  // Decode slice blocks only (M = 1; with a.decode = kSliceBlocks where the plan picks strips).
  bool merged = false;
  int depth = 1;              // 1 or 2
  bool alt_codes = false;     // mode F32, one slice per block (not merged), depth 1, packed
  // Decode slice blocks, or prefill with two strips per warp.
  bool unpacked = false;
  // Decode strip blocks in the form the product does not run for this precision and mode (terms
  // first, or each group's term and accumulation in turn: gemm_decode.cu, kStripTermsFirst).
  bool strip_other_form = false;
  // Tensor-core strip blocks (mode I8, M >= 2): the mmas kept in program order (asm volatile).
  bool mma_ordered = false;
  int mma_depth = 0;          // tensor-core strip blocks: 0 (the product's, 2), 4 or 6 weight tiles in flight
  int mma_stage = 0;          // tensor-core strip blocks: 0 (registers), or 4, 6 or 8 weight tiles in flight
                              // staged in shared memory by cp.async
  int mma_ring = -1;          // tensor-core strip blocks, register ring of two: -1 the product's, or a
                              // cuda::detail::MmaRing (rotate, early, late)
  int mma_strips_min_blocks = 0;  // tensor-core strip blocks, 16 rows: 0 (the product's, 2) or 3 blocks per
                                  // SM (registers held to 85), register ring or mma_stage 4
  bool mma_acts = false;      // tensor-core strip blocks (the plan's form): the block's activations
                              // staged in shared memory once
  int mma_ways = 0;           // tensor-core strip blocks (the plan's kernel): warps per strip, 0 for the
                              // product's min(nsplit, 8); fewer (dividing 8) put more strips in a block
  bool mma_pairs = false;      // tensor-core strip blocks (the plan's, register ring), q8: pair loads
  bool mma_fold1 = false;      // tensor-core strip blocks (the plan's, register ring): the fold by floats
  int mma_l2_ahead = 0;        // tensor-core strip blocks (the plan's, register ring): 0 the plan's; -1
                               // none; N > 0 tiles into L2 N groups ahead (activation-staging kernels)
  bool mma_unlean = false;     // tensor-core kernels (the plan's, strips or row tiles) in the other form
                              // of kLean than the product's (cuda::detail::kMmaStripsLean, kMmaRowsLean)
  // Tensor-core row-tile blocks (mode I8, M >= 2, every slice per block; force.mma_strips = kOff).
  int mma_row_warps = 0;      // 0: the product's; 2 (with mma_rows_min_blocks 2): two warps per strip,
                              // each half the row tile (16, 32, 64)
  int mma_rows_min_blocks = -1;  // -1: the product's; 0: ptxas's registers where the product holds them
                                 // (32 rows); 2 with two warps per strip: held to 2 blocks per SM
  bool mma_unbiased = false;  // accumulators start at 0: float(isum) is an integer add, then the FADD
  bool mma_reg_fold = false;  // the fold's sums in registers, not shared memory (row tiles 32 and 64)
};

// Launches variant v of the gemm (a's buffers and rows) asynchronously on `stream`, after
// launch_gemm's checks. INVALID_ARGUMENT naming the conflict when v asks for something its
// schedule does not have (a decode-only kernel at M > 1, slice-block options on strip blocks,
// alt_codes outside F32, a depth, row tile or strips per warp outside the sets above).
Status launch_gemm_variant(const cuda::DeviceStrips& w, const cuda::GemmLaunch& a, const GemmVariant& v,
                           cudaStream_t stream);

}  // namespace twinbit::bench
