// The host side of a large gemm output: device memory -> pinned staging -> the caller's rows;
// and the host copies between the caller's rows and pinned staging.
//
// WHY. Past its kernel a call's round trip paid two serial copies of its output: the DMA into
// pinned staging, then one host thread's memcpy into the caller's rows (lm_head M = 32, F32, on
// the H200: kernel 668 us, DMA 358 us, memcpy 1628 us of a 2658 us round trip). Here the output
// moves in chunks: each chunk's DMA is followed by an event, and the host copies a chunk out, over
// oneTBB's threads, as soon as its event has fired, while the DMA moves the next one: lm_head
// M = 32 F32 1358 us against 2699 for one copy and one memcpy (docs/results/h200-2026-12-04-large-m.md).
// That still left the kernel and the DMA in series; with COLUMN RANGES the gemm computes the
// output one range of strips at a time (one launch per range on the lane's stream), and each
// range's DMA (on a second stream) and host copy run while the next range computes, so only the
// last range's copies follow the kernel (gemm_offload.cpp enqueues; this file copies out).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit::cuda {

// How a gemm output of kChunkedOutputBytes or more reaches the caller (the switch
// "cuda.set_chunked_output", cuda_backend.h).
enum class OutputForm {
  kOneCopy = 0,       // computed whole, one DMA, one copy into the rows
  kRowChunks = 1,     // computed whole, 1 MiB DMA chunks copied into the rows as they land
  kColumnRanges = 2,  // computed one column range at a time, each copied while the next computes
};

// Outputs at least this large take the chunked copy (smaller ones: one DMA, one memcpy).
constexpr size_t kChunkedOutputBytes = size_t{1} << 20;
// Bytes per chunk: a DMA long enough to run at the link's rate, short enough that the last
// chunk's host copy (the part that cannot overlap) is small.
constexpr size_t kOutputChunkBytes = size_t{1} << 20;

// Most column ranges an output is cut into ("cuda.set_output_chunks").
constexpr int64_t kMaxColumnRanges = 64;
// Host copies of at least this many bytes run over oneTBB's threads. One thread's memcpy of an
// output out of pinned memory, against copy_rows over oneTBB, same run on the H100's host
// (docs/results/h100-2026-12-05-column-ranges-call2-bench.txt): 393 KB 9.8 against 18.3 us (the
// threads' start costs more than they save), 786 KB 23.1 against 19.0, 1.57 MB 133.8 against 22.9.
constexpr size_t kParallelCopyBytes = size_t{512} << 10;

// Column ranges of an (m, np) float output of `nstrips` strips: `forced` (clamped to 1 ..
// nstrips) when > 0, else the rule: one per MiB of output, 2 .. 3. On the H100
// (docs/results/h100-2026-12-05-column-ranges.md, call 2; lm_head ranges on the whole output's
// schedule): lm_head M = 32 982.0 us with 3 against 1088.1 with 2 and 1016.1 with 4; M = 8
// 375.9 against 403.3 and 386.4; M = 4 249.9 against 256.4 and 265.4; gate_up M = 32 (1.6 MB)
// 208.1 with 2 against 214.3 with 4 and 270.5 with 8.
int64_t column_ranges_for(int64_t m, int64_t nstrips, int64_t forced);

// Which schedule each column range runs ("cuda.set_range_plan").
enum class RangePlan {
  kAuto = 0,   // the whole output's on vocabulary-sized outputs (np > 65536), else kOwn
  kOwn = 1,    // the one planned for the range's own strips
  kWhole = 2,  // the one planned for the whole output
};
// Whether ranges of a (.., np) output run the whole output's schedule under `plan`. The plan's
// rules are tuned for whole outputs; a range of a large one re-planned alone loses them (lm_head
// M = 32 on the H100: 1098.5 us at best re-planned against 991.6 on the whole's schedule), while
// a range of a small one gains from a schedule for its smaller grid (gate_up M = 32: 209.1
// against 246.1).
bool ranges_run_whole_plan(RangePlan plan, int64_t np);

// Range r of `ranges` over nstrips strips: strips [s0, s1), ceil(nstrips / ranges) each but the
// last; count() is how many ranges that gives (<= ranges).
struct StripRanges {
  int64_t nstrips = 0, per = 1;
  StripRanges(int64_t nstrips, int64_t ranges);
  int64_t count() const { return (nstrips + per - 1) / per; }
  int64_t s0(int64_t r) const { return r * per; }
  int64_t s1(int64_t r) const { return std::min(nstrips, (r + 1) * per); }
};

// rows rows of row_bytes each from src (stride src_stride bytes) to dst (stride dst_stride),
// over oneTBB's threads when there are kParallelCopyBytes or more.
void copy_rows(void* dst, size_t dst_stride, const void* src, size_t src_stride, int64_t rows, size_t row_bytes);

// Events the copies record, one per piece in flight; owned by a lane, grown on use.
struct OutputEvents {
  std::vector<cudaEvent_t> events;
  OutputEvents() = default;
  OutputEvents(const OutputEvents&) = delete;
  OutputEvents& operator=(const OutputEvents&) = delete;
  ~OutputEvents();
  // At least `count` events (created without timing).
  Status reserve(size_t count);
};

// Enqueues the copies of the (m, n) floats at `device` (rows contiguous) into the pinned
// `staging` on `stream`, after the work already on it, and copies them into the caller's rows
// `y` (row stride ldy >= n) as each chunk lands. Returns when every row is in y.
Status copy_output_chunked(cudaStream_t stream, const float* device, float* staging, int64_t m, int64_t n,
                           float* y, int64_t ldy, OutputEvents& ev);

// The host half of column ranges: range r of `ranges` (columns [32 s0, min(n, 32 s1)) of the
// (m, n) output) lies in `staging` at float m * 32 s0, rows contiguous, once landed.events[r] has
// fired; each is copied into the caller's rows y (row stride ldy >= n) as it lands. Returns when
// every range is in y.
Status copy_column_ranges(const float* staging, int64_t m, int64_t n, const StripRanges& ranges, float* y,
                          int64_t ldy, const OutputEvents& landed);

}  // namespace twinbit::cuda
