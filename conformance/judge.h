// Internal to the suite: the verdict of one backend on one prepared case, shared by the
// in-process runner (runner.cpp) and the isolated worker (isolation/worker.cpp).
//
// What judge() checks, beyond the bits of one run (docs/CONFORMANCE.md, "Verdicts"):
//   - inputs: every input of the case (activations, codes, scales, ...) is hashed before and
//     after each run; a change is `error` naming the input;
//   - the repeat (unless turned off): a run that succeeded is run again from two threads at once (each on its own
//     binding and outputs); every run must give the same bits, else `error` ("nondeterministic")
//     quoting each run;
//   - supports() vs the operation: UNIMPLEMENTED after supports() said OK is `error`
//     (PreparedCase::run does that via after_claim);
//   - text: every message that came from the backend is sanitised (guards/untrusted_text.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conformance/conformance.h"
#include "conformance/prepared.h"

namespace twinbit::conformance::detail {

double now_s();
std::string utc_date();

const ExpectedFailure* find_expected(const std::vector<ExpectedFailure>& list,
                                     const std::string& backend, const std::string& name);
// The built-in list plus the options' ones.
std::vector<ExpectedFailure> all_expected(const SuiteOptions& o);
// The options' fallback order, or the built-in registry order when it is empty.
std::vector<BackendEntry> fallback_entries(const SuiteOptions& o);

// The fallback backends, created on first use and kept for the whole run.
class Fallbacks {
 public:
  Fallbacks(std::vector<BackendEntry> order, const std::string& under_test);
  std::vector<std::string> names() const;
  FallbackResult run(const PreparedCase& p);

 private:
  const Backend* get(const BackendEntry& e);
  std::vector<BackendEntry> order_;
  std::map<std::string, std::unique_ptr<Backend>> live_;
};

// The verdict of `backend` (named `backend_name` in the expected-failure list) on `p`, with its
// fallback when unsupported; `repeat`: SuiteOptions::repeat.
CaseResult judge(const Case& c, const PreparedCase& p, const Backend& backend,
                 const std::string& backend_name, const std::vector<ExpectedFailure>& expected,
                 Fallbacks& fallbacks, bool repeat);

// A failing verdict (error, crash, timeout) turned into xfail when the case is listed.
void apply_expected(CaseResult& r, const std::vector<ExpectedFailure>& expected,
                    const std::string& backend_name);

void count_totals(Report& rep);

}  // namespace twinbit::conformance::detail
