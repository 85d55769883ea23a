// run_suite(s), in process: each case prepared once (inputs + reference), judged on every backend
// under test (judge.h). The isolated runner (isolation/parent.cpp) judges in worker processes.
#include <memory>
#include <string>
#include <vector>

#include "conformance/guards/untrusted_text.h"
#include "conformance/judge.h"
#include "conformance/prepared.h"

namespace twinbit::conformance {

using detail::now_s;

void fill_identity(Report& rep, const std::string& name, const std::string& device,
                   const std::string& features, uint64_t seed) {
  rep.backend = guards::sanitize_untrusted(name, 200);
  rep.device = guards::sanitize_untrusted(device);
  rep.features = guards::sanitize_untrusted(features);
  rep.library_version = library_version();
  rep.seed = seed;
  rep.date = detail::utc_date();
}

std::vector<Report> run_suites(const std::vector<const Backend*>& backends,
                               const std::vector<Case>& cases, const SuiteOptions& o) {
  const double t_start = now_s();
  const std::vector<ExpectedFailure> expected = detail::all_expected(o);
  const std::vector<BackendEntry> order = detail::fallback_entries(o);
  std::vector<Report> reports(backends.size());
  std::vector<std::unique_ptr<detail::Fallbacks>> fallbacks;
  for (size_t b = 0; b < backends.size(); ++b) {
    fill_identity(reports[b], backends[b]->name(), backends[b]->device(), backends[b]->features(), o.seed);
    fallbacks.push_back(std::make_unique<detail::Fallbacks>(order, backends[b]->name()));
    reports[b].fallback_order = fallbacks[b]->names();
  }

  double last_progress = t_start;
  for (size_t i = 0; i < cases.size(); ++i) {
    // Inputs and reference once, for every backend: the reference dominates the large cases.
    std::unique_ptr<detail::PreparedCase> p = detail::prepare(cases[i], o.seed, o.reference_budget);
    for (size_t b = 0; b < backends.size(); ++b) {
      CaseResult r = detail::judge(cases[i], *p, *backends[b], backends[b]->name(), expected, *fallbacks[b],
                                   o.repeat);
      if (o.on_case) o.on_case(i, cases.size(), r);
      if (o.progress && (now_s() - last_progress > 2.0 || i + 1 == cases.size() || r.failed())) {
        last_progress = now_s();
        const std::string who = backends.size() > 1 ? reports[b].backend + " " + std::to_string(b + 1) + ": " : "";
        o.progress(Format("[%zu/%zu] %s%s: %s (%.2f s)", i + 1, cases.size(), who.c_str(),
                          r.name.c_str(), verdict_name(r.verdict), r.seconds));
      }
      reports[b].results.push_back(std::move(r));
    }
  }

  for (Report& rep : reports) {
    detail::count_totals(rep);
    rep.seconds = now_s() - t_start;
  }
  return reports;
}

Report run_suite(const Backend& backend, const std::vector<Case>& cases, const SuiteOptions& o) {
  return std::move(run_suites({&backend}, cases, o).front());
}

}  // namespace twinbit::conformance
