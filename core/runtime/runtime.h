// The runtime: opens an artifact, creates backends from specs, and routes every gemm of a
// projection to the backend (or the column split across backends) its placement names, with the
// bits of the scalar reference whatever the placement (docs/RUNTIME.md).
//
// PLACEMENT of a call (entry, M, mode): the first override whose pattern matches the entry
// (core/runtime/overrides.h); else, with a profile, the calibrated choice - the lowest predicted
// time, a two-backend column split included (core/runtime/cost_model.h); else the default plan
// (core/runtime/default_plan.h). A part whose backend answers UNIMPLEMENTED at supports(), bind
// or the call is replaced by the next backend of the default order, the CPU backend last; each
// replacement counts as one fallback of the entry (report()).
//
// BACKENDS. Specs in the order given; the CPU backend of the default plan is the first one named
// "cpu", and when no spec names it a plain "cpu" is added at the end. A spec given twice is an
// error. A backend that cannot be created is an error (UNAVAILABLE when it has no device here).
//
// BINDING is lazy: an entry's columns are bound on a backend the first time a call runs them
// there, so nothing is uploaded to a backend the plan never uses. A binding holds the artifact's
// file image (Artifact::weights), and lives as long as the Runtime.
//
// I8 MODE: the activations are quantised once per call, by the first backend of the placement
// (Backend::quantize_i8), and the same codes and scales go to every part.
//
// THREADS. Concurrent calls on one Runtime are safe: the table of bindings is guarded by a mutex
// (a first bind happens under it; operations run outside it), counters are atomic, and backends
// accept concurrent operations (twinbit/backend.h). The parts of a split run concurrently, one host
// thread each, and the call returns when all are done.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "artifacts/artifact.h"
#include "core/backend.hpp"
#include "core/runtime/overrides.h"
#include "core/runtime/placement.h"
#include "core/runtime/profile.h"
#include <twinbit/status.hpp>

namespace twinbit::runtime {

struct RuntimeOptions {
  std::vector<std::string> backends;   // specs; empty: just "cpu"
  std::vector<OverrideRule> overrides; // first match wins
  artifact::OpenOptions open;
  // Measured costs (twinbit calibrate): with one, calls no override places go where the cost
  // model predicts the lowest time. It must cover every backend of the runtime, measured on the
  // same backend and device (name and device as describe() gives them).
  std::optional<Profile> profile;
};

// How a call (entry, M, mode) is placed before it runs, and why.
struct Decision {
  Placement placement;              // after fallbacks at supports()
  std::string why;                  // "threshold: ...", "override FILE line 3: ...", "; fallback ..."
  int64_t fallbacks = 0;            // parts replaced because supports() declined
  // With a profile, per backend of the runtime: the predicted time of the whole call on it, in
  // microseconds (nullopt: its supports() declines the call or the profile has no cost for the
  // mode and precision). Empty without a profile.
  std::vector<std::optional<double>> predicted_us;
  // The calibrated choice's predicted time (a split: its longer part); nullopt when an override
  // placed the call or there is no profile.
  std::optional<double> predicted_choice_us;
};

struct EntryReport {
  std::string entry;
  std::string placement;  // of the latest call ("" before any call)
  int64_t calls = 0;
  int64_t fallbacks = 0;
};

class Runtime {
 public:
  // Errors: the artifact's (artifacts/artifact.h); a bad spec or a backend that cannot be created
  // (the registry's message); a spec listed twice; an override naming a backend that is not
  // among `backends` or whose pattern matches no entry of the artifact (quoting the rule and
  // where it was written); with a profile, a backend it has no measurements for, or measured
  // on another backend or device (naming the backend and the calibrate command that fixes it).
  static Result<std::unique_ptr<Runtime>> open(const std::string& artifact_path,
                                               const RuntimeOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const artifact::Artifact& artifact() const { return *artifact_; }
  // The backends' specs as written in messages and placements (canonical spec text).
  const std::vector<std::string>& backend_labels() const { return labels_; }
  size_t cpu_backend() const { return cpu_; }
  // The profile the runtime plans with, or null.
  const Profile* profile() const { return profile_ ? &*profile_ : nullptr; }

  // Where a gemm of `m` rows of the strip entry `entry` in `mode` goes, and why. INVALID_ARGUMENT
  // for an unknown entry or one that is not a strip set.
  Result<Decision> decide(const std::string& entry, int64_t m, tb_act_mode mode) const;

  // y[m][n] = the entry's gemm of x (twinbit/backend.h tb_gemm_args): F32 mode reads x [m][ldx]
  // floats; I8 mode quantises x once and passes the codes to every part. y [m][ldy]; only the
  // entry's N columns of each row are written. The bits are those of twinbit::ref.
  Status gemm(const std::string& entry, int64_t m, tb_act_mode mode, const float* x, int64_t ldx,
              float* y, int64_t ldy);

  // Per strip entry, in artifact order: the latest placement, calls and fallbacks so far.
  std::vector<EntryReport> report() const;

 private:
  Runtime() = default;
  struct Share;
  struct EntryState;
  using BindKey = std::tuple<size_t, size_t, int64_t, int64_t>;  // entry, backend, begin, count

  Status use_profile(const Profile& profile);  // checks that it covers every backend
  const EntryState* find_entry(const std::string& entry, size_t* index) const;
  tb_op_desc op_of(const artifact::Entry& e, int64_t m, int64_t n, tb_act_mode mode) const;
  Result<const BoundWeights*> bound(size_t entry, size_t backend, int64_t begin, int64_t count);
  Status run_share(size_t entry, const Share& share, const tb_gemm_args& args, std::atomic<int64_t>* fallbacks,
                   std::string* ran_on);

  std::unique_ptr<artifact::Artifact> artifact_;
  std::vector<Backend> backends_;
  std::vector<const Backend*> backend_ptrs_;
  std::vector<std::string> labels_;
  size_t cpu_ = 0;
  std::vector<OverrideRule> overrides_;
  std::vector<Placement> override_placements_;  // per rule, its target on backends_
  std::optional<Profile> profile_;
  std::vector<const BackendProfile*> backend_profiles_;  // per backend, into profile_
  std::vector<std::unique_ptr<EntryState>> entries_;         // per artifact entry

  mutable std::mutex bind_mutex_;
  std::map<BindKey, std::unique_ptr<BoundWeights>> bindings_;
};

}  // namespace twinbit::runtime
