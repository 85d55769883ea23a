// twinbit-bench --backend cuda --layer: one model layer's projections per decode step (qkv, q_o,
// gate_up, down of bench.h's kProjectionShapes), as an engine that keeps activations on the GPU
// runs them: device-resident calls (twinbit/cuda_device.h) captured once in a CUDA graph and
// replayed, beside the same calls enqueued without a graph and the same four as public host
// calls back to back.
//
// The graph holds L layers of distinct weights (L copies of the four projections, together
// more than 3x the L2, as a model's layers are), so no replay finds the weights cached; every time
// is reported per layer: the graph's device time (events), the host's time to replay it and wait,
// the host's time to enqueue the device calls and wait, and the host calls' round trips. A case
// is printed only when the device calls' last outputs equal the host calls' by memcmp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "bench/bench.h"
#include "core/backend.hpp"

namespace twinbit::bench {

// Runs the layer measurement for every --m, --prec and --mode on `cuda`, timing on `stream`
// (of the backend's device). `l2_bytes` sizes the layer rotation; `copy_gbps` (the run's
// device-to-device copy rate) gives each case's floor: the layer's weight bytes at that rate.
Status run_layer(const Options& opt, const Backend& cuda, cudaStream_t stream, size_t l2_bytes,
                 double copy_gbps, std::vector<Case>& out);

}  // namespace twinbit::bench
