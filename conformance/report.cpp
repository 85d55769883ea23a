// The three report formats (docs/CONFORMANCE.md): text (to hand in), JSON (one object), JUnit.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "conformance/conformance.h"
#include "conformance/guards/untrusted_text.h"
#include "core/op_checks.h"

#ifndef TWINBIT_VERSION
#define TWINBIT_VERSION "unknown"
#endif

namespace twinbit::conformance {

std::string library_version() {
  return Format("twinbit %s (backend ABI %u)", TWINBIT_VERSION, TB_BACKEND_ABI_VERSION);
}

namespace {

using guards::sanitize_untrusted;

const char* op_of(CaseKind k) {
  switch (k) {
    case CaseKind::gemm: return "gemm";
    case CaseKind::batch_invariance: return "batch_invariance";
    case CaseKind::gemv_f32: return "gemv_f32";
    case CaseKind::gemv_f32_pair: return "gemv_f32_pair";
    case CaseKind::gdn_delta: return "gdn_delta";
    case CaseKind::quantize_i8: return "quantize_i8";
  }
  return "unknown";
}

std::string mismatch_text(const Mismatch& m) {
  if (m.differing == 0) return Format("0/%lld differ", (long long)m.total);
  return Format("%lld/%lld differ, first at %s(m %lld, n %lld), max %llu ulp", (long long)m.differing,
                (long long)m.total, m.first_output.c_str(), (long long)m.first_m,
                (long long)m.first_n, static_cast<unsigned long long>(m.max_ulp));
}

std::string fallback_text(const FallbackResult& f) {
  if (!f.ran) return "fallback FAILED: " + sanitize_untrusted(f.message);
  std::string s = "fallback " + f.backend + ": " + verdict_name(f.verdict);
  if (f.verdict == Verdict::differ) s += " (" + mismatch_text(f.mismatch) + ")";
  if (f.verdict == Verdict::error) s += " (" + sanitize_untrusted(f.message) + ")";
  return s;
}

// One line per non-equal case: VERDICT name: details. Whatever came from the backend is
// sanitised again here (it already was when the result was made; sanitising is idempotent), so no
// report line can be forged whichever way a result was built.
std::string case_line(const CaseResult& r) {
  std::string tag = verdict_name(r.verdict);
  for (char& ch : tag) ch = static_cast<char>(toupper(ch));
  std::string s = Format("%-12s %s: ", tag.c_str(), r.name.c_str());
  switch (r.verdict) {
    case Verdict::differ:
      s += mismatch_text(r.mismatch) + " [" + r.checked + "]";
      break;
    case Verdict::unsupported:
      s += sanitize_untrusted(r.message) + "; " + fallback_text(r.fallback);
      break;
    case Verdict::xfail:
      s += (r.mismatch.differing ? mismatch_text(r.mismatch) + "; " : "") + "expected: " + sanitize_untrusted(r.message);
      break;
    default:
      s += sanitize_untrusted(r.message);
  }
  return s;
}

}  // namespace

std::string format_text(const Report& r) {
  std::string s = "twinbit conformance report\n";
  s += Format("  backend    %s (%s)\n", sanitize_untrusted(r.backend).c_str(),
              sanitize_untrusted(r.source).c_str());
  s += Format("  device     %s\n", sanitize_untrusted(r.device).c_str());
  s += Format("  features   %s\n", r.features.empty() ? "(none declared)"
                                                      : sanitize_untrusted(r.features).c_str());
  s += Format("  library    %s\n", r.library_version.c_str());
  s += Format("  date       %s\n", r.date.c_str());
  s += Format("  seed       %llu (sweep %s, %d random cases, generator %d)\n",
              static_cast<unsigned long long>(r.seed), r.sweep.c_str(), r.random_cases, r.generator);
  std::string order;
  for (const std::string& n : r.fallback_order) order += (order.empty() ? "" : ", ") + n;
  s += Format("  fallback   %s\n", order.empty() ? "(none)" : order.c_str());
  if (has_feature_tag(r.features, "reference")) {
    s += "  note       this backend declares the tag \"reference\": its kernels are the scalar\n"
         "             reference itself, so equality here checks the plumbing, not new kernels\n";
  }
  if (r.totals.sampled > 0) {
    s += Format("  note       %lld large cases were checked on a sample of columns (the scalar\n"
                "             reference is slow): always the first and last 33, plus evenly spaced\n",
                (long long)r.totals.sampled);
  }
  s += "\n";
  int64_t shown = 0;
  for (const CaseResult& c : r.results) {
    if (c.verdict == Verdict::equal) continue;
    s += case_line(c) + "\n";
    ++shown;
  }
  if (shown == 0) s += "(every case equal)\n";
  const Totals& t = r.totals;
  s += Format("\ntotals: %lld cases: %lld equal, %lld differ, %lld unsupported (%lld without an "
              "exact fallback), %lld xfail, %lld xpass, %lld error%s; %.1f s\n",
              (long long)t.cases, (long long)t.equal, (long long)t.differ, (long long)t.unsupported,
              (long long)t.fallback_failed, (long long)t.xfail, (long long)t.xpass,
              (long long)t.error,
              t.crash + t.timeout > 0 ? Format(", %lld crash, %lld timeout", (long long)t.crash,
                                               (long long)t.timeout).c_str() : "",
              r.seconds);
  // A pass over cases the backend declined says little: say how many it ran itself.
  s += Format("result: %s (%lld of %lld cases ran on the backend)\n", r.passed() ? "PASS" : "FAIL",
              (long long)(t.cases - t.unsupported), (long long)t.cases);
  return s;
}

namespace {
nlohmann::json mismatch_json(const Mismatch& m) {
  nlohmann::json j = {{"differing", m.differing}, {"total", m.total}, {"max_ulp", m.max_ulp}};
  if (m.differing > 0) {
    j["first"] = {{"output", m.first_output}, {"m", m.first_m}, {"n", m.first_n}};
  } else {
    j["first"] = nullptr;
  }
  return j;
}
}  // namespace

std::string format_json(const Report& r) {
  nlohmann::json j;
  j["report"] = "twinbit-conformance";
  j["format_version"] = 1;
  j["backend"] = {{"name", r.backend}, {"source", r.source}, {"device", r.device},
                  {"features", split_feature_tags(r.features)}};
  j["library"] = r.library_version;
  j["date"] = r.date;
  j["seed"] = r.seed;
  j["sweep"] = r.sweep;
  j["random_cases"] = r.random_cases;
  j["generator"] = r.generator;
  j["fallback_order"] = r.fallback_order;
  j["seconds"] = r.seconds;
  const Totals& t = r.totals;
  j["totals"] = {{"cases", t.cases}, {"equal", t.equal}, {"differ", t.differ},
                 {"unsupported", t.unsupported}, {"xfail", t.xfail}, {"xpass", t.xpass},
                 {"error", t.error}, {"crash", t.crash}, {"timeout", t.timeout},
                 {"fallback_failed", t.fallback_failed},
                 {"sampled", t.sampled}, {"ran_on_backend", t.cases - t.unsupported}};
  j["passed"] = r.passed();
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& c : r.results) {
    nlohmann::json e;
    e["name"] = c.name;
    e["op"] = op_of(c.c.kind);
    if (c.c.kind == CaseKind::gemm || c.c.kind == CaseKind::batch_invariance) {
      e["prec"] = prec_name(c.c.prec);
      e["mode"] = act_mode_name(c.c.mode);
      e["m"] = c.c.m;
      e["n"] = c.c.n;
      e["k"] = c.c.k;
    } else if (c.c.kind == CaseKind::quantize_i8) {
      e["m"] = c.c.m;
      e["k"] = c.c.k;
    } else if (c.c.kind == CaseKind::gdn_delta) {
      e["vh"] = c.c.vh;
      e["kh"] = c.c.kh;
      e["kd"] = c.c.kd;
      e["vd"] = c.c.vd;
    } else {
      e["rows"] = c.c.n;
      e["cols"] = c.c.k;
    }
    e["random"] = c.c.random;
    e["inputs"] = c.c.inputs == InputProfile::subnormal ? "subnormal" : "standard";
    e["verdict"] = verdict_name(c.verdict);
    e["checked"] = c.checked;
    e["sampled"] = c.sampled;
    e["result"] = mismatch_json(c.mismatch);
    e["message"] = c.message;
    if (c.verdict == Verdict::unsupported) {
      e["fallback"] = {{"ran", c.fallback.ran}, {"backend", c.fallback.backend},
                       {"verdict", c.fallback.ran ? verdict_name(c.fallback.verdict) : "none"},
                       {"result", mismatch_json(c.fallback.mismatch)},
                       {"message", c.fallback.message}};
    }
    e["seconds"] = c.seconds;
    cases.push_back(std::move(e));
  }
  j["cases"] = std::move(cases);
  // Names, devices and messages come from the backend (a plugin's bytes): text that is not UTF-8
  // becomes U+FFFD instead of an exception.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {
// Text for an XML attribute value: the five markup characters escaped; tab, newline and carriage
// return as character references (an attribute would otherwise fold them into spaces); bytes
// that are not UTF-8 and characters XML 1.0 forbids (other control characters, U+FFFE, U+FFFF)
// become U+FFFD, so a backend's bytes can never make the report unreadable.
std::string xml_escape(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size();) {
    uint32_t cp = 0;
    const size_t len = guards::utf8_sequence(in, i, cp);
    if (len == 0 || (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xfffe ||
        cp == 0xffff) {
      out += "\xef\xbf\xbd";  // U+FFFD
      i += len == 0 ? 1 : len;
      continue;
    }
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default: out.append(in, i, len);
    }
    i += len;
  }
  return out;
}
}  // namespace

std::string format_junit(const Report& r) {
  const Totals& t = r.totals;
  int64_t failures = 0, errors = 0, skipped = 0;
  for (const CaseResult& c : r.results) {
    if (c.verdict == Verdict::error || c.verdict == Verdict::crash || c.verdict == Verdict::timeout) {
      ++errors;
    } else if (c.failed()) {
      ++failures;
    } else if (c.verdict == Verdict::unsupported || c.verdict == Verdict::xfail) {
      ++skipped;
    }
  }
  const std::string suite = "twinbit-conformance." + r.backend;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += Format("<testsuites name=\"twinbit-conformance\" tests=\"%lld\" failures=\"%lld\" "
              "errors=\"%lld\" skipped=\"%lld\" time=\"%.3f\">\n", (long long)t.cases,
              (long long)failures, (long long)errors, (long long)skipped, r.seconds);
  s += Format("  <testsuite name=\"%s\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" "
              "skipped=\"%lld\" time=\"%.3f\" timestamp=\"%s\">\n", xml_escape(suite).c_str(),
              (long long)t.cases, (long long)failures, (long long)errors, (long long)skipped,
              r.seconds, xml_escape(r.date).c_str());
  s += "    <properties>\n";
  auto prop = [&](const char* name, const std::string& value) {
    s += Format("      <property name=\"%s\" value=\"%s\"/>\n", name, xml_escape(value).c_str());
  };
  prop("backend", r.backend);
  prop("source", r.source);
  prop("device", r.device);
  prop("features", r.features);
  prop("library", r.library_version);
  prop("seed", std::to_string(r.seed));
  prop("sweep", r.sweep);
  prop("random_cases", std::to_string(r.random_cases));
  prop("generator", std::to_string(r.generator));
  prop("ran_on_backend", std::to_string(t.cases - t.unsupported));
  s += "    </properties>\n";
  for (const CaseResult& c : r.results) {
    s += Format("    <testcase classname=\"%s.%s\" name=\"%s\" time=\"%.3f\"", xml_escape(suite).c_str(),
                op_of(c.c.kind), xml_escape(c.name).c_str(), c.seconds);
    const std::string detail = xml_escape(case_line(c));
    if (c.verdict == Verdict::equal) {
      s += "/>\n";
    } else if (c.verdict == Verdict::error || c.verdict == Verdict::crash ||
               c.verdict == Verdict::timeout) {
      s += Format(">\n      <error type=\"%s\" message=\"%s\"/>\n    </testcase>\n",
                  verdict_name(c.verdict), detail.c_str());
    } else if (c.failed()) {
      s += Format(">\n      <failure message=\"%s\"/>\n    </testcase>\n", detail.c_str());
    } else {
      s += Format(">\n      <skipped message=\"%s\"/>\n    </testcase>\n", detail.c_str());
    }
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

}  // namespace twinbit::conformance
