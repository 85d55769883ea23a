// CUDA errors become twinbit status values here, once, at the backend boundary, with the
// source location of the failing call (file:line), so a report names the call that failed.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include <twinbit/status.hpp>

namespace twinbit::cuda {

// cudaErrorMemoryAllocation -> RESOURCE_EXHAUSTED; a missing device or driver -> UNAVAILABLE;
// anything else -> INTERNAL. The sticky "last error" is cleared so the next call starts clean.
Status cuda_status(cudaError_t e, const char* call, const char* file, int line);

// Why no CUDA device can be used, in the user's words, for an error of device discovery:
// "no NVIDIA driver (...)" when the machine has none (the runtime itself only says "CUDA driver
// version is insufficient for CUDA runtime version"), "the NVIDIA driver supports CUDA 12.2, this
// build needs 13.0" when it is too old, else the runtime's own text.
std::string device_error_text(cudaError_t e);

}  // namespace twinbit::cuda

// Evaluates a CUDA runtime call; on failure returns its Status from the enclosing function.
#define TB_CUDA_TRY(call)                                                                  \
  do {                                                                                     \
    const cudaError_t tb_cuda_e_ = (call);                                                 \
    if (tb_cuda_e_ != cudaSuccess) {                                                       \
      return ::twinbit::cuda::cuda_status(tb_cuda_e_, #call, __FILE__, __LINE__);          \
    }                                                                                      \
  } while (0)
