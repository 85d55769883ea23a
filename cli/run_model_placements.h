// The placements `twinbit run-model` compares (docs/RUNTIME.md "run-model"), and the pieces of
// its measurement: the floor (a pure read of the step's weight bytes) and the percentiles.
//
// PLACEMENTS, in this order, from the backends given (default: cpu, and cuda when it has a
// device here):
//   cpu              every projection on the CPU backend (the first spec named cpu, else "cpu")
//   all <SPEC>       for each other backend: override *=SPEC (a projection the backend declines
//                    falls back, counted)
//   threshold        the default plan over every backend given that can run here
//   calibrated       the calibrated plan (RuntimeOptions::profile) over the same backends: the
//                    caller fills the profile (--profile, or calibrate() in process)
//   split cpu+cuda   *=cpu*0.5+cuda*0.5, with a GPU
//   split cuda:0+cuda:1   with two GPUs
//   split cpu ISAs   without a GPU: *=<cpu,isa=SECOND,threads=1>*0.5+cpu*0.5, SECOND the second
//                    best instruction set of this CPU, so that the check is never vacuous
// A placement that cannot run here (no device, no second instruction set, nothing to compare
// with, one backend for the plans) is kept in the list with `skipped` saying why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "core/runtime/model_step.h"
#include "core/backend.hpp"
#include "core/runtime/runtime.h"
#include <twinbit/status.hpp>

namespace twinbit::cli {

struct ModelPlacement {
  std::string name;               // "cpu", "all cuda", "threshold", "split cpu+cuda", ...
  std::string how;                // "*=cuda", "default plan over cpu, cuda", ...
  runtime::RuntimeOptions options;
  std::string skipped;            // why it cannot run here; "" when it runs
  bool single_backend = false;    // all on one backend: the peer of the ratios is the best of these
  std::string floor_backend;      // single_backend: its backend, whose floor it is compared with
  bool calibrated = false;        // needs options.profile before its runtime is opened
};

// The placements for `backend_texts` (--backend values, in order). On error the line is printed
// and *exit_code set (2: a bad spec or a built-in backend's bad parameter; 1: a plugin that does
// not load, or another failure); a built-in backend with no device here only skips the
// placements that need it.
Result<std::vector<ModelPlacement>> model_placements(const std::vector<std::string>& backend_texts,
                                                     const artifact::OpenOptions& open, int* exit_code);

// The floor of a step on one backend: every weight byte of the step read once by the backend's
// read_floor entry (a pure read with the backend's own threads and partition, what `twinbit gate`
// and twinbit-bench measure against), one call per projection, as the step makes one gemm each.
class StepFloor {
 public:
  // Creates the backend `label` names and binds every projection of the step on it.
  // UNIMPLEMENTED when the backend has no read_floor entry (it gets no invented floor).
  static Result<StepFloor> make(const std::string& label, const artifact::Artifact& art,
                                const runtime::ModelStep& step);
  const std::string& label() const { return label_; }
  Status read(int64_t m) const;

 private:
  std::string label_;
  std::vector<BoundWeights> bound_;
};

// The q-quantile (0..1) of `samples` by the nearest rank on the sorted values.
double quantile(std::vector<double> samples, double q);

}  // namespace twinbit::cli
