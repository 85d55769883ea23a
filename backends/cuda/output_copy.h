// The host side of a large gemm output: device memory -> pinned staging -> the caller's rows.
//
// WHY. Past its kernel a call's round trip paid two serial copies of its output: the DMA into
// pinned staging, then one host thread's memcpy into the caller's rows (lm_head M = 32, F32, on
// the H200: kernel 668 us, DMA 358 us, memcpy 1628 us of a 2658 us round trip). Here the output
// moves in chunks: each chunk's DMA is followed by an event, and the host copies a chunk out, over
// oneTBB's threads, as soon as its event has fired, while the DMA moves the next one: lm_head
// M = 32 F32 1358 us against 2699 for one copy and one memcpy (docs/results/h200-2026-12-04-large-m.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit::cuda {

// Outputs at least this large take the chunked copy (smaller ones: one DMA, one memcpy).
constexpr size_t kChunkedOutputBytes = size_t{1} << 20;
// Bytes per chunk: a DMA long enough to run at the link's rate, short enough that the last
// chunk's host copy (the part that cannot overlap) is small.
constexpr size_t kOutputChunkBytes = size_t{1} << 20;

// Events the copy records, one per chunk in flight; owned by a lane, grown on use.
struct OutputEvents {
  std::vector<cudaEvent_t> events;
  OutputEvents() = default;
  OutputEvents(const OutputEvents&) = delete;
  OutputEvents& operator=(const OutputEvents&) = delete;
  ~OutputEvents();
};

// Enqueues the copies of the (m, n) floats at `device` (rows contiguous) into the pinned
// `staging` on `stream`, after the work already on it, and copies them into the caller's rows
// `y` (row stride ldy >= n) as each chunk lands. Returns when every row is in y.
Status copy_output_chunked(cudaStream_t stream, const float* device, float* staging, int64_t m, int64_t n,
                           float* y, int64_t ldy, OutputEvents& ev);

}  // namespace twinbit::cuda
