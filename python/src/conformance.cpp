// twinbit.conformance.run: the conformance suite on one backend, the report as `twinbit
// conformance --json` writes it (the Python side parses the JSON into a dict).
#include <fnmatch.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>

#include "conformance/conformance.h"
#include "core/registry.h"
#include "objects.h"

namespace twinbit::py {
namespace {

conformance::Sweep parse_sweep(const std::string& s) {
  if (s == "quick") return conformance::Sweep::quick;
  if (s == "full") return conformance::Sweep::full;
  if (s == "none") return conformance::Sweep::none;
  if (s == "exhaustive") return conformance::Sweep::exhaustive;
  throw nb::value_error(("sweep must be 'quick', 'full', 'none' or 'exhaustive', got '" + s + "'").c_str());
}

// The report as JSON text (conformance::format_json).
std::string run(const PyBackend& b, const std::string& sweep, uint64_t seed, int cases,
                const std::optional<std::string>& filter) {
  if (cases < 0) throw nb::value_error("cases (random cases) must be >= 0");
  conformance::CaseOptions co;
  co.seed = seed;
  co.random_cases = cases;
  co.sweep = parse_sweep(sweep);
  conformance::SuiteOptions so;
  so.seed = seed;
  if (co.sweep == conformance::Sweep::exhaustive) so.reference_budget = 0;  // as the CLI: every column
  nb::gil_scoped_release release;
  std::vector<conformance::Case> all = conformance::generate_cases(co), kept;
  for (const auto& c : all) {
    if (!filter || fnmatch(filter->c_str(), c.name().c_str(), 0) == 0) kept.push_back(c);
  }
  conformance::Report rep = conformance::run_suite(*b.backend, kept, so);
  rep.source = "python, " + b.spec;
  rep.sweep = sweep + (filter ? ", filter " + *filter : "");
  rep.random_cases = cases;
  return conformance::format_json(rep);
}
}  // namespace

void init_conformance(nb::module_& m) {
  nb::module_ c = m.def_submodule("_conformance", "The conformance suite (twinbit.conformance wraps it).");
  c.def("run_json", &run, nb::arg("backend"), nb::arg("sweep") = "quick", nb::arg("seed") = 1,
        nb::arg("cases") = 100, nb::arg("filter") = nb::none(),
        "Runs the suite on `backend`; the report as `twinbit conformance --json` writes it.");
}

}  // namespace twinbit::py
