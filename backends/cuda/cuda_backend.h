// The CUDA backend's own C++ face, beside the C entry point tb_backend_create_cuda (registered by
// backends/CMakeLists.txt). Benchmarks and tests use it to reach what the C ABI does not carry:
// the device copy of bound strips (to time kernels alone) and the bind report. Every function checks that the backend passed is a CUDA backend.
//
// OWNERSHIP. Nothing here transfers ownership; device pointers stay owned by the bound handle.
// THREAD SAFETY. As the backend's operations (twinbit/backend.h): any thread, any time.
#pragma once

#include <cstdint>

#include "backends/cuda/gemm_kernels.h"
#include "backends/cuda/small_kernels.h"
#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit::cuda {

// What weights_bind did: bytes uploaded (codes + scales, or the float matrix) and wall seconds,
// pinned staging included.
struct BindReport {
  uint64_t bytes = 0;
  double seconds = 0;
};

bool is_cuda_backend(const tb_backend& b);
Status bind_report(const tb_backend& b, void* handle, BindReport* out);
// The device-resident strip set of a bound strip handle.
Status device_strips(const tb_backend& b, void* handle, DeviceStrips* out);
// SWITCHES for measured variants are reached through the C ABI, not this header:
// Backend::set_switch(name, value) (tb_backend_iface::get_proc, tb_switch_fn). Names and values:
//   "cuda.set_use_graphs"     1: gemm offload through one captured CUDA graph per (bound strips,
//                             M, mode) (default); 0: separate async calls.
//   "cuda.set_decode_path"    gemm decode (M = 1, nsplit > 1): which kernel runs it, a DecodePath
//                             (0 kAuto, the default; 1 kSliceBlocks; 2 kStripBlocks).
//   "cuda.set_direct_output"  1: gemm outputs up to "cuda.set_direct_output_kib" written by the
//                             kernel into the pinned host staging (default); 0: never.
//   "cuda.set_direct_output_kib" that limit in KiB (0 .. 2^20; default 1024).
//   "cuda.set_dependent_launch" 1: on sm_90+ a gemm launch may start while the kernel before it
//                             in the stream runs, where the plan says it pays (gemm_plan.h), its
//                             first weight loads overlapping that kernel's tail (default); 0:
//                             every launch after the kernel before it. Same bits either way.
//   "cuda.set_chunked_output" how gemm outputs of 1 MiB and more reach the caller, an OutputForm
//                             (output_copy.h): 2 kColumnRanges, the default: computed one range
//                             of columns at a time, each range copied back and into the caller's
//                             rows while the next computes; 1 kRowChunks: computed whole, then 1
//                             MiB chunks each copied into the caller's rows as it lands; 0
//                             kOneCopy: one device-to-host copy, then one copy into the rows.
//   "cuda.set_output_chunks"  with column ranges: how many (1 .. kMaxColumnRanges, fewer where
//                             the output has fewer strips); 0: the rule's (column_ranges_for).
//   "cuda.set_range_plan"     with column ranges: which schedule each range runs, a RangePlan
//                             (output_copy.h): 0 kAuto, the default; 1 kOwn, planned for the
//                             range's strips; 2 kWhole, planned for the whole output.
//   "cuda.set_gdn_variant"    gdn_delta: a GdnVariant (0 kAuto: register twin for kd == vd ==
//                             128, the default; 1 kGeneric always).
// A value out of range is INVALID_ARGUMENT naming the switch. Not thread-safe against
// operations of the same backend.
//
// DEVICE-RESIDENT CALLS are get_proc entries too, with C types (twinbit/cuda_device.h, the
// spec; device_calls.h implements them): "cuda.workspace_create", "cuda.workspace_destroy",
// "cuda.gemm_device" (the gemm on device pointers, enqueued on the caller's stream, capturable
// in a CUDA graph) and "cuda.quantize_i8_device". The gemm follows "cuda.set_decode_path" and
// "cuda.set_dependent_launch".

// The device's weight-scale conversion (scale_to_float) of all 65536 halves into out[65536].
// Standalone, for the exhaustive test against twinbit::fp16_to_float.
Status scales_on_device(float* out);

// tb_expf evaluated on the device for the count float bit patterns from first_bits, into host
// memory out[count]. Standalone (own stream and buffers); for the exhaustive test.
Status expf_on_device(uint32_t first_bits, uint64_t count, float* out);

}  // namespace twinbit::cuda
