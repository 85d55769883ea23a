#include "backends/cuda/cuda_status.h"

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
  return Error(code, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e),
               cudaGetErrorString(e), call, repo_relative(file), line);
}

}  // namespace twinbit::cuda
