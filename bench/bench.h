// twinbit-bench: benchmark drivers. Measurements, not tests: every case prints its time next to
// a floor and a peer measured in the same run, as ratios.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend_spec.h"
#include <twinbit/status.hpp>

namespace twinbit::bench {

struct Options {
  std::string backend = "cpu";        // --backend SPEC (core/backend_spec.h) naming cpu, cuda or npu_layout
  BackendSpec spec;                   // its parse; cpu: --threads fills threads= when absent
  std::string json_path;              // --json FILE ("" = none)
  std::vector<std::string> shapes;    // --shape names (empty = all Qwen3-VL-2B shapes)
  std::vector<int64_t> ms = {1, 32};  // --m
  int threads = 2;                    // --threads (CPU)
  int reps = 0;                       // --reps (0 = the driver's default)
  bool quick = false;                 // --quick: fewer repetitions (smoke runs)
  std::string vs_isa;                 // --vs-isa TAG (CPU): also time isa=TAG, interleaved
  std::string pages = "4k";           // --pages (CPU): the weight copies' pages, 4k, 2m or ab
  std::vector<int64_t> amx_tunings;   // --amx-tuning (CPU, amx tag): tunings to time against each other
  std::vector<std::string> modes;     // --mode f32,i8 (empty = both)
  std::vector<std::string> precs;     // --prec q8,q4 (empty = both)
  bool layer = false;                 // --layer (CUDA): one layer's projections per decode step
                                      // as a replayed graph of device-resident calls, instead of
                                      // the per-shape cases (bench/cuda/layer_bench.h)
};

// Whether `name` is in a --mode / --prec / --shape list (an empty list takes everything).
inline bool wanted(const std::vector<std::string>& only, const std::string& name) {
  return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
}

// The Qwen3-VL-2B projections the drivers time, K x N (--shape picks among them by name).
struct ShapeDef {
  const char* name;
  int64_t k, n;
};
inline constexpr ShapeDef kProjectionShapes[] = {
    {"q_o", 2048, 2048},     {"k_v", 2048, 1024}, {"gate", 2048, 6144}, {"gate_up", 2048, 12288},
    {"down", 6144, 2048},    {"qkv", 2048, 4096}, {"lm_head", 2048, 151936},
};

// One measured case; the JSON "cases" array holds these. A field < 0 was not measured.
struct Case {
  std::string shape;  // "lm_head", "gate_up", ...
  int64_t k = 0, n = 0, m = 0;
  std::string prec;   // "q8" | "q4"
  std::string mode;   // "f32" | "i8"
  double us = -1;         // median time of one call
  double floor_us = -1;   // the floor measured in the same run
  double ratio = -1;      // us / floor_us
  double gbps = -1;       // weight bytes / us
  double peer_us = -1;    // Eigen (CPU) or cuBLAS bf16 (GPU), same shape
  double baseline_us = -1;  // the source engine's mapping (GPU)
  double vs_us = -1;        // --vs-isa: the same call on the cpu backend forced to that tag
  std::string note;
};

// Each returns OK and appends its cases, or an error naming what failed.
Status run_cpu(const Options& options, std::vector<Case>& out);
Status run_cuda(const Options& options, std::vector<Case>& out);  // UNAVAILABLE if not built
// npu_layout (the emulated backend) next to cpu, with the mapping model's chip counts.
Status run_npu(const Options& options, std::vector<Case>& out);

}  // namespace twinbit::bench
