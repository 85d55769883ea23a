#include "bench/cuda/offload_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>

#include "backends/cuda/backend_state.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gemm_kernels.h"
#include "backends/cuda/output_copy.h"
#include "bench/cuda/timing.h"

namespace twinbit::bench {
namespace {

// One form of the round trip: the backend switches it sets (cuda_backend.h).
struct Form {
  const char* name;
  bool graphs, direct;
  cuda::OutputForm output;
  int ranges;  // with column ranges: forced count, 0 the rule's
  cuda::DecodePath path;
  cuda::RangePlan plan = cuda::RangePlan::kAuto;  // with column ranges: which schedule each runs
  int direct_kib = cuda::kDefaultDirectOutputKib;  // outputs up to this written into mapped staging
  bool dependent = true;  // launches may overlap the kernel before them (cuda.set_dependent_launch)
};

Status apply(const Backend& cuda, const Form& f) {
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_use_graphs", f.graphs));
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_direct_output", f.direct));
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_direct_output_kib", f.direct_kib));
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_chunked_output", static_cast<int64_t>(f.output)));
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_output_chunks", f.ranges));
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_range_plan", static_cast<int64_t>(f.plan)));
  TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_dependent_launch", f.dependent));
  return cuda.set_switch("cuda.set_decode_path", static_cast<int64_t>(f.path));
}

// Memory from cudaMallocHost (Pinned) or cudaMalloc (Device), freed with the guard.
template <cudaError_t (*Release)(void*)>
struct CudaMemory {
  void* p = nullptr;
  CudaMemory() = default;
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  ~CudaMemory() { if (p) Release(p); }
};
using Pinned = CudaMemory<cudaFreeHost>;
using Device = CudaMemory<cudaFree>;

// Median µs of one async copy of `bytes` and its synchronisation.
Result<double> time_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s, int reps) {
  return time_host(3, reps, [&]() -> Status {
    TB_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, s));
    TB_CUDA_TRY(cudaStreamSynchronize(s));
    return Status();
  });
}

// Event pair timings of one stage, reused every round.
struct Stages {
  cudaEvent_t e[4] = {};
  Stages() = default;
  Stages(const Stages&) = delete;
  Stages& operator=(const Stages&) = delete;
  ~Stages() {
    for (cudaEvent_t v : e) if (v) cudaEventDestroy(v);
  }
};

// The round trip's steps by hand, on the bench's stream, in the product's order: the input's
// copy from pinned memory, the launches (launch_gemm), the output's copy to pinned memory, one
// synchronisation, the copy into the caller's rows. Appends each device step's time between
// events (staged_h2d_us, staged_kernel_us, staged_d2h_us) and the host's wall time of the whole
// (staged_roundtrip_us): where a round trip's time goes past its parts.
Status staged_round_trip(const Backend& cuda, const BoundWeights& bound, int64_t m, int64_t k, int64_t n,
                         const std::vector<float>& x, std::vector<float>& y, int reps, cudaStream_t s,
                         std::string* note) {
  cuda::DeviceStrips w;
  TB_RETURN_IF_ERROR(cuda::device_strips(cuda.raw(), bound.handle(), &w));
  const size_t in_bytes = x.size() * 4, out_bytes = y.size() * 4;
  Pinned h_in, h_out;
  Device d_in, d_out, partial, counters;
  TB_CUDA_TRY(cudaMallocHost(&h_in.p, in_bytes));
  TB_CUDA_TRY(cudaMallocHost(&h_out.p, out_bytes));
  TB_CUDA_TRY(cudaMalloc(&d_in.p, in_bytes));
  TB_CUDA_TRY(cudaMalloc(&d_out.p, out_bytes));
  const size_t counter_bytes = cuda::gemm_counter_count(w, m) * 4;
  TB_CUDA_TRY(cudaMalloc(&partial.p, std::max<size_t>(4, cuda::gemm_partial_floats(w, m) * 4)));
  TB_CUDA_TRY(cudaMalloc(&counters.p, std::max<size_t>(4, counter_bytes)));
  TB_CUDA_TRY(cudaMemset(counters.p, 0, std::max<size_t>(4, counter_bytes)));
  std::memcpy(h_in.p, x.data(), in_bytes);
  cuda::GemmLaunch a;
  a.mode = TB_ACT_F32;
  a.m = m;
  a.x = static_cast<const float*>(d_in.p);
  a.y = static_cast<float*>(d_out.p);
  a.partial = static_cast<float*>(partial.p);
  a.counters = static_cast<unsigned*>(counters.p);
  Stages ev;
  for (cudaEvent_t& e : ev.e) TB_CUDA_TRY(cudaEventCreate(&e));
  std::vector<double> h2d, kernel, d2h, total;
  for (int rep = -3; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    TB_CUDA_TRY(cudaEventRecord(ev.e[0], s));
    TB_CUDA_TRY(cudaMemcpyAsync(d_in.p, h_in.p, in_bytes, cudaMemcpyHostToDevice, s));
    TB_CUDA_TRY(cudaEventRecord(ev.e[1], s));
    TB_RETURN_IF_ERROR(cuda::launch_gemm(w, a, s));
    TB_CUDA_TRY(cudaEventRecord(ev.e[2], s));
    TB_CUDA_TRY(cudaMemcpyAsync(h_out.p, d_out.p, out_bytes, cudaMemcpyDeviceToHost, s));
    TB_CUDA_TRY(cudaEventRecord(ev.e[3], s));
    TB_CUDA_TRY(cudaStreamSynchronize(s));
    cuda::copy_rows(y.data(), out_bytes, h_out.p, out_bytes, 1, out_bytes);
    const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (rep < 0) continue;
    float ms[3] = {};
    for (int i = 0; i < 3; ++i) TB_CUDA_TRY(cudaEventElapsedTime(&ms[i], ev.e[i], ev.e[i + 1]));
    h2d.push_back(ms[0] * 1e3);
    kernel.push_back(ms[1] * 1e3);
    d2h.push_back(ms[2] * 1e3);
    total.push_back(t);
  }
  *note += Format("staged_h2d_us=%.2f staged_kernel_us=%.2f staged_d2h_us=%.2f staged_roundtrip_us=%.2f ",
                  median(h2d), median(kernel), median(d2h), median(total));
  return Status();
}

// Median µs of an empty graph's launch and the stream's synchronisation: the fixed cost of a
// call's one graph launch and one wait.
Result<double> empty_graph_us(cudaStream_t s, int reps) {
  cudaGraph_t graph = nullptr;
  TB_CUDA_TRY(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t node = nullptr;
  TB_CUDA_TRY(cudaGraphAddEmptyNode(&node, graph, nullptr, 0));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  TB_CUDA_TRY(inst);
  auto us = time_host(5, reps, [&]() -> Status {
    TB_CUDA_TRY(cudaGraphLaunch(exec, s));
    TB_CUDA_TRY(cudaStreamSynchronize(s));
    return Status();
  });
  cudaGraphExecDestroy(exec);
  return us;
}

}  // namespace

Result<PinnedRates> measure_pinned_rates(cudaStream_t s, int reps) {
  constexpr size_t kBytes = size_t{64} << 20;
  Pinned host;
  Device dev;
  TB_CUDA_TRY(cudaMallocHost(&host.p, kBytes));
  TB_CUDA_TRY(cudaMalloc(&dev.p, kBytes));
  std::memset(host.p, 1, kBytes);
  TB_CUDA_TRY(cudaMemset(dev.p, 2, kBytes));
  auto h2d = time_copy(dev.p, host.p, kBytes, cudaMemcpyHostToDevice, s, reps);
  if (!h2d.ok()) return h2d.status();
  auto d2h = time_copy(host.p, dev.p, kBytes, cudaMemcpyDeviceToHost, s, reps);
  if (!d2h.ok()) return d2h.status();
  return PinnedRates{kBytes / *h2d, kBytes / *d2h};
}

Status offload_round_trip(const Backend& cuda, const BoundWeights& bound, int64_t m, int64_t k, int64_t n,
                          const std::vector<float>& x, double kernel_us, const PinnedRates& rates, bool quick,
                          cudaStream_t s, std::string* note) {
  std::vector<float> y(static_cast<size_t>(m * n));
  tb_gemm_args g{};
  g.mode = TB_ACT_F32;
  g.m = m;
  g.x = x.data();
  g.ldx = k;
  g.y = y.data();
  g.ldy = n;
  using cuda::DecodePath;
  using cuda::OutputForm;
  using cuda::RangePlan;
  constexpr auto kAuto = DecodePath::kAuto;
  constexpr auto kRanges = OutputForm::kColumnRanges;
  const Form forms[] = {
      {"graph", true, true, kRanges, 0, kAuto},
      {"graph_copyback", true, false, kRanges, 0, kAuto},
      {"stream", false, true, kRanges, 0, kAuto},
      {"graph_sliceblocks", true, true, kRanges, 0, DecodePath::kSliceBlocks},
      {"onecopy", true, true, OutputForm::kOneCopy, 0, kAuto},
      {"rowchunks", true, true, OutputForm::kRowChunks, 0, kAuto},
      {"columns2_own", true, true, kRanges, 2, kAuto, RangePlan::kOwn},
      {"columns3_own", true, true, kRanges, 3, kAuto, RangePlan::kOwn},
      {"columns4_own", true, true, kRanges, 4, kAuto, RangePlan::kOwn},
      {"columns8_own", true, true, kRanges, 8, kAuto, RangePlan::kOwn},
      {"columns2_whole", true, true, kRanges, 2, kAuto, RangePlan::kWhole},
      {"columns3_whole", true, true, kRanges, 3, kAuto, RangePlan::kWhole},
      {"columns4_whole", true, true, kRanges, 4, kAuto, RangePlan::kWhole},
      {"columns8_whole", true, true, kRanges, 8, kAuto, RangePlan::kWhole},
      {"direct64k", true, true, kRanges, 0, kAuto, RangePlan::kAuto, 64},  // the limit before 2026-12-06
      {"direct_all", true, true, kRanges, 0, kAuto, RangePlan::kAuto, 1 << 20},
      {"graph_serial", true, true, kRanges, 0, kAuto, RangePlan::kAuto, cuda::kDefaultDirectOutputKib, false}};
  constexpr size_t kForms = sizeof(forms) / sizeof(forms[0]);
  // Interleaved call by call, in a new order every round: every form sees the same drift of
  // clocks and of the host, and no form always follows the same one (in a fixed order, gate_up
  // M = 32 on the H100 took 235.3 us in one position and 208.1 in another, the same schedule).
  const int reps = quick ? 30 : 200;
  std::vector<std::vector<double>> us(kForms);
  std::vector<size_t> order(kForms);
  for (size_t f = 0; f < kForms; ++f) order[f] = f;
  std::mt19937 shuffle_rng(20261205);
  for (int rep = -3; rep < reps; ++rep) {  // three untimed rounds: graphs captured, staging grown
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    for (size_t f : order) {
      TB_RETURN_IF_ERROR(apply(cuda, forms[f]));
      const auto t0 = std::chrono::steady_clock::now();
      TB_RETURN_IF_ERROR(cuda.gemm(bound, g));
      const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (rep >= 0) us[f].push_back(t);
    }
  }
  TB_RETURN_IF_ERROR(apply(cuda, forms[0]));
  TB_RETURN_IF_ERROR(staged_round_trip(cuda, bound, m, k, n, x, y, reps, s, note));
  for (size_t f = 0; f < kForms; ++f) *note += Format("offload_%s_us=%.2f ", forms[f].name, median(us[f]));
  const double in_bytes = static_cast<double>(m * k) * 4, out_bytes = static_cast<double>(m * n) * 4;
  *note += Format("roundtrip_bound_us=%.2f ", kernel_us + in_bytes / rates.h2d + out_bytes / rates.d2h);
  // The link beside the round trip: the output's DMA into pinned memory with its
  // synchronisation, and one thread's memcpy of it into the caller's rows.
  const size_t bytes = y.size() * 4;
  Pinned pinned;
  Device dy;
  TB_CUDA_TRY(cudaMallocHost(&pinned.p, bytes));
  TB_CUDA_TRY(cudaMalloc(&dy.p, bytes));
  auto d2h = time_copy(pinned.p, dy.p, bytes, cudaMemcpyDeviceToHost, s, quick ? 10 : 100);
  if (!d2h.ok()) return d2h.status();
  auto host_copy = time_host(5, quick ? 10 : 100, [&] {
    std::memcpy(y.data(), pinned.p, bytes);
    return Status();
  });
  if (!host_copy.ok()) return host_copy.status();
  auto parallel_copy = time_host(5, quick ? 10 : 100, [&] {  // the backend's copy (over oneTBB from kParallelCopyBytes)
    cuda::copy_rows(y.data(), bytes, pinned.p, bytes, 1, bytes);
    return Status();
  });
  if (!parallel_copy.ok()) return parallel_copy.status();
  *note += Format("d2h_pinned_us=%.2f host_copy_us=%.2f host_copy_parallel_us=%.2f ", *d2h, *host_copy, *parallel_copy);
  // The call's other serial steps: the activations' copy into pinned staging (as pack_inputs
  // does it), and a graph's launch and synchronisation with nothing in it. With the kernel and
  // the two DMAs they add up to the round trip when nothing overlaps (roundtrip_serial_us).
  Pinned staging;
  TB_CUDA_TRY(cudaMallocHost(&staging.p, x.size() * 4));
  auto pack = time_host(5, quick ? 10 : 100, [&] {
    cuda::copy_rows(staging.p, static_cast<size_t>(k) * 4, x.data(), static_cast<size_t>(k) * 4, m,
                    static_cast<size_t>(k) * 4);
    return Status();
  });
  if (!pack.ok()) return pack.status();
  auto launch = empty_graph_us(s, quick ? 10 : 100);
  if (!launch.ok()) return launch.status();
  const double host_out = bytes >= cuda::kParallelCopyBytes ? *parallel_copy : *host_copy;
  *note += Format("host_pack_us=%.2f graph_sync_us=%.2f roundtrip_serial_us=%.2f ", *pack, *launch,
                  *pack + *launch + kernel_us + in_bytes / rates.h2d + *d2h + host_out);
  return Status();
}

}  // namespace twinbit::bench
