#include "backends/cuda/output_copy.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_status.h"

namespace twinbit::cuda {
namespace {

// Host copies of one piece go to one thread: large enough that a thread's start costs little.
constexpr size_t kPieceFloats = (size_t{128} << 10) / sizeof(float);

// Copies the floats [e0, e1) of the (m, n) output in `staging` into the caller's rows.
void copy_range(const float* staging, int64_t n, float* y, int64_t ldy, size_t e0, size_t e1) {
  if (ldy == n) {
    std::memcpy(y + e0, staging + e0, (e1 - e0) * sizeof(float));
    return;
  }
  const size_t un = static_cast<size_t>(n);
  for (size_t e = e0; e < e1;) {
    const size_t row = e / un, col = e % un, len = std::min(un - col, e1 - e);
    std::memcpy(y + row * static_cast<size_t>(ldy) + col, staging + e, len * sizeof(float));
    e += len;
  }
}

}  // namespace

OutputEvents::~OutputEvents() {
  for (cudaEvent_t e : events) cudaEventDestroy(e);
}

Status copy_output_chunked(cudaStream_t stream, const float* device, float* staging, int64_t m, int64_t n,
                           float* y, int64_t ldy, OutputEvents& ev) {
  const size_t total = static_cast<size_t>(m) * static_cast<size_t>(n);
  const size_t chunk = kOutputChunkBytes / sizeof(float);
  const size_t chunks = (total + chunk - 1) / chunk;
  while (ev.events.size() < chunks) {
    cudaEvent_t e = nullptr;
    TB_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ev.events.push_back(e);
  }
  for (size_t c = 0; c < chunks; ++c) {
    const size_t e0 = c * chunk, len = std::min(chunk, total - e0);
    TB_CUDA_TRY(cudaMemcpyAsync(staging + e0, device + e0, len * sizeof(float), cudaMemcpyDeviceToHost, stream));
    TB_CUDA_TRY(cudaEventRecord(ev.events[c], stream));
  }
  for (size_t c = 0; c < chunks; ++c) {
    TB_CUDA_TRY(cudaEventSynchronize(ev.events[c]));  // this chunk has landed; the next is moving
    const size_t e0 = c * chunk, e1 = std::min(total, e0 + chunk);
    tbb::parallel_for(tbb::blocked_range<size_t>(e0, e1, kPieceFloats), [&](const tbb::blocked_range<size_t>& r) {
      copy_range(staging, n, y, ldy, r.begin(), r.end());
    });
  }
  return Status();
}

}  // namespace twinbit::cuda
