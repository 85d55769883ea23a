// A calibration profile: what `twinbit calibrate` measured on one machine, per backend - the
// fixed cost of a call, the bytes/s at which it streams weights and its FLOP/s, per activation
// mode and weight precision - and what the calibrated plan predicts times from
// (core/runtime/cost_model.h, docs/RUNTIME.md "Calibration and the calibrated plan").
//
// THE FILE is one JSON object:
//   {"format": "twinbit-profile", "version": 1,
//    "machine": {"hostname": "...", "cpu_model": "...", "cores": 16},
//    "date": "2026-12-02T04:05:51Z", "twinbit_version": "0.1.0",
//    "backends": [{"spec": "cpu", "name": "cpu", "device": "Intel Xeon ... (16 threads, avx512bw)",
//                  "costs": [{"mode": "f32", "prec": "q8", "fixed_us": 3.1,
//                             "bytes_per_s": 2.1e10, "flops_per_s": 9.5e10}, ...]}, ...],
//    "splits": [{"first": "cpu", "second": "cuda", "mode": "f32", "prec": "q8", "factor": 1.6}, ...]}
// `spec` is the backend's spec as the runtime writes it (Runtime::backend_labels), which is how a
// runtime finds a backend's measurements; `name` and `device` are its identity (describe()).
// A backend has at most one cost per (mode, prec); a pair it was not measured in (its
// supports() declined every shape of the sweep) is absent, and the calibrated plan does not
// predict that backend there.
//
// `splits` (optional; absent in profiles written before it existed) holds, per pair of backends
// and (mode, prec), the measured time of a column split run concurrently divided by the cost
// model's prediction for it: the parts of a split share the host (memory bandwidth, the cores
// a GPU's host thread needs), which single-backend costs cannot show. The calibrated plan
// multiplies a split's prediction by it; a pair without one is predicted as measured alone
// (factor 1).
//
// READING validates exactly: malformed JSON, another format or version, a missing field or one
// of the wrong type, a negative or non-finite number (bytes_per_s and flops_per_s must be > 0), an
// unknown mode or precision, a (mode, prec) or spec given twice, a split naming a backend the
// profile does not list or a factor that is not finite and > 0, are INVALID_ARGUMENT naming the
// file and the field ("backends[0].costs[2].bytes_per_s"). Unknown extra fields are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit::runtime {

inline constexpr int kProfileVersion = 1;
inline constexpr char kProfileFormat[] = "twinbit-profile";

// One backend's costs of a gemm in one activation mode and weight precision.
struct GemmCost {
  tb_act_mode mode = TB_ACT_F32;
  tb_prec prec = TB_PREC_Q8;
  double fixed_us = 0.0;     // time of a call that moves and computes (almost) nothing
  double bytes_per_s = 0.0;  // weight bytes (codes + scales) streamed per second
  double flops_per_s = 0.0;  // 2*M*N*K per second
  bool operator==(const GemmCost&) const = default;
};

struct BackendProfile {
  std::string spec;    // as the runtime writes it: "cpu", "cuda:1", "cpu,isa=sse2"
  std::string name;    // the backend's describe() name: "cpu", "cuda"
  std::string device;  // its describe() device: "NVIDIA H200 (132 SMs)"
  std::vector<GemmCost> costs;

  // The cost of (mode, prec), or null when it was not measured.
  const GemmCost* find(tb_act_mode mode, tb_prec prec) const;
  bool operator==(const BackendProfile&) const = default;
};

// A pair's measured split factor in one (mode, prec): split time measured / predicted.
struct SplitCost {
  std::string first, second;  // backend specs, as in BackendProfile::spec
  tb_act_mode mode = TB_ACT_F32;
  tb_prec prec = TB_PREC_Q8;
  double factor = 1.0;
  bool operator==(const SplitCost&) const = default;
};

struct MachineInfo {
  std::string hostname, cpu_model;
  int64_t cores = 0;
  bool operator==(const MachineInfo&) const = default;
};

struct Profile {
  MachineInfo machine;
  std::string date;             // ISO 8601 UTC, "2026-12-02T04:05:51Z"
  std::string twinbit_version;  // of the twinbit that measured it
  std::vector<BackendProfile> backends;
  std::vector<SplitCost> splits;
  // Where it came from, for messages ("prof.json", "calibrated in this process"); not written.
  std::string source;

  const BackendProfile* find(const std::string& spec) const;
  // The split factor of the pair (either order) in (mode, prec); 1 when none was measured.
  double split_factor(const std::string& a, const std::string& b, tb_act_mode mode, tb_prec prec) const;
  bool same_measurements(const Profile& o) const {
    return machine == o.machine && date == o.date && twinbit_version == o.twinbit_version && backends == o.backends &&
           splits == o.splits;
  }
};

// This machine: hostname, the CPU model (/proc/cpuinfo, "unknown" elsewhere), logical cores.
MachineInfo this_machine();
// Now, as the profile's date.
std::string utc_now_iso8601();
// The version of this twinbit ("0.1.0").
const char* twinbit_version();

// "f32" / "i8"; mode_from_name is INVALID_ARGUMENT for any other text.
const char* mode_name(tb_act_mode mode);
Result<tb_act_mode> mode_from_name(const std::string& name);

// The JSON text of a profile (the format above, 2-space indented, ending in a newline).
std::string profile_json(const Profile& profile);
// Parses and validates; `source` names the text in errors (a path).
Result<Profile> parse_profile(const std::string& text, const std::string& source);
// Reads and validates the file; the profile's source is `path`.
Result<Profile> read_profile(const std::string& path);
// Writes atomically (artifacts/atomic_file.h) into an output opened before the measuring, or to
// a path.
Status write_profile(const Profile& profile, artifact::OutputFile& out);
Status write_profile(const Profile& profile, const std::string& path);

}  // namespace twinbit::runtime
