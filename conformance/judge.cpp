// One backend's verdict on one prepared case: the run, the inputs' hashes, the repeat from two
// threads, the fallback, the expected-failure list, and the backend's text made safe.
#include "conformance/judge.h"

#include <fnmatch.h>

#include <chrono>
#include <ctime>
#include <exception>
#include <thread>

#include "conformance/guards/untrusted_text.h"
#include "core/error_buffer.h"

namespace twinbit::conformance::detail {

using guards::sanitize_untrusted;

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const ExpectedFailure* find_expected(const std::vector<ExpectedFailure>& list,
                                     const std::string& backend, const std::string& name) {
  for (const ExpectedFailure& e : list) {
    if (e.backend == backend && fnmatch(e.pattern.c_str(), name.c_str(), 0) == 0) return &e;
  }
  return nullptr;
}

std::vector<ExpectedFailure> all_expected(const SuiteOptions& o) {
  std::vector<ExpectedFailure> expected = builtin_expected_failures();
  expected.insert(expected.end(), o.expected.begin(), o.expected.end());
  return expected;
}

std::vector<BackendEntry> fallback_entries(const SuiteOptions& o) {
  std::vector<BackendEntry> order = o.fallback_order;
  if (order.empty()) {
    for (const BackendEntry& e : builtin_backends()) order.push_back(e);
  }
  return order;
}

Fallbacks::Fallbacks(std::vector<BackendEntry> order, const std::string& under_test) {
  for (const BackendEntry& e : order) {
    if (under_test != e.name) order_.push_back(e);
  }
}

std::vector<std::string> Fallbacks::names() const {
  std::vector<std::string> n;
  for (const BackendEntry& e : order_) n.push_back(e.name);
  return n;
}

FallbackResult Fallbacks::run(const PreparedCase& p) {
  FallbackResult f;
  std::string tried;
  for (const BackendEntry& e : order_) {
    const Backend* b = get(e);
    tried += (tried.empty() ? "" : "; ") + std::string(e.name) + ": ";
    if (!b) {
      tried += "not available";
      continue;
    }
    Attempt a = p.run(*b);
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

const Backend* Fallbacks::get(const BackendEntry& e) {
  auto it = live_.find(e.name);
  if (it == live_.end()) {
    tb_backend raw{};
    GuardedError err;
    std::unique_ptr<Backend> b;
    if (e.create(TB_BACKEND_ABI_VERSION, &raw, err.get(), nullptr) == TB_OK) {
      auto adopted = Backend::adopt(raw);
      if (adopted.ok()) b = std::make_unique<Backend>(std::move(adopted).value());
    }
    it = live_.emplace(e.name, std::move(b)).first;
  }
  return it->second.get();
}

namespace {

// A run that cannot throw: a guarded output that cannot be mapped is an error of the attempt.
Attempt run_once(const PreparedCase& p, const Backend& b) {
  try {
    return p.run(b);
  } catch (const std::exception& e) {
    return Attempt{Error(TB_RESOURCE_EXHAUSTED, "the suite could not allocate a guarded output: %s",
                         e.what()), {}};
  }
}

// INTERNAL naming the first input whose hash changed, or OK.
Status inputs_unchanged(const std::vector<InputHash>& before, const std::vector<InputHash>& after) {
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    if (before[i].hash != after[i].hash) {
      return Error(TB_INTERNAL, "changed its input %s (inputs are only read; hash %016llx before "
                   "the call, %016llx after)", before[i].name,
                   static_cast<unsigned long long>(before[i].hash),
                   static_cast<unsigned long long>(after[i].hash));
    }
  }
  return Status();
}

std::string describe(const Attempt& a) {
  if (!a.status.ok()) return a.status.to_string();
  const Mismatch& m = a.mismatch;
  if (m.differing == 0) return Format("the reference's bits (output hash %016llx)", (unsigned long long)a.output_hash);
  return Format("%lld/%lld differ, first at %s(m %lld, n %lld), max %llu ulp (output hash %016llx)",
                (long long)m.differing, (long long)m.total, m.first_output.c_str(),
                (long long)m.first_m, (long long)m.first_n, (unsigned long long)m.max_ulp,
                (unsigned long long)a.output_hash);
}

// The run alone, then the same case from two threads at once: all three must agree bit for bit
// (a race or an unsynchronised accumulation shows up here, not in one run). Returns the first
// attempt, its status replaced by an error when the inputs changed or the runs disagree.
Attempt run_repeated(const PreparedCase& p, const Backend& b, bool repeat) {
  const std::vector<InputHash> before = p.input_hashes();
  Attempt a = run_once(p, b);
  if (Status s = inputs_unchanged(before, p.input_hashes()); !s.ok()) return Attempt{s, {}};
  if (!a.status.ok() || !repeat) return a;
  Attempt again[2];
  std::thread other([&] { again[1] = run_once(p, b); });
  again[0] = run_once(p, b);
  other.join();
  if (Status s = inputs_unchanged(before, p.input_hashes()); !s.ok()) return Attempt{s, {}};
  for (const Attempt& x : again) {
    if (x.status.code() != a.status.code() || x.output_hash != a.output_hash) {
      a.status = Error(TB_INTERNAL, "nondeterministic: the same case gave other bits when run "
                       "again - run 1 (alone): %s; run 2 (two threads at once): %s; run 3 (the "
                       "other thread): %s", describe(a).c_str(), describe(again[0]).c_str(),
                       describe(again[1]).c_str());
      return a;
    }
  }
  return a;
}

}  // namespace

void apply_expected(CaseResult& r, const std::vector<ExpectedFailure>& expected,
                    const std::string& backend_name) {
  const ExpectedFailure* xf = find_expected(expected, backend_name, r.name);
  if (!xf) return;
  r.message = xf->reason + (r.message.empty() ? "" : " [" + r.message + "]");
  r.verdict = Verdict::xfail;
}

CaseResult judge(const Case& c, const PreparedCase& p, const Backend& backend,
                 const std::string& backend_name, const std::vector<ExpectedFailure>& expected,
                 Fallbacks& fallbacks, bool repeat) {
  const double t0 = now_s();
  CaseResult r;
  r.c = c;
  r.name = c.name();
  r.checked = p.checked();
  r.sampled = p.sampled();
  const Attempt a = run_repeated(p, backend, repeat);
  const ExpectedFailure* xf = find_expected(expected, backend_name, r.name);
  if (a.status.code() == TB_UNIMPLEMENTED) {
    r.verdict = Verdict::unsupported;
    r.message = a.status.message();
    r.fallback = fallbacks.run(p);
  } else if (!a.status.ok() || a.mismatch.differing > 0) {
    r.verdict = a.status.ok() ? Verdict::differ : Verdict::error;
    r.mismatch = a.mismatch;
    r.message = a.status.ok() ? "" : a.status.to_string();
    if (xf) apply_expected(r, expected, backend_name);
  } else {
    r.verdict = Verdict::equal;
    r.mismatch = a.mismatch;
    if (xf) {
      r.verdict = Verdict::xpass;
      r.message = Format("passes, but is listed as an expected failure ('%s': %s): remove the "
                         "entry", xf->pattern.c_str(), xf->reason.c_str());
    }
  }
  r.message = sanitize_untrusted(r.message);
  r.fallback.message = sanitize_untrusted(r.fallback.message);
  r.seconds = now_s() - t0;
  return r;
}

void count_totals(Report& rep) {
  Totals& t = rep.totals;
  t = Totals{};
  for (const CaseResult& r : rep.results) {
    ++t.cases;
    switch (r.verdict) {
      case Verdict::equal: ++t.equal; break;
      case Verdict::differ: ++t.differ; break;
      case Verdict::unsupported: ++t.unsupported; break;
      case Verdict::xfail: ++t.xfail; break;
      case Verdict::xpass: ++t.xpass; break;
      case Verdict::error: ++t.error; break;
      case Verdict::crash: ++t.crash; break;
      case Verdict::timeout: ++t.timeout; break;
    }
    if (r.verdict == Verdict::unsupported && r.failed()) ++t.fallback_failed;
    if (r.sampled) ++t.sampled;
  }
}

}  // namespace twinbit::conformance::detail
