// Timing helpers of the CUDA benchmark (cuda_bench.cpp, layer_bench.cpp): medians of
// event-bracketed device time and of host wall time.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit::bench {

// The median of v (-1 when empty).
double median(std::vector<double> v);

// Device time the host needs to enqueue `launches` event-bracketed launches, with margin: the
// hold kernel ahead of each timed batch spins this long (see launch_hold).
unsigned hold_us(int launches);

// Median device time (µs) of `launch(i)` over reps calls after `warmup` untimed ones, each
// bracketed by its own events, the stream held by a spinning kernel while the host enqueues each
// batch of 16.
Result<double> time_events(cudaStream_t s, int warmup, int reps, const std::function<Status(int)>& launch);

// A captured CUDA graph and its instance, destroyed with the guard.
struct GraphGuard {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GraphGuard() = default;
  GraphGuard(const GraphGuard&) = delete;
  GraphGuard& operator=(const GraphGuard&) = delete;
  ~GraphGuard();
};

// Captures `enqueue` (device work on s) into a graph and instantiates it; the capture is ended
// whatever `enqueue` returns.
Status capture(cudaStream_t s, const std::function<Status()>& enqueue, GraphGuard& g);

// Device time (µs) of one replay of `exec`, median over reps (time_events).
Result<double> time_graph(cudaGraphExec_t exec, cudaStream_t s, int reps);

// Host wall time (µs) of `call()`, median over reps after `warmup` untimed calls.
Result<double> time_host(int warmup, int reps, const std::function<Status()>& call);

}  // namespace twinbit::bench
