#include "backends/cuda/backend_state.h"

#include "backends/cuda/cuda_status.h"

namespace twinbit::cuda {
namespace {

// Staging grows in 64 KiB steps, so a call a little larger than the last reuses none of it
// rarely and reallocates (and drops the lane's graphs) rarely.
size_t round_up(size_t v) { return (v + 65535) / 65536 * 65536; }

}  // namespace

Status device_oom(size_t bytes, const char* what) {
  (void)cudaGetLastError();
  size_t free_b = 0, total_b = 0;
  (void)cudaMemGetInfo(&free_b, &total_b);
  return Error(TB_RESOURCE_EXHAUSTED, "cuda: out of device memory allocating %zu bytes for %s "
               "(%zu of %zu bytes free)", bytes, what, free_b, total_b);
}

Status grow(DeviceBuffer& b, size_t bytes, const char* what, bool* moved) {
  if (bytes <= b.cap) return Status();
  if (b.p) TB_CUDA_TRY(cudaFree(b.p));
  b.p = nullptr;
  b.cap = 0;
  const size_t want = round_up(bytes);
  if (cudaMalloc(&b.p, want) != cudaSuccess) {
    b.p = nullptr;
    return device_oom(want, what);
  }
  b.cap = want;
  *moved = true;
  return Status();
}

Status grow(PinnedBuffer& b, size_t bytes, const char* what, bool* moved) {
  if (bytes <= b.cap) return Status();
  if (b.p) TB_CUDA_TRY(cudaFreeHost(b.p));
  b.p = nullptr;
  b.cap = 0;
  const size_t want = round_up(bytes);
  if (cudaMallocHost(&b.p, want) != cudaSuccess) {
    (void)cudaGetLastError();
    b.p = nullptr;
    return Error(TB_RESOURCE_EXHAUSTED, "cuda: cannot allocate %zu bytes of pinned host memory "
                 "for %s", want, what);
  }
  b.cap = want;
  *moved = true;
  return Status();
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
