// Timing helpers of the CUDA benchmark (timing.h).
#include "bench/cuda/timing.h"

#include <algorithm>
#include <chrono>

#include "backends/cuda/cuda_status.h"
#include "bench/cuda/source_mapping.h"

namespace twinbit::bench {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

unsigned hold_us(int launches) { return 20u + 15u * static_cast<unsigned>(launches); }

Result<double> time_events(cudaStream_t s, int warmup, int reps, const std::function<Status(int)>& launch) {
  for (int i = 0; i < warmup; ++i) TB_RETURN_IF_ERROR(launch(i));
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(reps));
  for (auto& e : ev) TB_CUDA_TRY(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    if (i % 16 == 0) TB_CUDA_TRY(launch_hold(s, hold_us(16)));
    TB_CUDA_TRY(cudaEventRecord(ev[2 * i], s));
    TB_RETURN_IF_ERROR(launch(warmup + i));
    TB_CUDA_TRY(cudaEventRecord(ev[2 * i + 1], s));
  }
  TB_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<double> us(reps);
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    TB_CUDA_TRY(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    us[i] = ms * 1e3;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return median(us);
}

GraphGuard::~GraphGuard() {
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
}

Status capture(cudaStream_t s, const std::function<Status()>& enqueue, GraphGuard& g) {
  TB_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  const Status enq = enqueue();
  const cudaError_t end = cudaStreamEndCapture(s, &g.graph);  // always end the capture
  TB_RETURN_IF_ERROR(enq);
  TB_CUDA_TRY(end);
  TB_CUDA_TRY(cudaGraphInstantiate(&g.exec, g.graph, 0));
  return Status();
}

Result<double> time_graph(cudaGraphExec_t exec, cudaStream_t s, int reps) {
  return time_events(s, 3, reps, [&](int) -> Status {
    TB_CUDA_TRY(cudaGraphLaunch(exec, s));
    return Status();
  });
}

Result<double> time_host(int warmup, int reps, const std::function<Status()>& call) {
  for (int i = 0; i < warmup; ++i) TB_RETURN_IF_ERROR(call());
  std::vector<double> us(reps);
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    TB_RETURN_IF_ERROR(call());
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  return median(us);
}

}  // namespace twinbit::bench
