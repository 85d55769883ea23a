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

Status OutputEvents::reserve(size_t count) {
  while (events.size() < count) {
    cudaEvent_t e = nullptr;
    TB_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events.push_back(e);
  }
  return Status();
}

int64_t column_ranges_for(int64_t m, int64_t nstrips, int64_t forced) {
  const int64_t bytes = m * nstrips * 32 * 4, per = int64_t{1} << 20;
  const int64_t rule = std::clamp<int64_t>((bytes + per - 1) / per, 2, 3);
  return std::clamp<int64_t>(forced > 0 ? forced : rule, 1, std::max<int64_t>(1, nstrips));
}

bool ranges_run_whole_plan(RangePlan plan, int64_t np) {
  return plan == RangePlan::kWhole || (plan == RangePlan::kAuto && np > 65536);
}

StripRanges::StripRanges(int64_t strips, int64_t ranges)
    : nstrips(strips), per(std::max<int64_t>(1, (strips + std::max<int64_t>(1, ranges) - 1) / std::max<int64_t>(1, ranges))) {}

void copy_rows(void* dst, size_t dst_stride, const void* src, size_t src_stride, int64_t rows, size_t row_bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t urows = static_cast<size_t>(rows);
  const size_t total = urows * row_bytes;
  if (total < kParallelCopyBytes || urows == 0 || row_bytes == 0) {
    for (size_t r = 0; r < urows; ++r) std::memcpy(d + r * dst_stride, s + r * src_stride, row_bytes);
    return;
  }
  // Pieces of ~kPieceFloats floats' bytes: whole rows when rows are short, row slices otherwise.
  const size_t piece = kPieceFloats * sizeof(float);
  const size_t per_row = (row_bytes + piece - 1) / piece;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, urows * per_row, std::max<size_t>(1, piece / row_bytes)),
                    [&](const tbb::blocked_range<size_t>& r) {
                      for (size_t i = r.begin(); i < r.end(); ++i) {
                        const size_t row = i / per_row, b0 = (i % per_row) * piece;
                        const size_t len = std::min(piece, row_bytes - b0);
                        std::memcpy(d + row * dst_stride + b0, s + row * src_stride + b0, len);
                      }
                    });
}

Status copy_output_chunked(cudaStream_t stream, const float* device, float* staging, int64_t m, int64_t n,
                           float* y, int64_t ldy, OutputEvents& ev) {
  const size_t total = static_cast<size_t>(m) * static_cast<size_t>(n);
  const size_t chunk = kOutputChunkBytes / sizeof(float);
  const size_t chunks = (total + chunk - 1) / chunk;
  TB_RETURN_IF_ERROR(ev.reserve(chunks));
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

Status copy_column_ranges(const float* staging, int64_t m, int64_t n, const StripRanges& ranges, float* y,
                          int64_t ldy, const OutputEvents& landed) {
  for (int64_t r = 0; r < ranges.count(); ++r) {
    TB_CUDA_TRY(cudaEventSynchronize(landed.events[static_cast<size_t>(r)]));  // the next is moving
    const int64_t c0 = 32 * ranges.s0(r), c1 = std::min(n, 32 * ranges.s1(r));
    copy_rows(y + c0, static_cast<size_t>(ldy) * sizeof(float), staging + m * c0,
              static_cast<size_t>(c1 - c0) * sizeof(float), m, static_cast<size_t>(c1 - c0) * sizeof(float));
  }
  return Status();
}

}  // namespace twinbit::cuda
