// Device forms of core/numerics.h pieces whose portable form is slow on the GPU. Each gives the
// same bits as its core/ twin for every input (checked on the device over all inputs:
// tests/test_cuda_ops.cpp).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace twinbit::cuda {

// twinbit::fp16_to_float for weight scales: the hardware conversion (exact for every half that is
// not a NaN, subnormals included, as PTX cvt.f32.f16 without .ftz), and for NaNs the portable
// form's bits (payload shifted up, quiet bit untouched) by one select. The portable form's
// subnormal loop costs a divergent branch per group in the hot loop. The NaN's bits: the half
// in the top 16 bits shifted down 3 as a signed word puts the sign at bit 31 (its copies land in
// the exponent, all ones anyway) and the payload at bits 13-22; the test is on the float (a NaN
// half converts to a NaN), one instruction fewer than masking the half.
__device__ __forceinline__ float scale_to_float(uint16_t h) {
  const float f = __half2float(__ushort_as_half(h));
  const uint32_t nan_bits = static_cast<uint32_t>(static_cast<int32_t>(static_cast<uint32_t>(h) << 16) >> 3) | 0x7f800000u;
  return f != f ? __uint_as_float(nan_bits) : f;
}

}  // namespace twinbit::cuda
