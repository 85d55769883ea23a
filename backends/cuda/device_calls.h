// The device-resident calls of the CUDA backend (twinbit/cuda_device.h, the spec): the gemm
// workspace, the checks a call passes before anything is enqueued, and the enqueue itself.
// The get_proc entries (cuda_backend.cpp) resolve the backend context and the bound handle and
// call these; nothing here knows the context.
//
// The checks come in two layers: check_gemm_device_args and check_workspace_request read only the
// arguments (no device call: tested on machines without a GPU), and the enqueue functions add the
// device's own answers (pointer kinds, the stream's device) before they launch, when the stream
// is not capturing (see check_on_device in the .cpp).
//
// THREAD SAFETY. As the spec: any thread; calls sharing a workspace ordered on one stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/gemm_kernels.h"
#include <twinbit/cuda_device.h>
#include <twinbit/status.hpp>

// The opaque workspace of the C header. Its fields are set once by create_workspace.
struct tb_cuda_workspace {
  uint64_t magic = 0;           // kWorkspaceMagic while alive: a stray pointer is refused, not used
  const void* owner = nullptr;  // the backend context that made it (calls of another are refused)
  int device = 0;               // where its buffers live
  int64_t max_m = 0;            // the rows it was sized for
  float* partial = nullptr;     // slice partials: partial_floats floats
  size_t partial_floats = 0;
  unsigned* counters = nullptr;  // fold counters: counter_count, zero between kernels
  size_t counter_count = 0;
};

namespace twinbit::cuda {

constexpr uint64_t kWorkspaceMagic = 0x7462637577736b31ull;  // "tbcuwsk1"

// What a gemm of m rows on w writes to a workspace (gemm_partial_floats, gemm_counter_count).
struct WorkspaceNeed {
  size_t partial_floats = 0;
  size_t counter_count = 0;
};
WorkspaceNeed workspace_need(const DeviceStrips& w, int64_t m);

// A workspace request: 1 <= count, every strip set non-null, 1 <= max_m <= kMaxRowsPerLaunch
// (a device call is one launch). INVALID_ARGUMENT naming the argument otherwise.
Status check_workspace_request(const DeviceStrips* const* w, size_t count, int64_t max_m);

// The arguments of one gemm_device call, without a device call: args and workspace non-null,
// the workspace alive and made by `owner`, K % 32 == 0 (UNIMPLEMENTED otherwise), the gemm
// argument checks of every backend (core/op_checks.h check_gemm_args), the dense leading
// dimensions, the alignments the kernels load with (x and xq 16 bytes, xd and y 4), 1 <= M <=
// the workspace's max_m, and the call's need within the workspace.
Status check_gemm_device_args(const void* owner, const DeviceStrips& w, const tb_cuda_workspace* ws,
                              const tb_gemm_args* a);

// Allocates and zeroes a workspace on `device` for gemms of up to max_m rows on each of w[0 ..
// count); synchronous. *out is cleared first; nothing is left allocated on failure.
Status create_workspace(const void* owner, int device, const DeviceStrips* const* w, size_t count,
                        int64_t max_m, tb_cuda_workspace** out);
// Frees a workspace made by create_workspace (null is ignored), on its device.
void destroy_workspace(tb_cuda_workspace* ws);

// Checks (above, then the pointers' memory and the stream's device), then enqueues the gemm of
// launch_gemm on `stream`, decode path `decode` and `overlap` (GemmLaunch::overlap_previous; the
// backend's switches). No synchronisation, no device allocation.
Status gemm_device(const void* owner, int device, const DeviceStrips& w, tb_cuda_workspace* ws,
                   const tb_gemm_args* a, cudaStream_t stream, DecodePath decode, bool overlap);

// Checks (core/op_checks.h check_quantize_args, the pointers' memory, the stream's device), then
// enqueues the I8 quantiser (quantize_kernels.h) on `stream`.
Status quantize_i8_device(int device, const tb_quantize_args* a, cudaStream_t stream);

}  // namespace twinbit::cuda
