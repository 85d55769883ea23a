// The product's row-tile tensor-core kernels (gemm_mma_rows.cuh), their pickers and block sizes.
#include "backends/cuda/gemm_mma_rows.cuh"

namespace twinbit::cuda::detail {
namespace {

template <tb_prec P, int MT>
KernelFn mma_kernel_for(bool all_slices) {
  return all_slices ? mma_rows_kernel<P, MT, true, kRowWarps<MT>, kMmaRowsBiased, kMmaRowsMinBlocks<MT>>()
                    : mma_rows_kernel<P, MT, false, kRowWarps<MT>, kMmaRowsBiased, 0>();
}

template <tb_prec P>
KernelFn mma_kernel_of(int mt, bool all_slices) {
  switch (mt) {
    case 8: return mma_kernel_for<P, 8>(all_slices);
    case 16: return mma_kernel_for<P, 16>(all_slices);
    case 32: return mma_kernel_for<P, 32>(all_slices);
    case 64: return mma_kernel_for<P, 64>(all_slices);
  }
  return nullptr;
}

}  // namespace

int mma_threads(int mt) {
  switch (mt) {
    case 8: return kThreads * kRowWarps<8>;
    case 16: return kThreads * kRowWarps<16>;
    case 32: return kThreads * kRowWarps<32>;
    case 64: return kThreads * kRowWarps<64>;
  }
  return kThreads;
}

size_t mma_rows_smem(int mt, bool all_slices) {
  if (!all_slices) return 0;
  switch (mt) {
    case 8: return kMmaRowsSmemFold<8> ? kMmaRowsFoldBytes<8, kRowWarps<8>> : 0;
    case 16: return kMmaRowsSmemFold<16> ? kMmaRowsFoldBytes<16, kRowWarps<16>> : 0;
    case 32: return kMmaRowsSmemFold<32> ? kMmaRowsFoldBytes<32, kRowWarps<32>> : 0;
    case 64: return kMmaRowsSmemFold<64> ? kMmaRowsFoldBytes<64, kRowWarps<64>> : 0;
  }
  return 0;
}

KernelFn mma_kernel(tb_prec prec, int mt, bool all_slices) {
  switch (prec) {
    case TB_PREC_Q8: return mma_kernel_of<TB_PREC_Q8>(mt, all_slices);
    case TB_PREC_Q4: return mma_kernel_of<TB_PREC_Q4>(mt, all_slices);
  }
  return nullptr;  // no kernels for this precision (kernels_have refuses it at bind)
}

}  // namespace twinbit::cuda::detail
