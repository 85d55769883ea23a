// The I8 activation quantiser on the device (tb_backend_iface::quantize_i8).
//
// NUMERIC CONTRACT: equal in bits to twinbit::ref::quantize_activations (docs/NUMERICS.md, "gemm,
// activation mode I8"). One warp per (row, group of 32), lane = k within the group:
//   amax: each lane's |x| (a NaN becomes +0, which is what "a NaN never compares greater" leaves
//         of it), then a max over the warp by shuffles - exact in any order;
//   d    = __fdiv_rn(amax, 127.0f): the one IEEE division, subnormals kept (no ftz);
//   code = d == 0 ? 0 : clamp(rintf(__fdiv_rn(x, d)), -127, 127), a NaN quotient giving 0.
// Padding k (k >= K) reads +0, as in the reference.
//
// PRECONDITIONS (checked by the caller, core/op_checks.h check_quantize_args): m, k in range,
// device pointers valid for (m, ldx) floats, (m, ldxq) codes, (m, ldxd) scales.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <twinbit/status.hpp>

namespace twinbit::cuda {

struct QuantizeLaunch {
  int64_t m = 0, k = 0;
  const float* x = nullptr;  // (m, ldx) floats, k < K read
  int64_t ldx = 0;
  int8_t* xq = nullptr;      // (m, ldxq) codes, Kp written per row
  int64_t ldxq = 0;
  float* xd = nullptr;       // (m, ldxd) scales, Kp/32 written per row
  int64_t ldxd = 0;
  // A gemm launched to overlap this kernel (dependent_launch.cuh) may start once every block of
  // it has started (true: its weight fetches overlap the whole quantiser, its blocks take SM
  // room the quantiser's later blocks would have used) or once every block has finished (false:
  // it overlaps the grid's end and flush only). Either way it reads the codes after this grid.
  bool dependents_at_start = true;
};
Status launch_quantize_i8(const QuantizeLaunch& a, cudaStream_t stream);

}  // namespace twinbit::cuda
