#include "backends/cuda/cuda_status.h"

#include <cstdio>
#include <cstring>

namespace twinbit::cuda {

namespace {
// Keep messages free of build-machine paths: "backends/cuda/x.cpp", not the absolute path.
const char* repo_relative(const char* file) {
  for (const char* marker : {"backends/", "bench/", "tests/"}) {
    if (const char* p = std::strstr(file, marker)) return p;
  }
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}
}  // namespace

Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call is not blamed for it
  tb_code code = TB_INTERNAL;
  if (e == cudaErrorMemoryAllocation) code = TB_RESOURCE_EXHAUSTED;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
      e == cudaErrorInitializationError || e == cudaErrorDevicesUnavailable) {
    code = TB_UNAVAILABLE;
  }
  if (code == TB_UNAVAILABLE) {
    return Error(code, "%s (in %s at %s:%d)", device_error_text(e).c_str(), call, repo_relative(file), line);
  }
  return Error(code, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e),
               cudaGetErrorString(e), call, repo_relative(file), line);
}

std::string device_error_text(cudaError_t e) {
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    int driver = 0;  // 0 when no driver is installed (libcuda cannot be loaded)
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
      (void)cudaGetLastError();
      return "no NVIDIA driver (this machine has no CUDA driver installed; the CUDA backend needs one)";
    }
    if (e == cudaErrorInsufficientDriver) {
      int runtime = 0;
      (void)cudaRuntimeGetVersion(&runtime);
      char text[160];
      std::snprintf(text, sizeof text,
                    "the NVIDIA driver supports CUDA %d.%d, this build needs CUDA %d.%d (update the driver)",
                    driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
      return text;
    }
  }
  return cudaGetErrorString(e);
}

}  // namespace twinbit::cuda
