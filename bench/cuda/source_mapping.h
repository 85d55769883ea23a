// The source engine's decode/prefill mapping, reproduced as the benchmark's baseline (it lives
// only here, never in the library): weights K-major int8 WT (Kp, Npad), float scales bsT
// (ngroups, Npad), float activations; 64 x 4 threads per block, 4 columns per thread; at M = 1
// all 256 threads along n (1024 columns per block); the group axis z-split to about 512 blocks
// (partials capped at 64 MiB); a second launch reduces the slices in fixed order.
//
// What it computes, per (m, n): the group dot p[g] = fma chain over the 32 k of group g in
// ascending k (float(code) * x), then per slice acc = fma(p[g], scale, acc) over its groups in
// ascending g, then +0 + part[0] + part[1] + ... - the contract's F32 gemm (docs/NUMERICS.md)
// with the source's own nsplit instead of split_plan(N, K). Where the two nsplits agree its
// outputs are the reference's bits; elsewhere they differ by rounding only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace twinbit::bench {

struct SourceMappingShape {
  int64_t m, n, k, npad;  // npad = 1024 * ceil(n / 1024)
  int64_t nsplit;         // as the source engine chose it
  // Every element offset the kernels form (codes k * npad, scales, activations m * k, partials
  // nsplit * m * npad) is below 2^31, so the faithful form indexes in 32 bits.
  bool index32;
};
SourceMappingShape source_mapping_plan(int64_t m, int64_t n, int64_t k);

// Two implementations of the same mapping and the same arithmetic (the same bits):
//   kFaithful: as the source engine wrote it - the 32 k of a group unrolled, pointers advanced
//              once per group, 32-bit offsets where index32 holds (64-bit otherwise);
//   kLegacy:   this benchmark's first copy - a rolled k loop forming 64-bit offsets for every k
//              (measured 11-27% slower on an H200); kept for one interleaved A/B.
enum class SourceForm { kFaithful, kLegacy };

// wt (k, npad) int8; bst (k/32, npad) float; x (m, k); part (nsplit, m, npad); y (m, npad).
// Preconditions, checked here (cudaErrorInvalidValue otherwise, nothing launched): k a positive
// multiple of 32, m >= 1, npad a multiple of 1024, m / k / npad below 2^31 and the grid within
// the device's limits ((m + 3) / 4 <= 65535 rows of blocks, 1 <= nsplit <= 65535), and index32
// only where it holds (it may be cleared: 64-bit offsets serve every shape). Asynchronous on
// `stream`; the buffers must stay alive until it has run. Thread safety: none needed (no state).
cudaError_t source_mapping_launch(const SourceMappingShape& s, SourceForm form, const int8_t* wt,
                                  const float* bst, const float* x, float* part, float* y,
                                  cudaStream_t stream);

// An empty kernel: the launch + synchronise floor of an offloaded call.
cudaError_t launch_empty(cudaStream_t stream);

// One thread that spins for `microseconds` of device time: launched ahead of a timed batch it
// holds the stream while the host enqueues the batch, so events bracket device work only (not
// the host's launch cadence, which is slower than a microsecond kernel).
cudaError_t launch_hold(cudaStream_t stream, unsigned microseconds);

}  // namespace twinbit::bench
