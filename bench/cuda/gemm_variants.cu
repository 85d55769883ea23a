// The benchmark's gemm variants (gemm_variants.h): instantiations of the library's slice-block
// kernel template that the product never runs, and the host logic that picked them when they
// were schedule switches of the library (the merged-slices grid rule).
#include "bench/cuda/gemm_variants.h"

#include <cstdint>

#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_mma_rows.cuh"
#include "backends/cuda/gemm_mma_strips.cuh"
#include "backends/cuda/gemm_slice_kernel.cuh"
#include "core/numerics.h"

namespace twinbit::bench {
namespace {

using cuda::detail::gemm_kernel;
using cuda::detail::KernelFn;
using cuda::detail::SliceRun;
constexpr tb_prec kQ8 = TB_PREC_Q8, kQ4 = TB_PREC_Q4;
constexpr tb_act_mode kF32 = TB_ACT_F32, kI8 = TB_ACT_I8;

// gemm_kernel<P, A, MT, kAltCodes = false, kRun, kDepth, kRowsInner, kCols, kMinBlocks> for P of `prec`.
template <tb_act_mode A, int MT, SliceRun R, int D = 1, bool RI = false, int C = 1, int MB = 1>
KernelFn by_prec(tb_prec prec) {
  return prec == kQ8 ? gemm_kernel<kQ8, A, MT, false, R, D, RI, C, MB> : gemm_kernel<kQ4, A, MT, false, R, D, RI, C, MB>;
}
template <int MT, SliceRun R, int D = 1, int C = 1, int MB = 1>
KernelFn by_prec_mode(tb_prec prec, tb_act_mode mode) {
  return mode == kF32 ? by_prec<kF32, MT, R, D, false, C, MB>(prec) : by_prec<kI8, MT, R, D, false, C, MB>(prec);
}

// Decode slice blocks, one slice per block: not held to 12 blocks per SM, depth 1 or 2; or the
// packed kernel (12 per SM) converting codes the other way (mode F32, checked by the caller).
KernelFn decode_one_slice(tb_prec prec, tb_act_mode mode, int depth, bool alt_codes) {
  if (alt_codes) {
    return prec == kQ8 ? gemm_kernel<kQ8, kF32, 1, true, SliceRun::kOne, 1, false, 1, 12>
                       : gemm_kernel<kQ4, kF32, 1, true, SliceRun::kOne, 1, false, 1, 12>;
  }
  return depth == 2 ? by_prec_mode<1, SliceRun::kOne, 2>(prec, mode) : by_prec_mode<1, SliceRun::kOne, 1>(prec, mode);
}

KernelFn decode_merged(tb_prec prec, tb_act_mode mode, int depth) {
  return depth == 2 ? by_prec_mode<1, SliceRun::kMerged, 2>(prec, mode) : by_prec_mode<1, SliceRun::kMerged, 1>(prec, mode);
}

// The prefill forms the product does not compile (gemm_prefill.cu has the others), or nullptr.
template <int MT>
KernelFn prefill_variant(tb_prec prec, tb_act_mode mode, int cols, bool all_slices, bool rows_inner, bool unpacked) {
  constexpr SliceRun k1 = SliceRun::kOne, kAll = SliceRun::kAll;
  if (cols == 2 && unpacked) {
    return all_slices ? by_prec_mode<MT, kAll, 1, 2>(prec, mode) : by_prec_mode<MT, k1, 1, 2>(prec, mode);
  }
  if (cols == 2) {  // held to 3 blocks per SM, with the other slice rule of its mode
    if (mode == kF32 && all_slices) return by_prec<kF32, MT, kAll, 1, false, 2, 3>(prec);
    if (mode == kI8 && !all_slices) return by_prec<kI8, MT, k1, 1, false, 2, 3>(prec);
    return nullptr;
  }
  if (mode == kF32 && rows_inner && !all_slices) return by_prec<kF32, MT, k1, 1, true>(prec);
  if (mode == kF32 && !rows_inner && all_slices) return by_prec<kF32, MT, kAll, 1>(prec);
  return nullptr;
}

Status launch_decode_variant(const cuda::DeviceStrips& w, const cuda::GemmLaunch& a, const GemmVariant& v,
                             int64_t nsplit, cudaStream_t stream) {
  if (v.alt_codes && (a.mode != kF32 || v.merged || v.depth != 1 || v.unpacked)) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: the other code conversion exists for mode F32, packed, one slice "
                 "per block, depth 1 only (got mode %s%s%s, depth %d)", a.mode == kF32 ? "F32" : "I8",
                 v.merged ? ", merged" : "", v.unpacked ? ", unpacked" : "", v.depth);
  }
  // One slice per block: the product's packed kernel unless this variant changes it.
  const bool bench_kernel = v.unpacked || v.depth == 2 || v.alt_codes;
  const KernelFn single = bench_kernel ? decode_one_slice(w.prec, a.mode, v.depth, v.alt_codes)
                                       : cuda::detail::decode_slice_kernel(w.prec, a.mode);
  int64_t slices_per_block = 1;
  KernelFn kernel = single;
  if (v.merged && nsplit > 1) {
    // A block runs several consecutive slices when one slice per block would not fit one wave
    // but the merged grid does; otherwise one slice per block.
    auto slots = cuda::detail::resident_blocks(single);
    if (!slots.ok()) return slots.status();
    const int64_t blocks_per_slice = ceil_div(w.np / 32, cuda::detail::kStripsPerBlock);
    if (blocks_per_slice * nsplit > *slots) {
      const KernelFn merged = decode_merged(w.prec, a.mode, v.depth);
      auto merged_slots = cuda::detail::resident_blocks(merged);
      if (!merged_slots.ok()) return merged_slots.status();
      const int64_t spb = ceil_div(blocks_per_slice * nsplit, *merged_slots);
      if (spb <= nsplit && blocks_per_slice * ceil_div(nsplit, spb) <= *merged_slots) {
        slices_per_block = spb;
        kernel = merged;
      }
    }
  }
  return cuda::detail::launch_slice_blocks(w, a, nsplit, kernel, 1, 1, slices_per_block, stream);
}

// The tensor-core strip kernel with the mmas in program order, or with `depth` weight tiles in
// flight per warp (0: the product's depth).
template <bool kOrdered, int D>
KernelFn mma_strips_form(tb_prec prec, int mt) {
  using cuda::detail::gemm_mma_strips_kernel;
  constexpr int d8 = D > 0 ? D : cuda::detail::kMmaStripDepth<8>, d16 = D > 0 ? D : cuda::detail::kMmaStripDepth<16>,
                d32 = D > 0 ? D : cuda::detail::kMmaStripDepth<32>;
  switch (mt) {
    case 8: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 8, kOrdered, d8> : gemm_mma_strips_kernel<kQ4, 8, kOrdered, d8>;
    case 16: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 16, kOrdered, d16> : gemm_mma_strips_kernel<kQ4, 16, kOrdered, d16>;
    case 32: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 32, kOrdered, d32> : gemm_mma_strips_kernel<kQ4, 32, kOrdered, d32>;
  }
  return nullptr;
}

KernelFn mma_strips_variant(tb_prec prec, int mt, bool ordered, int depth) {
  if (ordered) return mma_strips_form<true, 0>(prec, mt);
  return depth == 4 ? mma_strips_form<false, 4>(prec, mt) : depth == 6 ? mma_strips_form<false, 6>(prec, mt) : nullptr;
}

// The tensor-core strip kernel with `stage` weight tiles in flight per warp in shared memory.
template <int S>
KernelFn mma_strips_staged_form(tb_prec prec, int mt) {
  using cuda::detail::gemm_mma_strips_kernel;
  using cuda::detail::kMmaStripDepth;
  switch (mt) {
    case 8: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 8, false, kMmaStripDepth<8>, S> : gemm_mma_strips_kernel<kQ4, 8, false, kMmaStripDepth<8>, S>;
    case 16: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 16, false, kMmaStripDepth<16>, S> : gemm_mma_strips_kernel<kQ4, 16, false, kMmaStripDepth<16>, S>;
    case 32: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 32, false, kMmaStripDepth<32>, S> : gemm_mma_strips_kernel<kQ4, 32, false, kMmaStripDepth<32>, S>;
  }
  return nullptr;
}

// The tensor-core strip kernel's register ring (two sets) turned by `R` (cuda::detail::MmaRing).
template <int R>
KernelFn mma_strips_ring_form(tb_prec prec, int mt) {
  using cuda::detail::gemm_mma_strips_kernel;
  using cuda::detail::kMmaStripDepth;
  switch (mt) {
    case 8: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 8, false, kMmaStripDepth<8>, 0, R> : gemm_mma_strips_kernel<kQ4, 8, false, kMmaStripDepth<8>, 0, R>;
    case 16: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 16, false, kMmaStripDepth<16>, 0, R> : gemm_mma_strips_kernel<kQ4, 16, false, kMmaStripDepth<16>, 0, R>;
    case 32: return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 32, false, kMmaStripDepth<32>, 0, R> : gemm_mma_strips_kernel<kQ4, 32, false, kMmaStripDepth<32>, 0, R>;
  }
  return nullptr;
}

KernelFn mma_strips_ring(tb_prec prec, int mt, int ring) {
  switch (ring) {
    case cuda::detail::kRingRotate: return mma_strips_ring_form<cuda::detail::kRingRotate>(prec, mt);
    case cuda::detail::kRingEarly: return mma_strips_ring_form<cuda::detail::kRingEarly>(prec, mt);
    case cuda::detail::kRingLate: return mma_strips_ring_form<cuda::detail::kRingLate>(prec, mt);
  }
  return nullptr;
}

// The tensor-core strip kernel of 16 rows held to 3 blocks per SM, register ring (stage 0) or 4
// tiles staged, activations from global memory or staged (kActs).
template <bool kActs, bool kLean = cuda::detail::kMmaStripsLean>
KernelFn mma_strips_3blocks_form(tb_prec prec, int stage) {
  using cuda::detail::gemm_mma_strips_kernel;
  constexpr int d = cuda::detail::kMmaStripDepth<16>, r = cuda::detail::kMmaStripRing;
  if (stage == 0) {
    return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 16, false, d, 0, r, 3, kLean, kActs>
                       : gemm_mma_strips_kernel<kQ4, 16, false, d, 0, r, 3, kLean, kActs>;
  }
  if (stage == 4) {
    return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, 16, false, d, 4, r, 3, kLean, kActs>
                       : gemm_mma_strips_kernel<kQ4, 16, false, d, 4, r, 3, kLean, kActs>;
  }
  return nullptr;
}

KernelFn mma_strips_3blocks(tb_prec prec, int mt, int stage, bool acts) {
  if (mt != 16) return nullptr;
  return acts ? mma_strips_3blocks_form<true>(prec, stage) : mma_strips_3blocks_form<false>(prec, stage);
}

// The product's tensor-core strip kernel (its ring, stage and bound) with kLean and kActs as given:
// the other kLean form, or the block's activations staged.
template <int MT, int S, bool kLean, bool kActs>
KernelFn mma_strips_product_form(tb_prec prec) {
  using cuda::detail::gemm_mma_strips_kernel;
  constexpr int d = cuda::detail::kMmaStripDepth<MT>, r = cuda::detail::kMmaStripRing;
  constexpr int mb = cuda::detail::kMmaStripMinBlocks<MT, d>;
  return prec == kQ8 ? gemm_mma_strips_kernel<kQ8, MT, false, d, S, r, mb, kLean, kActs>
                     : gemm_mma_strips_kernel<kQ4, MT, false, d, S, r, mb, kLean, kActs>;
}

template <int S, bool kLean, bool kActs>
KernelFn mma_strips_product_stage(tb_prec prec, int mt) {
  switch (mt) {
    case 8: return mma_strips_product_form<8, S, kLean, kActs>(prec);
    case 16: return mma_strips_product_form<16, S, kLean, kActs>(prec);
    case 32: return mma_strips_product_form<32, S, kLean, kActs>(prec);
  }
  return nullptr;
}

template <bool kLean, bool kActs>
KernelFn mma_strips_product_like(tb_prec prec, int mt, int stage) {
  if (stage == 0) return mma_strips_product_stage<0, kLean, kActs>(prec, mt);
  if (stage == cuda::detail::kMmaStripStage) {
    return mma_strips_product_stage<cuda::detail::kMmaStripStage, kLean, kActs>(prec, mt);
  }
  return nullptr;
}

// The plan's tensor-core strip kernel on the register ring (row tile mt; kActs: the product's
// staging form) with kWords, kFold4 and kL2 as given (kWords matters to q8; kL2 exists with kActs).
template <tb_prec P, bool kWords, bool kFold4, bool kL2>
KernelFn mma_strips_forms_of(int mt, bool acts) {
  using cuda::detail::gemm_mma_strips_kernel;
  using cuda::detail::kMmaStripDepth;
  using cuda::detail::kMmaStripMinBlocks;
  constexpr int r = cuda::detail::kMmaStripRing;
  constexpr bool kLean = cuda::detail::kMmaStripsLean;
  constexpr int d8 = kMmaStripDepth<8>, d16 = kMmaStripDepth<16>, d32 = kMmaStripDepth<32>;
  constexpr int acts_blocks = static_cast<int>(cuda::detail::kMmaStripActsBlocksPerSm);
  if (acts) {
    return mt == cuda::detail::kMmaStripActsRows
               ? gemm_mma_strips_kernel<P, 16, false, d16, 0, r, acts_blocks, kLean, true, kWords, kFold4, kL2>
               : nullptr;
  }
  if constexpr (kL2) {
    return nullptr;
  } else {
    switch (mt) {
      case 8: return gemm_mma_strips_kernel<P, 8, false, d8, 0, r, kMmaStripMinBlocks<8, d8>, kLean, false, kWords, kFold4>;
      case 16: return gemm_mma_strips_kernel<P, 16, false, d16, 0, r, kMmaStripMinBlocks<16, d16>, kLean, false, kWords, kFold4>;
      case 32: return gemm_mma_strips_kernel<P, 32, false, d32, 0, r, kMmaStripMinBlocks<32, d32>, kLean, false, kWords, kFold4>;
    }
    return nullptr;
  }
}

// q4 has one code word per column, loaded alone either way: its pair-load form is the product's.
template <bool kWords, bool kFold4, bool kL2>
KernelFn mma_strips_forms(tb_prec prec, int mt, bool acts) {
  if (prec == kQ8) return mma_strips_forms_of<kQ8, kWords, kFold4, kL2>(mt, acts);
  return mma_strips_forms_of<kQ4, cuda::detail::kMmaStripWords, kFold4, kL2>(mt, acts);
}

template <bool kWords, bool kFold4>
KernelFn mma_strips_forms(tb_prec prec, int mt, bool acts, bool l2) {
  return l2 ? mma_strips_forms<kWords, kFold4, true>(prec, mt, acts) : mma_strips_forms<kWords, kFold4, false>(prec, mt, acts);
}

KernelFn mma_strips_staged(tb_prec prec, int mt, int stage) {
  switch (stage) {
    case 4: return mma_strips_staged_form<4>(prec, mt);
    case 6: return mma_strips_staged_form<6>(prec, mt);
    case 8: return mma_strips_staged_form<8>(prec, mt);
  }
  return nullptr;
}

// The tensor-core row-tile kernel over every slice with rw warps per strip, the float step biased
// or not, and the registers held to min_blocks blocks per SM (0: ptxas's choice; -1: the
// product's): the forms the product does not build (gemm_mma.cu), or nullptr.
template <int MT>
KernelFn mma_rows_form(tb_prec prec, int rw, bool biased, int min_blocks, bool lean, bool reg_fold) {
  using cuda::detail::mma_rows_kernel;
  constexpr int kProduct = cuda::detail::kMmaRowsMinBlocks<MT>;
  const bool q8 = prec == kQ8;
  if (reg_fold) {  // the register fold at its own bound (3 blocks an SM at 32 rows, ptxas's at 64)
    constexpr int kBound = MT == 32 ? 3 : 0;
    if (!cuda::detail::kMmaRowsSmemFold<MT> || rw != 1 || !biased || min_blocks != -1 || !lean) return nullptr;
    return q8 ? mma_rows_kernel<kQ8, MT, true, 1, true, kBound, cuda::detail::kMmaRowsLean<kQ8, MT>, false>()
              : mma_rows_kernel<kQ4, MT, true, 1, true, kBound, cuda::detail::kMmaRowsLean<kQ4, MT>, false>();
  }
  if (!lean) {  // the product's kernel in the other kLean form
    if (rw != 1 || !biased || min_blocks != -1) return nullptr;
    return q8 ? mma_rows_kernel<kQ8, MT, true, 1, true, kProduct, !cuda::detail::kMmaRowsLean<kQ8, MT>>()
              : mma_rows_kernel<kQ4, MT, true, 1, true, kProduct, !cuda::detail::kMmaRowsLean<kQ4, MT>>();
  }
  if (rw == 2 && biased && min_blocks == 2) {
    return q8 ? mma_rows_kernel<kQ8, MT, true, 2, true, 2>() : mma_rows_kernel<kQ4, MT, true, 2, true, 2>();
  }
  if (rw == 1 && biased && min_blocks == 0 && kProduct != 0) {
    return q8 ? mma_rows_kernel<kQ8, MT, true, 1, true, 0>() : mma_rows_kernel<kQ4, MT, true, 1, true, 0>();
  }
  if (rw == 1 && !biased && min_blocks == -1) {
    return q8 ? mma_rows_kernel<kQ8, MT, true, 1, false, kProduct>() : mma_rows_kernel<kQ4, MT, true, 1, false, kProduct>();
  }
  return nullptr;
}

KernelFn mma_rows_variant(tb_prec prec, int mt, int rw, bool biased, int min_blocks, bool lean, bool reg_fold) {
  switch (mt) {
    case 16: return mma_rows_form<16>(prec, rw, biased, min_blocks, lean, reg_fold);
    case 32: return mma_rows_form<32>(prec, rw, biased, min_blocks, lean, reg_fold);
    case 64: return mma_rows_form<64>(prec, rw, biased, min_blocks, lean, reg_fold);
  }
  return nullptr;
}

}  // namespace

Status launch_gemm_variant(const cuda::DeviceStrips& w, const cuda::GemmLaunch& a, const GemmVariant& v,
                           cudaStream_t stream) {
  TB_RETURN_IF_ERROR(cuda::detail::check_launch(w, a));
  const int64_t contract = fold_plan(w);
  const int64_t nsplit = v.nsplit > 0 ? v.nsplit : contract;
  if (v.nsplit < 0 || nsplit > contract) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: nsplit %lld outside 0 .. %lld",
                 static_cast<long long>(v.nsplit), static_cast<long long>(contract));
  }
  if (v.depth != 1 && v.depth != 2) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: prefetch depth %d (expected 1 or 2)", v.depth);
  }
  const int rt = v.force.row_tile;
  const bool mma_tile = rt == 32 || rt == 64;  // the tensor-core kernels' larger tiles
  if (v.force.cols < 0 || v.force.cols > 2 ||
      (rt != 0 && rt != cuda::detail::kRowTile && rt != cuda::detail::kRowTileLarge && !mma_tile)) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: %d strips per warp, row tile %d (expected 0 = the "
                 "plan's, 1 or 2; 0, 8 or 16, or 32 or 64 for the tensor cores)", v.force.cols, rt);
  }
  auto sms = cuda::detail::device_sms();
  if (!sms.ok()) return sms.status();
  const cuda::GemmSchedule s = cuda::plan_gemm(w, a, nsplit, *sms, v.force);
  const bool decode_only = v.merged || v.depth == 2 || v.alt_codes;
  if (a.m == 1) {
    if (v.strip_other_form) {
      if (!s.strip_blocks) {
        return Error(TB_INVALID_ARGUMENT, "gemm variant: the other form is the strip kernel's, and this "
                     "decode runs slice blocks (force DecodePath::kStripBlocks)");
      }
      return cuda::detail::launch_strip(w, a, nsplit, stream, a.overlap_previous, false);
    }
    if (!decode_only && !v.unpacked) return cuda::launch_gemm_schedule(w, a, s, stream);
    if (s.strip_blocks) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: unpacked, merged, depth 2 and the other code conversion are slice-block "
                   "kernels, and this decode runs strip blocks (force DecodePath::kSliceBlocks)");
    }
    return launch_decode_variant(w, a, v, nsplit, stream);
  }
  if (decode_only) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: merged slices, depth 2 and the other code conversion are decode kernels "
                 "(M = 1), not for %lld rows", static_cast<long long>(a.m));
  }
  if ((v.mma_ordered || v.mma_depth != 0 || v.mma_stage != 0 || v.mma_ring >= 0 || v.mma_strips_min_blocks != 0) &&
      !(s.mma && s.mma_strips)) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: ordered mmas, other depths and staged tiles exist in the "
                 "tensor-core strip blocks only (mode I8, M >= 2, strip blocks)");
  }
  if (v.mma_ways != 0) {  // the plan's strip kernel, fewer warps per strip
    const KernelFn kernel = s.mma && s.mma_strips ? cuda::detail::mma_strips_kernel(w.prec, s.row_tile, s.mma_stage,
                                                                                    s.mma_acts, s.mma_l2_ahead > 0)
                                                  : nullptr;
    if (!kernel || v.mma_ordered || v.mma_depth != 0 || v.mma_stage != 0 || v.mma_ring >= 0 || v.mma_unlean ||
        v.mma_acts || v.mma_strips_min_blocks != 0) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: %d warps per strip exist for the plan's tensor-core strip "
                   "kernel alone (mode I8, strip blocks, nothing else changed)", v.mma_ways);
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, s.row_tile, stream, s.mma_stage, s.mma_acts,
                                           v.mma_ways, s.mma_l2_ahead);
  }
  if (v.mma_pairs || v.mma_fold1 || v.mma_l2_ahead != 0) {  // the plan's strip kernel, one product form replaced
    constexpr bool kWords = cuda::detail::kMmaStripWords, kFold4 = cuda::detail::kMmaStripFold4;
    const bool on_ring = s.mma && s.mma_strips && s.mma_stage == 0;
    const int forms = int{v.mma_pairs} + int{v.mma_fold1} + int{v.mma_l2_ahead != 0};
    const int rt = s.row_tile;
    const bool acts = s.mma_acts || v.mma_acts;  // the plan's, or the staging kernel asked for
    // Tiles into L2: as the plan's, none (-1), or so many groups ahead.
    const int ahead = v.mma_l2_ahead == 0 ? s.mma_l2_ahead : std::max(v.mma_l2_ahead, 0);
    const KernelFn kernel = !on_ring || forms != 1 ? nullptr
                            : v.mma_pairs ? mma_strips_forms<!kWords, kFold4>(w.prec, rt, acts, ahead > 0)
                            : v.mma_fold1 ? mma_strips_forms<kWords, !kFold4>(w.prec, rt, acts, ahead > 0)
                                          : mma_strips_forms<kWords, kFold4>(w.prec, rt, acts, ahead > 0);
    if (!kernel || v.mma_l2_ahead < -1 || v.mma_ordered || v.mma_depth != 0 || v.mma_stage != 0 ||
        v.mma_ring >= 0 || v.mma_unlean || v.mma_strips_min_blocks != 0) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: pair loads (q8), the fold by floats, or weight tiles asked "
                   "into L2 (now %d groups ahead: -1 none, N > 0; activation-staging kernels) exist for the "
                   "plan's tensor-core strip kernel on the register ring, or its activation-staging kernel (16 "
                   "rows), alone (mode I8, strip blocks, no staged tiles, one of the three, nothing else "
                   "changed)", v.mma_l2_ahead);
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, rt, stream, 0, acts, s.mma_acts ? s.mma_ways : 0, ahead);
  }
  if (v.mma_strips_min_blocks != 0) {
    const KernelFn kernel =
        v.mma_strips_min_blocks == 3 ? mma_strips_3blocks(w.prec, s.row_tile, v.mma_stage, v.mma_acts) : nullptr;
    if (!kernel || v.mma_ordered || v.mma_depth != 0 || v.mma_ring >= 0 || v.mma_unlean) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: strip blocks held to %d blocks per SM exist at 3, for row "
                   "tile 16 (now %d), with the register ring or 4 staged tiles (now %d), activations staged or "
                   "not, nothing else", v.mma_strips_min_blocks, s.row_tile, v.mma_stage);
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, s.row_tile, stream, v.mma_stage, v.mma_acts);
  }
  if ((v.mma_unlean || v.mma_acts) && s.mma && s.mma_strips) {
    constexpr bool kLean = cuda::detail::kMmaStripsLean;
    const KernelFn kernel = v.mma_unlean && v.mma_acts ? nullptr
                            : v.mma_unlean && s.mma_acts ? mma_strips_3blocks_form<true, !kLean>(w.prec, 0)
                            : v.mma_unlean ? mma_strips_product_like<!kLean, false>(w.prec, s.row_tile, s.mma_stage)
                                           : mma_strips_product_like<kLean, true>(w.prec, s.row_tile, s.mma_stage);
    if (!kernel || v.mma_ordered || v.mma_depth != 0 || v.mma_stage != 0 || v.mma_ring >= 0 ||
        v.mma_strips_min_blocks != 0) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: the strip blocks in the other kLean form, or with staged activations, "
                   "exist in the product's form only (one of the two; no other ring, depth, stage or bound)");
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, s.row_tile, stream, s.mma_stage,
                                           v.mma_acts || s.mma_acts, s.mma_ways);
  }
  if (v.mma_acts) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: staged activations exist in the tensor-core strip blocks only");
  }
  if (v.mma_row_warps != 0 || v.mma_unbiased || v.mma_rows_min_blocks != -1 || v.mma_unlean || v.mma_reg_fold) {
    const int rw = v.mma_row_warps != 0 ? v.mma_row_warps : 1;
    const KernelFn kernel = s.mma && !s.mma_strips && s.all_slices
                                ? mma_rows_variant(w.prec, s.row_tile, rw, !v.mma_unbiased, v.mma_rows_min_blocks,
                                                   !v.mma_unlean, v.mma_reg_fold)
                                : nullptr;
    if (!kernel || v.mma_ordered || v.mma_depth != 0 || v.mma_stage != 0 || v.mma_ring >= 0) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: row-tile blocks with %d warps per strip, %s mmas, held to "
                   "%d blocks per SM%s: the benchmark has two warps at 2 blocks, ptxas's registers where the "
                   "product holds them, unbiased mmas, or (alone) the register fold at 32 and 64 rows, for the "
                   "tensor cores' row tiles 16, 32 and 64 over every slice (mode I8, strip blocks off)", rw,
                   v.mma_unbiased ? "unbiased" : "biased", v.mma_rows_min_blocks,
                   v.mma_reg_fold ? ", the register fold" : "");
    }
    // Every form but the register fold keeps the product's fold (and its shared memory).
    const size_t smem = v.mma_reg_fold ? 0 : cuda::detail::mma_rows_smem(s.row_tile, true);
    return cuda::detail::launch_slice_blocks(w, a, nsplit, kernel, s.row_tile, 1, nsplit, stream,
                                             cuda::detail::kThreads * rw, smem);
  }
  if (v.mma_ring >= 0) {
    const KernelFn kernel = mma_strips_ring(w.prec, s.row_tile, v.mma_ring);
    if (!kernel || v.mma_ordered || v.mma_depth != 0 || v.mma_stage != 0) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: register ring %d (expected 0, 1 or 2, alone)", v.mma_ring);
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, s.row_tile, stream);
  }
  if (v.mma_stage != 0) {
    const KernelFn kernel = mma_strips_staged(w.prec, s.row_tile, v.mma_stage);
    if (!kernel || v.mma_ordered || v.mma_depth != 0) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: %d staged tiles (expected 4, 6 or 8, and neither ordered "
                   "mmas nor a register depth)", v.mma_stage);
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, s.row_tile, stream, v.mma_stage);
  }
  if (v.mma_ordered || v.mma_depth != 0) {
    const KernelFn kernel = mma_strips_variant(w.prec, s.row_tile, v.mma_ordered, v.mma_depth);
    if (!kernel || (v.mma_ordered && v.mma_depth != 0)) {
      return Error(TB_INVALID_ARGUMENT, "gemm variant: tensor-core strip depth %d (expected 4 or 6, and not "
                   "with ordered mmas)", v.mma_depth);
    }
    return cuda::detail::launch_mma_strips(w, a, nsplit, kernel, s.row_tile, stream);
  }
  if (s.mma) return cuda::launch_gemm_schedule(w, a, s, stream);  // the other tensor-core forms are the product's
  if (mma_tile) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: row tile %d is a tensor-core tile (mode I8, M >= 2)", rt);
  }
  const bool unpacked = v.unpacked && s.cols == 2;
  if (!unpacked && cuda::detail::prefill_kernel(w.prec, a.mode, s.row_tile, s.cols, s.all_slices, s.rows_inner)) {
    return cuda::launch_gemm_schedule(w, a, s, stream);
  }
  const KernelFn kernel =
      s.row_tile == cuda::detail::kRowTile
          ? prefill_variant<cuda::detail::kRowTile>(w.prec, a.mode, s.cols, s.all_slices, s.rows_inner, unpacked)
          : prefill_variant<cuda::detail::kRowTileLarge>(w.prec, a.mode, s.cols, s.all_slices, s.rows_inner, unpacked);
  if (!kernel) {
    return Error(TB_INVALID_ARGUMENT, "gemm variant: no kernel for row tile %d, %d strips per warp, %s per "
                 "block, rows %s the k loop", s.row_tile, s.cols, s.all_slices ? "every slice" : "one slice",
                 s.rows_inner ? "inside" : "outside");
  }
  return cuda::detail::launch_slice_blocks(w, a, nsplit, kernel, s.row_tile, s.cols, s.all_slices ? nsplit : 1,
                                           stream);
}

}  // namespace twinbit::bench
