// The public gemm's host side (tb_backend_iface::gemm on host memory): the activations packed
// into pinned staging, their copy to the device, the launches and the output's way back, captured
// as one CUDA graph per (bound strips, M, mode, output form) and replayed.
//
// The output's way back (OutputForm, output_copy.h): up to 64 KiB the kernel writes it into the
// mapped pinned staging; from 1 MiB it is computed one column range at a time (a column view of
// the bound strips: the projection's fold plan, so the bits of the whole), each range's DMA on
// the lane's second stream and its copy into the caller's rows while the next range computes;
// otherwise one DMA, then one copy into the rows.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cuda/backend_state.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gemm_plan.h"
#include "backends/cuda/output_copy.h"
#include "core/numerics.h"
#include "core/strip_layout.h"

namespace twinbit::cuda {
namespace {

struct GemmPlan {
  int64_t m = 0, rows_per_launch = 0;
  size_t in_bytes = 0, out_bytes = 0, x_off_xd = 0;
  DecodePath decode = DecodePath::kAuto;
  float* direct_y = nullptr;  // device view of the pinned output staging, or null: copy back
  OutputForm form = OutputForm::kOneCopy;  // of an output not written directly
  int64_t ranges = 1;         // kColumnRanges: how many (column_ranges_for)
  bool whole_plan = false;    // kColumnRanges: each range runs the whole output's schedule
  bool overlap = true;        // launches may overlap the kernel before them (the switch)
};

// Strips [s0, s1) of w: a view with the projection's n_total, so the same fold plan and bits.
DeviceStrips device_columns(const DeviceStrips& w, int64_t s0, int64_t s1) {
  const StripLayout layout{w.prec, w.n, w.k};
  DeviceStrips v = w;
  v.codes = w.codes + s0 * layout.strip_code_bytes();
  v.scales = w.scales + s0 * layout.strip_scales();
  v.n = std::min(w.n, 32 * s1) - 32 * s0;
  v.np = 32 * (s1 - s0);
  v.n_begin = w.n_begin + 32 * s0;
  return v;
}

// The launches of the (m, w.n) product into y (rows contiguous, stride w.n), in row chunks of
// the plan's rows_per_launch; with `whole` (w a column view of it), the schedule planned for
// the whole, else w's own.
Status enqueue_launches(Lane& l, const DeviceStrips& w, tb_act_mode mode, const GemmPlan& p, float* y,
                        cudaStream_t stream, const DeviceStrips* whole = nullptr) {
  for (int64_t r0 = 0; r0 < p.m; r0 += p.rows_per_launch) {
    GemmLaunch a;
    a.mode = mode;
    a.m = std::min(p.rows_per_launch, p.m - r0);
    if (mode == TB_ACT_F32) {
      a.x = static_cast<const float*>(l.d_in.p) + r0 * w.kp;
    } else {
      a.xq = static_cast<const int8_t*>(l.d_in.p) + r0 * w.kp;
      a.xd = reinterpret_cast<const float*>(static_cast<const char*>(l.d_in.p) + p.x_off_xd) +
             r0 * (w.kp / 32);
    }
    a.y = y + r0 * w.n;
    a.decode = p.decode;
    a.overlap_previous = p.overlap;
    a.partial = static_cast<float*>(l.d_partial.p);
    a.counters = static_cast<unsigned*>(l.d_counters.p);
    if (!whole) {
      TB_RETURN_IF_ERROR(launch_gemm(w, a, stream));
      continue;
    }
    auto s = device_plan(*whole, a);
    if (!s.ok()) return s.status();
    TB_RETURN_IF_ERROR(launch_gemm_schedule(w, a, *s, stream));
  }
  return Status();
}

// Column ranges: range r's launches on the lane's stream into its own (m, n_r) block of d_out
// (at float m * 32 s0), then its DMA on the copy stream into the same place in h_out, behind
// the event of its launches; range_landed[r] fires when it is in staging. While capturing, those
// events are the graph's external event nodes (the host waits on them after each replay), and
// the copy stream joins the lane's stream at the end, as a capture needs.
Status enqueue_column_ranges(Lane& l, const DeviceStrips& w, tb_act_mode mode, const GemmPlan& p, bool capturing) {
  const StripRanges ranges(w.np / 32, p.ranges);
  const auto count = static_cast<size_t>(ranges.count());
  const unsigned landed_flags = capturing ? cudaEventRecordExternal : cudaEventRecordDefault;
  for (int64_t r = 0; r < ranges.count(); ++r) {
    const DeviceStrips v = device_columns(w, ranges.s0(r), ranges.s1(r));
    const size_t off = static_cast<size_t>(p.m * 32 * ranges.s0(r));
    float* d = static_cast<float*>(l.d_out.p) + off;
    TB_RETURN_IF_ERROR(enqueue_launches(l, v, mode, p, d, l.stream, p.whole_plan ? &w : nullptr));
    cudaEvent_t computed = l.range_computed.events[static_cast<size_t>(r)];
    TB_CUDA_TRY(cudaEventRecord(computed, l.stream));
    TB_CUDA_TRY(cudaStreamWaitEvent(l.copy_stream, computed, 0));
    TB_CUDA_TRY(cudaMemcpyAsync(static_cast<float*>(l.h_out.p) + off, d, static_cast<size_t>(p.m * v.n) * 4,
                                cudaMemcpyDeviceToHost, l.copy_stream));
    TB_CUDA_TRY(cudaEventRecordWithFlags(l.range_landed.events[static_cast<size_t>(r)], l.copy_stream, landed_flags));
  }
  cudaEvent_t joined = l.range_computed.events[count];
  TB_CUDA_TRY(cudaEventRecord(joined, l.copy_stream));
  TB_CUDA_TRY(cudaStreamWaitEvent(l.stream, joined, 0));
  return Status();
}

// Enqueues the call's device work on the lane's stream: one H2D copy, the launches, the copy
// back (unless written directly, or left to copy_output_chunked).
Status enqueue_gemm(Lane& l, const DeviceStrips& w, tb_act_mode mode, const GemmPlan& p, bool capturing) {
  TB_CUDA_TRY(cudaMemcpyAsync(l.d_in.p, l.h_in.p, p.in_bytes, cudaMemcpyHostToDevice, l.stream));
  if (!p.direct_y && p.form == OutputForm::kColumnRanges) return enqueue_column_ranges(l, w, mode, p, capturing);
  TB_RETURN_IF_ERROR(enqueue_launches(l, w, mode, p, p.direct_y ? p.direct_y : static_cast<float*>(l.d_out.p), l.stream));
  if (!p.direct_y && p.form == OutputForm::kOneCopy) {
    TB_CUDA_TRY(cudaMemcpyAsync(l.h_out.p, l.d_out.p, p.out_bytes, cudaMemcpyDeviceToHost, l.stream));
  }
  return Status();
}

Status run_gemm_graph(Lane& l, const Bound& b, tb_act_mode mode, const GemmPlan& p) {
  const GraphKey key{b.id, p.m, static_cast<int>(mode),
                     (p.direct_y ? 1 : 0) | (static_cast<int>(p.form) << 1) | (static_cast<int>(p.decode) << 3) |
                         (p.whole_plan ? 1 << 5 : 0) | (p.overlap ? 1 << 6 : 0),
                     p.ranges};
  auto it = l.graphs.find(key);
  if (it == l.graphs.end()) {
    if (l.graphs.size() >= kMaxGraphsPerLane) l.drop_graphs();
    TB_CUDA_TRY(cudaStreamBeginCapture(l.stream, cudaStreamCaptureModeThreadLocal));
    const Status enq = enqueue_gemm(l, b.strips, mode, p, true);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(l.stream, &graph);  // always end the capture
    if (!enq.ok()) {
      if (graph) cudaGraphDestroy(graph);
      return enq;
    }
    TB_CUDA_TRY(end);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    TB_CUDA_TRY(inst);
    it = l.graphs.emplace(key, exec).first;
  }
  TB_CUDA_TRY(cudaGraphLaunch(it->second, l.stream));
  return Status();
}

// Sizes, staging and workspace of the call; drops the lane's graphs when a buffer moved.
Status prepare(Ctx& c, Lane& l, const DeviceStrips& w, const tb_gemm_args& a, GemmPlan& p) {
  p.m = a.m;
  const int64_t ng = w.kp / 32;
  if (a.mode == TB_ACT_F32) {
    p.in_bytes = static_cast<size_t>(a.m * w.kp) * 4;
  } else {
    p.x_off_xd = static_cast<size_t>(a.m * w.kp);  // a multiple of 32: xd stays aligned
    p.in_bytes = p.x_off_xd + static_cast<size_t>(a.m * ng) * 4;
  }
  p.out_bytes = static_cast<size_t>(a.m * w.n) * 4;
  p.rows_per_launch = std::min(a.m, gemm_rows_per_launch(w, kMaxPartialBytes));
  bool moved = false;
  TB_RETURN_IF_ERROR(grow(l.h_in, p.in_bytes, "gemm input staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.h_out, p.out_bytes, "gemm output staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_in, p.in_bytes, "gemm input", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_out, p.out_bytes, "gemm output", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_partial, std::max<size_t>(4, gemm_partial_floats(w, p.rows_per_launch) * 4),
                          "gemm slice partials", &moved));
  const size_t counter_bytes = gemm_counter_count(w, p.rows_per_launch) * 4;
  bool counters_moved = false;
  TB_RETURN_IF_ERROR(grow(l.d_counters, counter_bytes, "gemm fold counters", &counters_moved));
  if (counters_moved) {  // kernels leave counters at zero; a fresh buffer starts there too
    TB_CUDA_TRY(cudaMemsetAsync(l.d_counters.p, 0, l.d_counters.cap, l.stream));
    moved = true;
  }
  p.decode = static_cast<DecodePath>(c.decode_path.load(std::memory_order_relaxed));
  p.overlap = c.dependent_launch.load(std::memory_order_relaxed);
  const auto direct_bytes = static_cast<size_t>(c.direct_output_kib.load(std::memory_order_relaxed)) << 10;
  if (c.direct_output.load(std::memory_order_relaxed) && p.out_bytes <= direct_bytes) {
    if (l.h_out_mapped_of != l.h_out.p) {  // pinned memory is mapped: its device address, once
      TB_CUDA_TRY(cudaHostGetDevicePointer(&l.h_out_mapped, l.h_out.p, 0));
      l.h_out_mapped_of = l.h_out.p;
    }
    p.direct_y = static_cast<float*>(l.h_out_mapped);
  }
  if (!p.direct_y && p.out_bytes >= kChunkedOutputBytes) {
    p.form = static_cast<OutputForm>(c.output_form.load(std::memory_order_relaxed));
  }
  if (p.form == OutputForm::kColumnRanges) {
    p.ranges = column_ranges_for(p.m, w.np / 32, c.output_ranges.load(std::memory_order_relaxed));
    p.whole_plan = ranges_run_whole_plan(static_cast<RangePlan>(c.range_plan.load(std::memory_order_relaxed)), w.np);
    TB_RETURN_IF_ERROR(l.range_computed.reserve(static_cast<size_t>(p.ranges) + 1));  // + the join
    TB_RETURN_IF_ERROR(l.range_landed.reserve(static_cast<size_t>(p.ranges)));
    if (!l.copy_stream) TB_CUDA_TRY(cudaStreamCreateWithFlags(&l.copy_stream, cudaStreamNonBlocking));
  }
  if (moved) l.drop_graphs();
  return Status();
}

// Packs the activations into pinned staging, rows contiguous (K == Kp: K % 32 == 0 here).
void pack_inputs(const Lane& l, const DeviceStrips& w, const tb_gemm_args& a, const GemmPlan& p) {
  if (a.mode == TB_ACT_F32) {
    copy_rows(l.h_in.p, static_cast<size_t>(w.kp) * 4, a.x, static_cast<size_t>(a.ldx) * 4, a.m,
              static_cast<size_t>(w.kp) * 4);
    return;
  }
  const int64_t ng = w.kp / 32;
  char* h = static_cast<char*>(l.h_in.p);
  copy_rows(h, static_cast<size_t>(w.kp), a.xq, static_cast<size_t>(a.ldxq), a.m, static_cast<size_t>(w.kp));
  copy_rows(h + p.x_off_xd, static_cast<size_t>(ng) * 4, a.xd, static_cast<size_t>(a.ldxd) * 4, a.m,
            static_cast<size_t>(ng) * 4);
}

}  // namespace

Status gemm_offload(Ctx& c, const Bound& b, const tb_gemm_args& a) {
  if (b.kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_FAILED_PRECONDITION, "cuda: gemm needs strip weights, the handle holds a matrix");
  }
  const DeviceStrips& w = b.strips;
  if (const char* why = gemm_unsupported_reason(w.n, w.k)) {
    return Error(TB_UNIMPLEMENTED, "cuda: %s (K = %lld)", why, static_cast<long long>(w.k));
  }
  TB_CUDA_TRY(cudaSetDevice(c.device));
  LaneLease lease(c);
  TB_RETURN_IF_ERROR(lease.acquire());
  Lane& l = *lease;
  GemmPlan p;
  TB_RETURN_IF_ERROR(prepare(c, l, w, a, p));
  pack_inputs(l, w, a, p);
  if (c.use_graphs.load(std::memory_order_relaxed)) {
    TB_RETURN_IF_ERROR(run_gemm_graph(l, b, a.mode, p));
  } else {
    TB_RETURN_IF_ERROR(enqueue_gemm(l, w, a.mode, p, false));
  }
  const auto* staging = static_cast<const float*>(l.h_out.p);
  if (!p.direct_y && p.form == OutputForm::kColumnRanges) {  // each range copied out as it lands
    const Status copied = copy_column_ranges(staging, a.m, w.n, StripRanges(w.np / 32, p.ranges), a.y, a.ldy,
                                             l.range_landed);
    TB_CUDA_TRY(cudaStreamSynchronize(l.stream));  // nothing left to wait for; surfaces any error
    return copied;
  }
  if (!p.direct_y && p.form == OutputForm::kRowChunks) {  // the output leaves in chunks
    TB_RETURN_IF_ERROR(copy_output_chunked(l.stream, static_cast<const float*>(l.d_out.p), static_cast<float*>(l.h_out.p),
                                           a.m, w.n, a.y, a.ldy, l.out_events));
    TB_CUDA_TRY(cudaStreamSynchronize(l.stream));
    return Status();
  }
  TB_CUDA_TRY(cudaStreamSynchronize(l.stream));  // the call's one synchronisation
  copy_rows(a.y, static_cast<size_t>(a.ldy) * 4, staging, static_cast<size_t>(w.n) * 4, a.m,
            static_cast<size_t>(w.n) * 4);
  return Status();
}

}  // namespace twinbit::cuda
