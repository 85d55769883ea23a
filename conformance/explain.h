// Why do the bits differ? `twinbit conformance --explain` and `--dump` (docs/CONFORMANCE.md).
//
// explain_case runs one case on the backend, keeps its outputs, and recomputes the checked
// elements under each of the contract's usual deviations (deviations.h). A deviation that gives
// the backend's bits on every checked element "reproduces" them: that is almost certainly what
// the backend does. None reproducing means the cause is elsewhere (a wrong index, a race, ...).
// Only gemm and quantize_i8 cases can be explained (the other ops have no deviation modelled).
//
// dump_case writes a case's inputs and expected outputs as .npy files (NumPy's format; int8,
// float32 and int64 arrays) plus case.json (shape, parameters, which file holds what), so a case
// can be rerun and inspected on a device without this library.
#pragma once

#include <string>
#include <vector>

#include "conformance/conformance.h"
#include "conformance/deviations.h"

namespace twinbit::conformance {

struct DeviationTrial {
  Deviation deviation;
  bool reproduces = false;
  std::string first_miss;  // where it first gave other bits than the backend: "y[0][17]"
};

struct Explanation {
  std::string case_name;
  std::string checked;               // what was compared ("all 257 columns", ...)
  std::string not_explained;         // why no search was made ("" when one was): unsupported,
                                     // an error, equal bits, an op without deviations
  Mismatch backend;                  // the backend against the reference
  std::vector<DeviationTrial> trials;
  // The deviations that reproduce the backend's bits, "" when none does.
  std::string reproduced_by() const;
};

// `seed` and `reference_budget` as for run_suite.
Explanation explain_case(const Backend& backend, const Case& c, uint64_t seed,
                         double reference_budget);
std::string format_explanation(const Explanation& e);

// One array of a dump: NumPy dtype text ("<f4", "|i1", "<i8"), C-order shape, raw bytes.
struct DumpArray {
  std::string name, dtype, what;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Writes DIR/<array>.npy for every array of the case and DIR/case.json; DIR is created if absent
// (its parent must exist). Every file is written to a temporary and renamed into place.
Status dump_case(const Case& c, uint64_t seed, double reference_budget, const std::string& dir);

}  // namespace twinbit::conformance
