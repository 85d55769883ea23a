#include "backends/cuda/quantize_kernels.h"

#include <algorithm>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/dependent_launch.cuh"
#include "core/numerics.h"

namespace twinbit::cuda {
namespace {

constexpr int kThreads = 256;  // 8 warps per block, a group each

template <bool kDependentsAtStart>
__global__ void quantize_i8_kernel(QuantizeLaunch a, int64_t ngroups) {
  // A gemm launched to overlap this kernel (dependent_launch.cuh) may start now: it fetches
  // weights until this grid's codes are complete. (Otherwise it starts as the blocks exit.)
  if constexpr (kDependentsAtStart) detail::griddep_launch_dependents();
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  // Grid-stride over (row, group); the index is uniform in a warp, so the shuffles see all lanes.
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       w < a.m * ngroups; w += warps) {
    const int64_t row = w / ngroups, g = w % ngroups;
    const int64_t col = g * 32 + lane;
    const float v = col < a.k ? a.x[row * a.ldx + col] : +0.0f;
    const float av = fabsf(v);
    float amax = av > +0.0f ? av : +0.0f;  // a NaN never compares greater: it counts as +0
    for (int off = 16; off > 0; off /= 2) {
      const float o = __shfl_xor_sync(0xffffffffu, amax, off);
      amax = o > amax ? o : amax;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    int code = 0;
    if (d != 0.0f) {
      const float q = __fdiv_rn(v, d);
      if (q == q) code = static_cast<int>(fminf(fmaxf(rintf(q), -127.0f), 127.0f));
    }
    a.xq[row * a.ldxq + col] = static_cast<int8_t>(code);
    if (lane == 0) a.xd[row * a.ldxd + g] = d;
  }
}

}  // namespace

Status launch_quantize_i8(const QuantizeLaunch& a, cudaStream_t stream) {
  const int64_t ngroups = ngroups_of(a.k);
  const int64_t warps = a.m * ngroups;
  const int64_t blocks = std::min<int64_t>(ceil_div(warps, kThreads / 32), int64_t{1} << 20);
  const auto kernel = a.dependents_at_start ? quantize_i8_kernel<true> : quantize_i8_kernel<false>;
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a, ngroups);
  TB_CUDA_TRY(cudaGetLastError());
  return Status();
}

}  // namespace twinbit::cuda
