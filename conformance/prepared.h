// Internal to the suite: one case with its inputs drawn and its reference computed, ready to be
// run on any number of backends (the backend under test, then its fallback).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conformance/conformance.h"
#include "conformance/explain.h"

namespace twinbit::conformance::detail {

// A bit pattern no operation produces from finite inputs (a NaN with a recognisable payload).
// Outputs are filled with it before a call, so an element a backend never writes shows up as a
// difference, and padding that still holds it proves nothing was written outside the output.
constexpr uint32_t kCanaryBits = 0x7fa5a5a5u;
float canary();
bool is_canary(float f);

// One backend's attempt at a prepared case.
struct Attempt {
  Status status;      // UNIMPLEMENTED = unsupported; other errors = error
  Mismatch mismatch;  // valid when status is OK
  uint64_t output_hash = 0;  // of every output byte of every call: runs of a case must agree
};

// A named input's hash (activations, codes, scales, ...): taken before and after every attempt,
// since a backend only reads its inputs.
struct InputHash {
  const char* name;  // "x (activations)", "codes", ...
  uint64_t hash;
};

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t seed = 0);

// What an operation answered after supports() accepted the case: UNIMPLEMENTED there contradicts
// the claim (a runtime trusting supports() would fail at the call), so it becomes INTERNAL with
// both halves quoted; anything else passes through.
Status after_claim(Status op_status, const char* op);

class PreparedCase {
 public:
  virtual ~PreparedCase() = default;
  // Runs the case on `backend`. Thread-safe: the runner calls it from two threads at once (the
  // repeat check), so it changes nothing of the prepared case.
  virtual Attempt run(const Backend& backend) const = 0;
  virtual std::vector<InputHash> input_hashes() const = 0;
  // What was checked: "all 257 columns", "sampled 98 of 5000 columns", "rows 0, 1, 16 of 33".
  const std::string& checked() const { return checked_; }
  bool sampled() const { return sampled_; }
  // Runs the case once on `backend` and searches the deviations that reproduce its outputs
  // (explain.h); by default "cannot be explained" for the op.
  virtual Explanation explain(const Backend& backend) const;
  // The inputs and expected outputs, for dump_case; by default none (the op cannot be dumped).
  virtual std::vector<DumpArray> arrays() const { return {}; }
  // Extra fields of case.json beyond the shape (e.g. "nsplit": 16), as JSON members text.
  virtual std::string dump_params() const { return ""; }

 protected:
  std::string checked_;
  bool sampled_ = false;
};

// Draws the inputs of `c` from case_seed(seed, c.name()) and computes its reference.
std::unique_ptr<PreparedCase> prepare(const Case& c, uint64_t seed, double reference_budget);

std::unique_ptr<PreparedCase> prepare_gemm(const Case& c, uint64_t case_seed, double budget);
std::unique_ptr<PreparedCase> prepare_gemv(const Case& c, uint64_t case_seed);
std::unique_ptr<PreparedCase> prepare_gdn(const Case& c, uint64_t case_seed);
std::unique_ptr<PreparedCase> prepare_quantize(const Case& c, uint64_t case_seed);

}  // namespace twinbit::conformance::detail
