#include "backends/cuda/backend_state.h"

#include "backends/cuda/cuda_status.h"

namespace twinbit::cuda {
namespace {

// Staging grows in 64 KiB steps, so calls of nearly the same size share one allocation instead of
// reallocating it (and dropping the lane's graphs) each time one is a little larger.
size_t round_up(size_t v) { return (v + 65535) / 65536 * 65536; }

}  // namespace

Status device_oom(size_t bytes, const char* what) {
  (void)cudaGetLastError();
  size_t free_b = 0, total_b = 0;
  (void)cudaMemGetInfo(&free_b, &total_b);
  return Error(TB_RESOURCE_EXHAUSTED, "cuda: out of device memory allocating %zu bytes for %s "
               "(%zu of %zu bytes free)", bytes, what, free_b, total_b);
}

namespace {

// Replaces b's memory (contents not kept) by at least `bytes` from `alloc`, released by `release`.
template <class Buffer, class Alloc>
Status regrow(Buffer& b, size_t bytes, bool* moved, cudaError_t (*release)(void*), Alloc alloc) {
  if (bytes <= b.cap) return Status();
  if (b.p) TB_CUDA_TRY(release(b.p));
  b.p = nullptr;
  b.cap = 0;
  const size_t want = round_up(bytes);
  TB_RETURN_IF_ERROR(alloc(&b.p, want));
  b.cap = want;
  *moved = true;
  return Status();
}

}  // namespace

Status grow(DeviceBuffer& b, size_t bytes, const char* what, bool* moved) {
  return regrow(b, bytes, moved, cudaFree, [what](void** p, size_t want) {
    if (cudaMalloc(p, want) == cudaSuccess) return Status();
    *p = nullptr;
    return device_oom(want, what);
  });
}

Status grow(PinnedBuffer& b, size_t bytes, const char* what, bool* moved) {
  return regrow(b, bytes, moved, cudaFreeHost, [what](void** p, size_t want) {
    if (cudaMallocHost(p, want) == cudaSuccess) return Status();
    (void)cudaGetLastError();
    *p = nullptr;
    return Error(TB_RESOURCE_EXHAUSTED, "cuda: cannot allocate %zu bytes of pinned host memory for %s", want, what);
  });
}

LaneLease::~LaneLease() {
  if (lane_) {
    std::lock_guard<std::mutex> lock(c_.lanes_mu);
    c_.free_lanes.push_back(lane_);
  }
}

Status LaneLease::acquire() {
  {
    std::lock_guard<std::mutex> lock(c_.lanes_mu);
    if (!c_.free_lanes.empty()) {
      lane_ = c_.free_lanes.back();
      c_.free_lanes.pop_back();
      return Status();
    }
  }
  auto fresh = std::make_unique<Lane>();
  TB_CUDA_TRY(cudaStreamCreateWithFlags(&fresh->stream, cudaStreamNonBlocking));
  std::lock_guard<std::mutex> lock(c_.lanes_mu);
  lane_ = fresh.get();
  c_.lanes.push_back(std::move(fresh));
  return Status();
}

}  // namespace twinbit::cuda
