// The product's tensor-core strip-block kernels (gemm_mma_strips.cuh) and their launcher.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gemm_mma_strips.cuh"

namespace twinbit::cuda::detail {
namespace {

// The product's mma ordering in these kernels: free (the compiler interleaves the mmas with the
// loads and the float step).
constexpr bool kStripsOrdered = false;

template <tb_prec P, int S>
KernelFn mma_strips_kernel_of(int mt) {
  switch (mt) {
    case 8: return gemm_mma_strips_kernel<P, 8, kStripsOrdered, kMmaStripDepth<8>, S>;
    case 16: return gemm_mma_strips_kernel<P, 16, kStripsOrdered, kMmaStripDepth<16>, S>;
    case 32: return gemm_mma_strips_kernel<P, 32, kStripsOrdered, kMmaStripDepth<32>, S>;
  }
  return nullptr;
}

template <tb_prec P, bool kL2>
KernelFn mma_strips_acts_kernel() {  // 16-row tiles, register ring, held to 3 blocks per SM
  constexpr int mt_acts = kMmaStripActsRows, blocks = static_cast<int>(kMmaStripActsBlocksPerSm);
  return gemm_mma_strips_kernel<P, mt_acts, kStripsOrdered, kMmaStripDepth<mt_acts>, 0, kMmaStripRing, blocks,
                                kMmaStripsLean, true, kMmaStripWords, kMmaStripFold4, kL2>;
}

template <tb_prec P>
KernelFn mma_strips_kernel_of(int mt, int stage, bool acts, bool l2) {
  if (acts) {
    if (mt != kMmaStripActsRows || stage != 0) return nullptr;
    return l2 ? mma_strips_acts_kernel<P, true>() : mma_strips_acts_kernel<P, false>();
  }
  if (l2) return nullptr;
  switch (stage) {
    case 0: return mma_strips_kernel_of<P, 0>(mt);
    case kMmaStripStage: return mma_strips_kernel_of<P, kMmaStripStage>(mt);
  }
  return nullptr;
}

}  // namespace

KernelFn mma_strips_kernel(tb_prec prec, int mt, int stage, bool acts, bool l2) {
  switch (prec) {
    case TB_PREC_Q8: return mma_strips_kernel_of<TB_PREC_Q8>(mt, stage, acts, l2);
    case TB_PREC_Q4: return mma_strips_kernel_of<TB_PREC_Q4>(mt, stage, acts, l2);
  }
  return nullptr;
}

Status launch_mma_strips(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, KernelFn kernel, int mt,
                         cudaStream_t stream, int stage, bool acts, int ways, int l2_ahead) {
  const int64_t most_ways = std::min<int64_t>(nsplit, kMmaStripWarps);
  if (ways == 0) ways = static_cast<int>(most_ways);
  if (!kernel || (mt != 8 && mt != 16 && mt != 32) || nsplit < 1 || a.m < 2 || stage < 0 || stage > 16 ||
      ways < 1 || ways > most_ways || (ways < most_ways && kMmaStripWarps % ways != 0) || l2_ahead < 0) {
    return Error(TB_INTERNAL, "gemm tensor-core strip launch: %s kernel, row tile %d, %lld slices, "
                 "%lld rows, %d staged tiles, %d warps per strip, L2 %d groups ahead (expected a kernel, row "
                 "tile 8, 16 or 32, nsplit >= 1, M >= 2, 0 .. 16 staged tiles, min(nsplit, 8) warps per strip "
                 "or fewer that divide 8, L2 ahead >= 0)", kernel ? "a" : "no", mt, static_cast<long long>(nsplit),
                 static_cast<long long>(a.m), stage, ways, l2_ahead);
  }
  // cp.async moves 16-byte pieces: staged tiles need 16-byte aligned codes and scales.
  if (stage > 0 && (reinterpret_cast<uintptr_t>(w.codes) % 16 != 0 || reinterpret_cast<uintptr_t>(w.scales) % 16 != 0)) {
    return Error(TB_INTERNAL, "gemm tensor-core strip launch: staged tiles need codes and scales on 16-byte "
                 "boundaries (codes at %p, scales at %p)", static_cast<const void*>(w.codes),
                 static_cast<const void*>(w.scales));
  }
  const int64_t nstrips = w.np / 32, ngroups = w.kp / 32;
  const int64_t strips = kMmaStripWarps / ways;
  const int64_t row_tiles = ceil_div(a.m, mt);
  const int64_t strip_blocks = ceil_div(nstrips, strips);
  const int64_t blocks = strip_blocks * row_tiles;
  if (blocks < 1 || blocks > INT_MAX || nsplit > ngroups) {
    return Error(TB_INTERNAL, "gemm tensor-core strip launch geometry: %lld blocks for %lld strips x "
                 "%lld row tiles, %lld slices of %lld groups (grid limit %d, a slice needs a group)",
                 static_cast<long long>(blocks), static_cast<long long>(nstrips),
                 static_cast<long long>(row_tiles), static_cast<long long>(nsplit),
                 static_cast<long long>(ngroups), INT_MAX);
  }
  const size_t smem = mma_strips_smem_bytes(mt, static_cast<int>(strips), stage, w.prec, acts ? ngroups : 0);
  int device = 0, max_smem = 0;
  if (acts) {  // the activations' staging grows with K: past the device's shared memory, say so
    TB_CUDA_TRY(cudaGetDevice(&device));
    TB_CUDA_TRY(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  }
  if (acts && smem > static_cast<size_t>(max_smem)) {
    return Error(TB_INVALID_ARGUMENT, "gemm tensor-core strip launch: %zu bytes of shared memory (row tile %d, "
                 "%d staged tiles%s) past the device's %d", smem, mt, stage,
                 acts ? ", the activations of every group" : "", max_smem);
  }
  TB_RETURN_IF_ERROR(allow_smem(kernel, smem));
  Params p = gemm_params(w, a, nsplit, strip_blocks, row_tiles, nsplit);
  p.strip_ways = ways;
  // The bulk prefetch wants 16-byte addresses: a hint, so none where they are not.
  const bool aligned16 = reinterpret_cast<uintptr_t>(w.codes) % 16 == 0 && reinterpret_cast<uintptr_t>(w.scales) % 16 == 0;
  p.l2_ahead = aligned16 ? l2_ahead : 0;
  auto overlap = device_has_dependent_launch();
  if (!overlap.ok()) return overlap.status();
  TB_CUDA_TRY(launch_after_previous(a.overlap_previous && *overlap, kernel, static_cast<unsigned>(blocks),
                                    kMmaStripThreads, smem, stream, p));
  return Status();
}

}  // namespace twinbit::cuda::detail
