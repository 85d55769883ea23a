// The worker protocol's messages (isolation.h): a case as one line of integers, a result as JSON.
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "conformance/guards/untrusted_text.h"
#include "conformance/isolation/isolation.h"

namespace twinbit::conformance::isolation {

std::string case_line(size_t index, const Case& c) {
  return Format("case %zu %d %d %d %lld %lld %lld %lld %lld %lld %lld %d %d\n", index,
                static_cast<int>(c.kind), static_cast<int>(c.prec), static_cast<int>(c.mode),
                (long long)c.m, (long long)c.n, (long long)c.k, (long long)c.vh, (long long)c.kh,
                (long long)c.kd, (long long)c.vd, c.random ? 1 : 0, static_cast<int>(c.inputs));
}

bool parse_case_line(const std::string& line, size_t& index, Case& c) {
  std::istringstream in(line);
  std::string word;
  int kind = 0, prec = 0, mode = 0, random = 0, inputs = 0;
  if (!(in >> word >> index >> kind >> prec >> mode >> c.m >> c.n >> c.k >> c.vh >> c.kh >> c.kd >>
        c.vd >> random >> inputs) || word != "case") {
    return false;
  }
  if (kind < 0 || kind > static_cast<int>(CaseKind::quantize_i8) || prec < 0 || prec > 1 ||
      mode < 0 || mode > 1 || inputs < 0 || inputs > static_cast<int>(InputProfile::subnormal)) {
    return false;
  }
  c.inputs = static_cast<InputProfile>(inputs);
  c.kind = static_cast<CaseKind>(kind);
  c.prec = static_cast<tb_prec>(prec);
  c.mode = static_cast<tb_act_mode>(mode);
  c.random = random != 0;
  return true;
}

namespace {

nlohmann::json mismatch_to(const Mismatch& m) {
  return {{"differing", m.differing}, {"total", m.total}, {"first_m", m.first_m},
          {"first_n", m.first_n}, {"first_output", m.first_output}, {"max_ulp", m.max_ulp}};
}

void mismatch_from(const nlohmann::json& j, Mismatch& m) {
  m.differing = j.at("differing").get<int64_t>();
  m.total = j.at("total").get<int64_t>();
  m.first_m = j.at("first_m").get<int64_t>();
  m.first_n = j.at("first_n").get<int64_t>();
  m.first_output = guards::sanitize_untrusted(j.at("first_output").get<std::string>(), 40);
  m.max_ulp = j.at("max_ulp").get<uint64_t>();
}

bool verdict_from(const std::string& name, Verdict& v) {
  for (Verdict x : {Verdict::equal, Verdict::differ, Verdict::unsupported, Verdict::xfail,
                    Verdict::xpass, Verdict::error, Verdict::crash, Verdict::timeout}) {
    if (name == verdict_name(x)) {
      v = x;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string result_json(const CaseResult& r) {
  nlohmann::json j = {
      {"verdict", verdict_name(r.verdict)}, {"mismatch", mismatch_to(r.mismatch)},
      {"message", r.message}, {"checked", r.checked}, {"sampled", r.sampled},
      {"seconds", r.seconds},
      {"fallback", {{"ran", r.fallback.ran}, {"backend", r.fallback.backend},
                    {"verdict", verdict_name(r.fallback.verdict)},
                    {"mismatch", mismatch_to(r.fallback.mismatch)},
                    {"message", r.fallback.message}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool parse_result_json(const std::string& text, CaseResult& r) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!verdict_from(j.at("verdict").get<std::string>(), r.verdict)) return false;
    mismatch_from(j.at("mismatch"), r.mismatch);
    r.message = guards::sanitize_untrusted(j.at("message").get<std::string>());
    r.checked = guards::sanitize_untrusted(j.at("checked").get<std::string>(), 200);
    r.sampled = j.at("sampled").get<bool>();
    r.seconds = j.at("seconds").get<double>();
    const nlohmann::json& f = j.at("fallback");
    r.fallback.ran = f.at("ran").get<bool>();
    r.fallback.backend = guards::sanitize_untrusted(f.at("backend").get<std::string>(), 200);
    if (!verdict_from(f.at("verdict").get<std::string>(), r.fallback.verdict)) return false;
    mismatch_from(f.at("mismatch"), r.fallback.mismatch);
    r.fallback.message = guards::sanitize_untrusted(f.at("message").get<std::string>());
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace twinbit::conformance::isolation
