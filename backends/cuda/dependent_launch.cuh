// Programmatic dependent launch (sm_90 and newer): a kernel launched with programmatic stream
// serialization may start while the kernel before it in the stream still runs, so its blocks can
// fetch what that kernel does not write (the bound weights) meanwhile; it must wait before it
// reads anything the earlier kernel writes (the activations) or writes anything (the outputs).
//
// WHY. At decode and small prefill a projection is a quantiser kernel then a gemm of 10-30 us;
// the gemm's first weight tiles take a round trip to memory that can overlap the quantiser's
// tail instead of following it.
//
// CONTRACT. A kernel launched by launch_after_previous calls griddep_wait() before its first read
// of another kernel's output and before its first global write. A kernel may call
// griddep_launch_dependents() to let such a kernel after it start early; for a normal launch
// both are no-ops, so the same kernel serves both launches.
#pragma once

#include <cuda_runtime.h>

namespace twinbit::cuda::detail {

__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void griddep_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Launches kernel<<<grid, block, smem, stream>>>(args...) allowed to overlap the previous kernel
// in the stream when `overlap` is set (the kernel keeps the CONTRACT above), else plainly.
template <class... Params, class... Args>
cudaError_t launch_after_previous(bool overlap, void (*kernel)(Params...), unsigned grid, unsigned block,
                                  size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = overlap ? attribute : nullptr;
  config.numAttrs = overlap ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
}

}  // namespace twinbit::cuda::detail
