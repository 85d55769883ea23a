// The source engine's decode/prefill mapping, reproduced as the benchmark's baseline (it lives
// only here, never in the library): weights K-major int8 WT (Kp, Npad), float scales bsT
// (ngroups, Npad), float activations; 64 x 4 threads per block, 4 columns per thread; at M = 1
// all 256 threads along n (1024 columns per block); the group axis z-split to about 512 blocks
// (partials capped at 64 MiB); a second launch reduces the slices in fixed order.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace twinbit::bench {

struct SourceMappingShape {
  int64_t m, n, k, npad;  // npad = 1024 * ceil(n / 1024)
  int64_t nsplit;         // as the source engine chose it
};
SourceMappingShape source_mapping_plan(int64_t m, int64_t n, int64_t k);

// wt (k, npad) int8; bst (k/32, npad) float; x (m, k); part (nsplit, m, npad); y (m, npad).
cudaError_t source_mapping_launch(const SourceMappingShape& s, const int8_t* wt, const float* bst,
                                  const float* x, float* part, float* y, cudaStream_t stream);

// An empty kernel: the launch + synchronise floor of an offloaded call.
cudaError_t launch_empty(cudaStream_t stream);

// One thread that spins for `microseconds` of device time: launched ahead of a timed batch it
// holds the stream while the host enqueues the batch, so events bracket device work only (not
// the host's launch cadence, which is slower than a microsecond kernel).
cudaError_t launch_hold(cudaStream_t stream, unsigned microseconds);

}  // namespace twinbit::bench
