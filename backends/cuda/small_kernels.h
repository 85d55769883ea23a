// The small operations an engine offloads beside the projections: gemv_f32 (single and pair),
// the gated-delta state step, and the contract's exp on the device.
//
// NUMERIC CONTRACT (NUMERICS.md; each equal in bits to core/reference.h):
//   gemv  == twinbit::ref::gemv_f32: lane l of a warp accumulates columns l, l+32, ... with
//            __fmaf_rn from +0, then a halving shuffle tree (offsets 16, 8, 4, 2, 1), s[l] + s[l+off].
//   pair  == the same per row, for two same-shape matrices, in ONE launch (warps >= rows take the
//            second matrix).
//   gdn   == twinbit::ref::gdn_delta; the register-resident twin (kd == vd == 128) performs the
//            same operations in the same order on a column held in registers.
//   expf  == twinbit::tb_expf (core/tb_expf.h, the single source shared with the host).
//
// PRECONDITIONS are checked on the host before each launch (grid * block / 32 >= rows, or
// 2 * rows for the pair; one thread per value column for gdn); violations are statuses.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <twinbit/status.hpp>

namespace twinbit::cuda {

struct GemvLaunch {
  int64_t rows = 0, cols = 0;
  const float* w0 = nullptr;   // (rows, cols) row-major
  const float* w1 = nullptr;   // (rows, cols), or null for the single form
  const float* x = nullptr;    // (cols)
  float* y0 = nullptr;         // (rows)
  float* y1 = nullptr;         // (rows), with w1
};
Status launch_gemv(const GemvLaunch& a, cudaStream_t stream);

enum class GdnVariant { kAuto = 0, kGeneric = 1 };

struct GdnLaunch {
  int64_t vh = 0, kh = 0, kd = 0, vd = 0;
  float* state = nullptr;        // (vh, kd, vd), updated in place
  const float* q = nullptr;      // (kh, kd)
  const float* k = nullptr;      // (kh, kd)
  const float* v = nullptr;      // (vh, vd)
  const float* g = nullptr;      // (vh)
  const float* beta = nullptr;   // (vh)
  float* o = nullptr;            // (vh, vd)
  GdnVariant variant = GdnVariant::kAuto;  // kAuto takes the register twin when kd == vd == 128
};
Status launch_gdn(const GdnLaunch& a, cudaStream_t stream);

// scale_to_float (backends/cuda/device_numerics.cuh) of all 65536 halves: out[h] for h in order.
Status launch_scale_to_float_all(float* out, cudaStream_t stream);

// A pure read of two device regions (a strip set's codes and scales), 16 bytes per load where
// aligned, folded into a device-side sink so the loads cannot be elided: the floor a gemm on the
// same bytes is measured against (tb_backend_iface::read_floor).
Status launch_read_bytes(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes,
                         cudaStream_t stream);

// out[i] = tb_expf(float with bits first_bits + i), i < count (count <= 2^32).
Status launch_expf_range(uint32_t first_bits, uint64_t count, float* out, cudaStream_t stream);

}  // namespace twinbit::cuda
