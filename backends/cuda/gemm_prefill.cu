// The prefill kernels of the CUDA gemm (M > 1; gemm_kernels.h, MAPPING): the slice-block kernel
// at row tiles of 8 and 16, in exactly the forms the plan chooses (gemm_plan.cu, plan_prefill):
//   one strip per warp, one slice per block:   rows outside the k loop (F32), or I8
//   one strip per warp, every slice per block: rows inside the k loop (F32), or I8
//   two strips per warp, held to 3 blocks per SM: one slice per block (F32), every slice (I8)
#include <cstdint>

#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_slice_kernel.cuh"

namespace twinbit::cuda::detail {
namespace {

template <int MT, tb_prec P>
KernelFn prefill_kernel_for(tb_act_mode mode, int cols, bool all_slices, bool rows_inner) {
  constexpr SliceRun k1 = SliceRun::kOne, kAll = SliceRun::kAll;
  if (mode == TB_ACT_F32) {
    if (cols == 2) {
      if (all_slices || rows_inner) return nullptr;
      return gemm_kernel<P, TB_ACT_F32, MT, false, k1, 1, false, 2, 3>;
    }
    if (all_slices != rows_inner) return nullptr;
    if (all_slices) {
      return gemm_kernel<P, TB_ACT_F32, MT, false, kAll, 1, true>;
    }
    return gemm_kernel<P, TB_ACT_F32, MT, false, k1, 1>;
  }
  if (rows_inner) return nullptr;  // mode I8 has one loop order
  if (cols == 2) {
    if (!all_slices) return nullptr;
    return gemm_kernel<P, TB_ACT_I8, MT, false, kAll, 1, false, 2, 3>;
  }
  if (all_slices) {
    return gemm_kernel<P, TB_ACT_I8, MT, false, kAll, 1>;
  }
  return gemm_kernel<P, TB_ACT_I8, MT, false, k1, 1>;
}

// The precision picks the template; one without kernels gets none (kernels_have refuses it
// before any launch).
template <int MT>
KernelFn prefill_kernel_of(tb_prec prec, tb_act_mode mode, int cols, bool all_slices, bool rows_inner) {
  switch (prec) {
    case TB_PREC_Q8: return prefill_kernel_for<MT, TB_PREC_Q8>(mode, cols, all_slices, rows_inner);
    case TB_PREC_Q4: return prefill_kernel_for<MT, TB_PREC_Q4>(mode, cols, all_slices, rows_inner);
  }
  return nullptr;
}

}  // namespace

KernelFn prefill_kernel(tb_prec prec, tb_act_mode mode, int mt, int cols, bool all_slices, bool rows_inner) {
  if (cols != 1 && cols != 2) return nullptr;
  if (mt == kRowTile) return prefill_kernel_of<kRowTile>(prec, mode, cols, all_slices, rows_inner);
  if (mt == kRowTileLarge) return prefill_kernel_of<kRowTileLarge>(prec, mode, cols, all_slices, rows_inner);
  return nullptr;
}

}  // namespace twinbit::cuda::detail
