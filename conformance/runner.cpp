// run_suite(s): each case prepared once (inputs + reference), run on every backend under test, and -
// when one does not claim it - on the first backend of the fallback order that does.
#include <fnmatch.h>

#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conformance/prepared.h"
#include "core/registry.h"

namespace twinbit::conformance {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

const ExpectedFailure* find_expected(const std::vector<ExpectedFailure>& list,
                                     const std::string& backend, const std::string& name) {
  for (const ExpectedFailure& e : list) {
    if (e.backend == backend && fnmatch(e.pattern.c_str(), name.c_str(), 0) == 0) return &e;
  }
  return nullptr;
}

// The fallback backends, created on first use and kept for the whole run.
class Fallbacks {
 public:
  Fallbacks(std::vector<BackendEntry> order, const std::string& under_test) {
    for (const BackendEntry& e : order) {
      if (under_test != e.name) order_.push_back(e);
    }
  }
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const BackendEntry& e : order_) n.push_back(e.name);
    return n;
  }

  FallbackResult run(const detail::PreparedCase& p) {
    FallbackResult f;
    std::string tried;
    for (const BackendEntry& e : order_) {
      const Backend* b = get(e);
      tried += (tried.empty() ? "" : "; ") + std::string(e.name) + ": ";
      if (!b) {
        tried += "not available";
        continue;
      }
      detail::Attempt a = p.run(*b);
      if (a.status.code() == TB_UNIMPLEMENTED) {
        tried += "unsupported";
        continue;
      }
      f.ran = true;
      f.backend = e.name;
      if (!a.status.ok()) {
        f.verdict = Verdict::error;
        f.message = a.status.to_string();
      } else {
        f.mismatch = a.mismatch;
        f.verdict = a.mismatch.differing == 0 ? Verdict::equal : Verdict::differ;
      }
      return f;
    }
    f.message = "no backend of the fallback order takes it (" + (tried.empty() ? "none" : tried) + ")";
    return f;
  }

 private:
  const Backend* get(const BackendEntry& e) {
    auto it = live_.find(e.name);
    if (it == live_.end()) {
      tb_backend raw{};
      tb_error err{};
      std::unique_ptr<Backend> b;
      if (e.create(TB_BACKEND_ABI_VERSION, &raw, &err, nullptr) == TB_OK) {
        auto adopted = Backend::adopt(raw);
        if (adopted.ok()) b = std::make_unique<Backend>(std::move(adopted).value());
      }
      it = live_.emplace(e.name, std::move(b)).first;
    }
    return it->second.get();
  }

  std::vector<BackendEntry> order_;
  std::map<std::string, std::unique_ptr<Backend>> live_;
};

// One backend's part of a run: its report so far and its own fallback backends.
struct SuiteRun {
  Report rep;
  std::unique_ptr<Fallbacks> fallbacks;
};

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The verdict of one backend's attempt at a prepared case (with its fallback when unsupported).
CaseResult judge(const Case& c, const detail::PreparedCase& p, const Backend& backend,
                 const std::vector<ExpectedFailure>& expected, SuiteRun& run) {
  const double t0 = now_s();
  CaseResult r;
  r.c = c;
  r.name = c.name();
  r.checked = p.checked();
  r.sampled = p.sampled();
  const detail::Attempt a = p.run(backend);
  const ExpectedFailure* xf = find_expected(expected, run.rep.backend, r.name);
  if (a.status.code() == TB_UNIMPLEMENTED) {
    r.verdict = Verdict::unsupported;
    r.message = a.status.message();
    r.fallback = run.fallbacks->run(p);
  } else if (!a.status.ok() || a.mismatch.differing > 0) {
    r.verdict = a.status.ok() ? Verdict::differ : Verdict::error;
    r.mismatch = a.mismatch;
    r.message = a.status.ok() ? "" : a.status.to_string();
    if (xf) {
      r.verdict = Verdict::xfail;
      r.message = xf->reason + (r.message.empty() ? "" : " [" + r.message + "]");
    }
  } else {
    r.verdict = Verdict::equal;
    r.mismatch = a.mismatch;
    if (xf) {
      r.verdict = Verdict::xpass;
      r.message = Format("passes, but is listed as an expected failure ('%s': %s): remove the "
                         "entry", xf->pattern.c_str(), xf->reason.c_str());
    }
  }
  r.seconds = now_s() - t0;
  return r;
}

void count_totals(Report& rep) {
  Totals& t = rep.totals;
  for (const CaseResult& r : rep.results) {
    ++t.cases;
    switch (r.verdict) {
      case Verdict::equal: ++t.equal; break;
      case Verdict::differ: ++t.differ; break;
      case Verdict::unsupported: ++t.unsupported; break;
      case Verdict::xfail: ++t.xfail; break;
      case Verdict::xpass: ++t.xpass; break;
      case Verdict::error: ++t.error; break;
    }
    if (r.verdict == Verdict::unsupported && r.failed()) ++t.fallback_failed;
    if (r.sampled) ++t.sampled;
  }
}

}  // namespace

std::vector<Report> run_suites(const std::vector<const Backend*>& backends,
                               const std::vector<Case>& cases, const SuiteOptions& o) {
  const double t_start = now_s();
  std::vector<ExpectedFailure> expected = builtin_expected_failures();
  expected.insert(expected.end(), o.expected.begin(), o.expected.end());
  std::vector<BackendEntry> order = o.fallback_order;
  if (order.empty()) {
    for (const BackendEntry& e : builtin_backends()) order.push_back(e);
  }
  std::vector<SuiteRun> runs(backends.size());
  for (size_t b = 0; b < backends.size(); ++b) {
    Report& rep = runs[b].rep;
    rep.backend = backends[b]->name();
    rep.device = backends[b]->device();
    rep.features = backends[b]->features();
    rep.library_version = library_version();
    rep.seed = o.seed;
    rep.date = utc_date();
    runs[b].fallbacks = std::make_unique<Fallbacks>(order, rep.backend);
    rep.fallback_order = runs[b].fallbacks->names();
  }

  double last_progress = t_start;
  for (size_t i = 0; i < cases.size(); ++i) {
    // Inputs and reference once, for every backend: the reference dominates the large cases.
    std::unique_ptr<detail::PreparedCase> p = detail::prepare(cases[i], o.seed, o.reference_budget);
    for (size_t b = 0; b < backends.size(); ++b) {
      CaseResult r = judge(cases[i], *p, *backends[b], expected, runs[b]);
      if (o.progress && (now_s() - last_progress > 2.0 || i + 1 == cases.size() || r.failed())) {
        last_progress = now_s();
        const std::string who = backends.size() > 1 ? runs[b].rep.backend + " " + std::to_string(b + 1) + ": " : "";
        o.progress(Format("[%zu/%zu] %s%s: %s (%.2f s)", i + 1, cases.size(), who.c_str(),
                          r.name.c_str(), verdict_name(r.verdict), r.seconds));
      }
      runs[b].rep.results.push_back(std::move(r));
    }
  }

  std::vector<Report> reports;
  for (SuiteRun& run : runs) {
    count_totals(run.rep);
    run.rep.seconds = now_s() - t_start;
    reports.push_back(std::move(run.rep));
  }
  return reports;
}

Report run_suite(const Backend& backend, const std::vector<Case>& cases, const SuiteOptions& o) {
  return std::move(run_suites({&backend}, cases, o).front());
}

}  // namespace twinbit::conformance
