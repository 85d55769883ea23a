// The offload round trip of the CUDA benchmark: the public gemm on host memory (pinned staging,
// the output's way back; backends/cuda/gemm_offload.cpp), its forms interleaved call by call in
// one process, beside the bound the issue holds it to.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include <twinbit/status.hpp>

namespace twinbit::bench {

// The link's pinned copy rates (bytes per µs) in each direction, measured once per process on
// 64 MiB copies.
struct PinnedRates {
  double h2d = 0, d2h = 0;
};
Result<PinnedRates> measure_pinned_rates(cudaStream_t s, int reps);

// Appends to *note, for the (m, k) F32 activations x on the bound (k, n) weights:
//   offload_<form>_us  host wall time per call (median), the forms interleaved call by call:
//                      graph (the defaults), graph_copyback (no direct output), stream (no
//                      graphs), graph_sliceblocks (decode on slice blocks), onecopy and rowchunks
//                      (outputs of 1 MiB and more computed whole), columns<n>_own and
//                      columns<n>_whole (n column ranges, each on the schedule planned for its
//                      own strips or for the whole output);
//   roundtrip_bound_us kernel_us + the call's bytes at `rates` (the target: 1.1x it);
//   staged_*_us        the same steps by hand on the bench's stream (one copy each way, the
//                      launches), each between events, and their host wall time with the copy
//                      into the caller's rows: where the round trip's time goes;
//   d2h_pinned_us / host_copy_us / host_copy_parallel_us  the output's DMA into pinned memory
//                      with its synchronisation, one thread's memcpy of it into the caller's
//                      rows, and the backend's copy of it (copy_rows: over oneTBB from kParallelCopyBytes).
// Restores the backend's switches to their defaults.
Status offload_round_trip(const Backend& cuda, const BoundWeights& bound, int64_t m, int64_t k, int64_t n,
                          const std::vector<float>& x, double kernel_us, const PinnedRates& rates, bool quick,
                          cudaStream_t s, std::string* note);

}  // namespace twinbit::bench
