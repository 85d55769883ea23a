// The CUDA backend's state behind its C interface: the context (one per created backend), the
// bound weights, and the lanes calls lease (cuda_backend.cpp has the interface, gemm_offload.cpp
// the public gemm's host side).
//
// Per call the backend leases a Lane (streams, pinned host staging for inputs and outputs,
// device buffers, the gemm workspace and the captured graphs); a lane serves one call at a time
// and returns to a pool, so concurrent host threads never share staging, and the pool grows to
// the number of threads calling at once. Weights live in device memory from bind to release.
//
// THREAD SAFETY. Ctx's switches are atomics; its lane pool and upload slots have their mutexes.
// A Lane is used by the one call that leased it.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/gemm_kernels.h"
#include "backends/cuda/output_copy.h"
#include <twinbit/status.hpp>

namespace twinbit::cuda {

constexpr size_t kMaxPartialBytes = size_t{256} << 20;  // gemm workspace cap; rows are chunked past it
constexpr size_t kBindChunk = size_t{32} << 20;         // pinned staging slot for uploads
constexpr size_t kMaxGraphsPerLane = 64;
// Outputs up to this size (KiB; the switch "cuda.set_direct_output_kib") are written by the
// kernel straight into the pinned (mapped) host staging: no device-to-host copy node, and the
// writes cross the bus while the kernel computes. Up to 1 MiB that beats one DMA after the
// kernel (H100, F32 q8 round trips: gate_up M = 16, 786 KB, 120.2 against 156.0 us; M = 2..8
// 8-12% faster; docs/results/h100-2026-12-06-direct-output.md). Past it the column ranges of
// output_copy.h win on most shapes (lm_head M = 32: 999.6 against 1138.7 us written directly).
constexpr int kDefaultDirectOutputKib = 1024;
constexpr int64_t kMaxDirectOutputKib = int64_t{1} << 20;

struct DeviceBuffer {
  void* p = nullptr;
  size_t cap = 0;
};
struct PinnedBuffer {
  void* p = nullptr;
  size_t cap = 0;
};

// RESOURCE_EXHAUSTED naming `what`, `bytes` and the device's free memory (clears the error).
Status device_oom(size_t bytes, const char* what);
// Grows b to at least `bytes`; contents are not kept. Sets *moved when the buffer was replaced.
Status grow(DeviceBuffer& b, size_t bytes, const char* what, bool* moved);
Status grow(PinnedBuffer& b, size_t bytes, const char* what, bool* moved);

constexpr uint64_t kBoundMagic = 0x7462637562643031ull;  // "tbcubd01"

struct Bound {
  uint64_t magic = kBoundMagic;  // the device-resident calls refuse a stray handle by it
  const void* owner = nullptr;   // the Ctx that bound it (its device holds the copy)
  uint64_t id = 0;  // unique per bind (graph keys never confuse a freed handle with a new one)
  tb_weights_kind kind = TB_WEIGHTS_STRIPS;
  DeviceStrips strips;
  void* d_codes = nullptr;
  void* d_scales = nullptr;
  float* d_matrix = nullptr;  // (rows, cols)
  int64_t rows = 0, cols = 0;
  BindReport report;
  Bound() = default;
  Bound(const Bound&) = delete;
  Bound& operator=(const Bound&) = delete;
  ~Bound() {
    if (d_codes) cudaFree(d_codes);
    if (d_scales) cudaFree(d_scales);
    if (d_matrix) cudaFree(d_matrix);
  }
};

struct GraphKey {
  uint64_t bind_id;
  int64_t m;
  int mode;
  int variant;  // direct output, output form, decode path, range plan, dependent launch (switches)
  int64_t ranges;  // column ranges of the output (1: one)
  bool operator<(const GraphKey& o) const {
    return std::tie(bind_id, m, mode, variant, ranges) < std::tie(o.bind_id, o.m, o.mode, o.variant, o.ranges);
  }
};

struct Lane {
  cudaStream_t stream = nullptr;
  cudaStream_t copy_stream = nullptr;  // column ranges' copies back (created on first use)
  PinnedBuffer h_in, h_out;
  DeviceBuffer d_in, d_out, d_aux, d_partial, d_counters;
  std::map<GraphKey, cudaGraphExec_t> graphs;  // valid while no buffer above moves
  void* h_out_mapped_of = nullptr;  // h_out.p whose device address h_out_mapped is
  void* h_out_mapped = nullptr;
  OutputEvents out_events;     // row chunks: one per chunk copied out (output_copy.h)
  OutputEvents range_computed, range_landed;  // column ranges: computed, and in staging

  Lane() = default;
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  void drop_graphs() {
    for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
    graphs.clear();
  }
  ~Lane() {
    drop_graphs();
    for (DeviceBuffer* b : {&d_in, &d_out, &d_aux, &d_partial, &d_counters}) {
      if (b->p) cudaFree(b->p);
    }
    for (PinnedBuffer* b : {&h_in, &h_out}) {
      if (b->p) cudaFreeHost(b->p);
    }
    if (copy_stream) cudaStreamDestroy(copy_stream);
    if (stream) cudaStreamDestroy(stream);
  }
};

struct Ctx {
  int device = 0;
  std::string device_desc;
  uint64_t memory_bytes = 0;

  std::mutex lanes_mu;
  std::vector<std::unique_ptr<Lane>> lanes;
  std::vector<Lane*> free_lanes;

  std::mutex bind_mu;  // one upload at a time through the two pinned slots
  cudaStream_t bind_stream = nullptr;
  void* bind_slot[2] = {nullptr, nullptr};
  cudaEvent_t bind_done[2] = {nullptr, nullptr};

  std::atomic<uint64_t> next_bind_id{1};
  std::atomic<bool> use_graphs{true};
  std::atomic<int> decode_path{static_cast<int>(DecodePath::kAuto)};
  std::atomic<bool> direct_output{true};
  std::atomic<bool> dependent_launch{true};  // launches may overlap the kernel before them
  std::atomic<int> direct_output_kib{kDefaultDirectOutputKib};
  std::atomic<int> output_form{static_cast<int>(OutputForm::kColumnRanges)};
  std::atomic<int> output_ranges{0};  // 0: the rule's count (column_ranges_for)
  std::atomic<int> range_plan{static_cast<int>(RangePlan::kAuto)};  // which schedule ranges run
  std::atomic<int> gdn_variant{0};

  Ctx() = default;
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  ~Ctx() {
    lanes.clear();
    for (int i = 0; i < 2; ++i) {
      if (bind_slot[i]) cudaFreeHost(bind_slot[i]);
      if (bind_done[i]) cudaEventDestroy(bind_done[i]);
    }
    if (bind_stream) cudaStreamDestroy(bind_stream);
  }
};

// A leased lane, returned to the pool on destruction.
class LaneLease {
 public:
  explicit LaneLease(Ctx& c) : c_(c) {}
  ~LaneLease();
  LaneLease(const LaneLease&) = delete;
  LaneLease& operator=(const LaneLease&) = delete;
  Status acquire();
  Lane& operator*() const { return *lane_; }

 private:
  Ctx& c_;
  Lane* lane_ = nullptr;
};

inline Ctx& ctx_of(void* c) { return *static_cast<Ctx*>(c); }

// The public gemm on host memory (tb_backend_iface::gemm): staging, launches, the copy back
// (gemm_offload.cpp).
Status gemm_offload(Ctx& c, const Bound& b, const tb_gemm_args& a);

}  // namespace twinbit::cuda
