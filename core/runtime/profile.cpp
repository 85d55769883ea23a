#include "core/runtime/profile.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/precision.h"

#ifndef TWINBIT_VERSION
#error "TWINBIT_VERSION must be defined by the build (core/runtime/CMakeLists.txt)"
#endif

namespace twinbit::runtime {

using nlohmann::json;

const GemmCost* BackendProfile::find(tb_act_mode mode, tb_prec prec) const {
  for (const GemmCost& c : costs) {
    if (c.mode == mode && c.prec == prec) return &c;
  }
  return nullptr;
}

const BackendProfile* Profile::find(const std::string& spec) const {
  for (const BackendProfile& b : backends) {
    if (b.spec == spec) return &b;
  }
  return nullptr;
}

MachineInfo this_machine() {
  MachineInfo m;
  char host[256] = {};
  m.hostname = gethostname(host, sizeof(host) - 1) == 0 ? host : "unknown";
  m.cpu_model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const size_t start = line.find_first_not_of(" \t", colon + 1);
      if (start != std::string::npos) m.cpu_model = line.substr(start);
    }
    break;
  }
  m.cores = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  return m;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

const char* twinbit_version() { return TWINBIT_VERSION; }

const char* mode_name(tb_act_mode mode) { return mode == TB_ACT_I8 ? "i8" : "f32"; }

Result<tb_act_mode> mode_from_name(const std::string& name) {
  if (name == "f32") return TB_ACT_F32;
  if (name == "i8") return TB_ACT_I8;
  return Error(TB_INVALID_ARGUMENT, "'%s' is not an activation mode (f32 or i8)", name.c_str());
}

std::string profile_json(const Profile& p) {
  // Ordered: the fields appear as the format at the top of profile.h lists them.
  using ojson = nlohmann::ordered_json;
  ojson j;
  j["format"] = kProfileFormat;
  j["version"] = kProfileVersion;
  j["machine"] = {{"hostname", p.machine.hostname}, {"cpu_model", p.machine.cpu_model}, {"cores", p.machine.cores}};
  j["date"] = p.date;
  j["twinbit_version"] = p.twinbit_version;
  j["backends"] = ojson::array();
  for (const BackendProfile& b : p.backends) {
    ojson costs = ojson::array();
    for (const GemmCost& c : b.costs) {
      costs.push_back({{"mode", mode_name(c.mode)}, {"prec", precision_traits(c.prec).name}, {"fixed_us", c.fixed_us},
                       {"bytes_per_s", c.bytes_per_s}, {"flops_per_s", c.flops_per_s}});
    }
    j["backends"].push_back({{"spec", b.spec}, {"name", b.name}, {"device", b.device}, {"costs", costs}});
  }
  if (!p.splits.empty()) {
    j["splits"] = ojson::array();
    for (const SplitCost& c : p.splits) {
      j["splits"].push_back({{"first", c.first}, {"second", c.second}, {"mode", mode_name(c.mode)},
                             {"prec", precision_traits(c.prec).name}, {"factor", c.factor}});
    }
  }
  // Doubles are written with 17 significant digits by nlohmann, so a round trip is exact.
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

namespace {

// Reads the fields of one JSON object, each error naming the file and the field's full path.
class Fields {
 public:
  Fields(const json& object, std::string path, const std::string& source)
      : object_(object), path_(std::move(path)), source_(source) {}

  Status error(const std::string& field, const std::string& what) const {
    return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s' %s", source_.c_str(), name(field).c_str(), what.c_str());
  }
  std::string name(const std::string& field) const { return path_.empty() ? field : path_ + "." + field; }

  Result<const json*> get(const std::string& field, json::value_t type, const char* type_name) const {
    auto at = object_.find(field);
    if (at == object_.end()) return error(field, "is missing");
    const bool numeric = type == json::value_t::number_float;
    if (numeric ? !at->is_number() : at->type() != type) return error(field, Format("must be %s, not %s", type_name, at->dump().c_str()));
    return &*at;
  }
  Result<std::string> text(const std::string& field) const {
    auto v = get(field, json::value_t::string, "a string");
    if (!v.ok()) return v.status();
    return v.value()->get<std::string>();
  }
  // A finite number >= 0 (> 0 when `positive`).
  Result<double> number(const std::string& field, bool positive) const {
    auto v = get(field, json::value_t::number_float, "a number");
    if (!v.ok()) return v.status();
    const double d = v.value()->get<double>();
    if (!std::isfinite(d) || d < 0.0 || (positive && d == 0.0)) {
      return error(field, Format("must be a finite number %s 0, not %s", positive ? ">" : ">=", v.value()->dump().c_str()));
    }
    return d;
  }
  Result<const json*> array(const std::string& field) const { return get(field, json::value_t::array, "an array"); }
  Result<const json*> object(const std::string& field) const { return get(field, json::value_t::object, "an object"); }

 private:
  const json& object_;
  std::string path_;
  const std::string& source_;
};

#define TB_ASSIGN(lhs, expr)            \
  do {                                  \
    auto tb_value_ = (expr);            \
    if (!tb_value_.ok()) return tb_value_.status(); \
    lhs = std::move(tb_value_.value()); \
  } while (0)

// The "mode" and "prec" fields of a cost or a split.
Status parse_mode_prec(const Fields& f, tb_act_mode* mode, tb_prec* prec) {
  std::string mode_text, prec_text;
  TB_ASSIGN(mode_text, f.text("mode"));
  auto m = mode_from_name(mode_text);
  if (!m.ok()) return f.error("mode", m.status().message());
  *mode = m.value();
  TB_ASSIGN(prec_text, f.text("prec"));
  auto p = find_precision(prec_text);
  if (!p.ok()) return f.error("prec", p.status().message());
  *prec = p.value()->prec;
  return Status();
}

Result<GemmCost> parse_cost(const json& j, const std::string& path, const std::string& source) {
  if (!j.is_object()) return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s' must be an object", source.c_str(), path.c_str());
  Fields f(j, path, source);
  GemmCost c;
  TB_RETURN_IF_ERROR(parse_mode_prec(f, &c.mode, &c.prec));
  TB_ASSIGN(c.fixed_us, f.number("fixed_us", false));
  TB_ASSIGN(c.bytes_per_s, f.number("bytes_per_s", true));
  TB_ASSIGN(c.flops_per_s, f.number("flops_per_s", true));
  return c;
}

Result<BackendProfile> parse_backend(const json& j, const std::string& path, const std::string& source) {
  if (!j.is_object()) return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s' must be an object", source.c_str(), path.c_str());
  Fields f(j, path, source);
  BackendProfile b;
  TB_ASSIGN(b.spec, f.text("spec"));
  if (b.spec.empty()) return f.error("spec", "is empty");
  TB_ASSIGN(b.name, f.text("name"));
  TB_ASSIGN(b.device, f.text("device"));
  const json* costs = nullptr;
  TB_ASSIGN(costs, f.array("costs"));
  for (size_t i = 0; i < costs->size(); ++i) {
    const std::string at = Format("%s.costs[%zu]", path.c_str(), i);
    auto c = parse_cost((*costs)[i], at, source);
    if (!c.ok()) return c.status();
    if (b.find(c->mode, c->prec) != nullptr) {
      return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s': mode %s, prec %s is given twice", source.c_str(), at.c_str(),
                   mode_name(c->mode), precision_traits(c->prec).name);
    }
    b.costs.push_back(c.value());
  }
  return b;
}

Result<SplitCost> parse_split(const json& j, const std::string& path, const std::string& source, const Profile& p) {
  if (!j.is_object()) return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s' must be an object", source.c_str(), path.c_str());
  Fields f(j, path, source);
  SplitCost c;
  TB_ASSIGN(c.first, f.text("first"));
  TB_ASSIGN(c.second, f.text("second"));
  for (const char* field : {"first", "second"}) {
    const std::string& spec = std::string(field) == "first" ? c.first : c.second;
    if (p.find(spec) == nullptr) return f.error(field, Format("names backend '%s', which the profile does not list", spec.c_str()));
  }
  if (c.first == c.second) return f.error("second", Format("is the same backend as first ('%s')", c.first.c_str()));
  TB_RETURN_IF_ERROR(parse_mode_prec(f, &c.mode, &c.prec));
  TB_ASSIGN(c.factor, f.number("factor", true));
  return c;
}

}  // namespace

double Profile::split_factor(const std::string& a, const std::string& b, tb_act_mode mode, tb_prec prec) const {
  for (const SplitCost& c : splits) {
    const bool pair = (c.first == a && c.second == b) || (c.first == b && c.second == a);
    if (pair && c.mode == mode && c.prec == prec) return c.factor;
  }
  return 1.0;
}

Result<Profile> parse_profile(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Error(TB_INVALID_ARGUMENT, "profile %s is not valid JSON (byte %zu): %s", source.c_str(), e.byte, e.what());
  } catch (const json::exception& e) {  // e.g. a number too large for a double
    return Error(TB_INVALID_ARGUMENT, "profile %s is not valid JSON: %s", source.c_str(), e.what());
  }
  if (!j.is_object()) return Error(TB_INVALID_ARGUMENT, "profile %s: the top level must be a JSON object", source.c_str());
  Fields f(j, "", source);
  std::string format;
  TB_ASSIGN(format, f.text("format"));
  if (format != kProfileFormat) return f.error("format", Format("is '%s', not '%s'", format.c_str(), kProfileFormat));
  const json* version = nullptr;
  TB_ASSIGN(version, f.get("version", json::value_t::number_float, "an integer"));
  if (!version->is_number_integer() || version->get<int64_t>() != kProfileVersion) {
    return f.error("version", Format("is %s: this twinbit reads profile version %d only (run twinbit calibrate again)",
                                     version->dump().c_str(), kProfileVersion));
  }
  Profile p;
  p.source = source;
  const json* machine = nullptr;
  TB_ASSIGN(machine, f.object("machine"));
  Fields m(*machine, "machine", source);
  TB_ASSIGN(p.machine.hostname, m.text("hostname"));
  TB_ASSIGN(p.machine.cpu_model, m.text("cpu_model"));
  const json* cores = nullptr;
  TB_ASSIGN(cores, m.get("cores", json::value_t::number_float, "an integer"));
  if (!cores->is_number_integer() || cores->get<int64_t>() < 1) return m.error("cores", Format("must be an integer >= 1, not %s", cores->dump().c_str()));
  p.machine.cores = cores->get<int64_t>();
  TB_ASSIGN(p.date, f.text("date"));
  TB_ASSIGN(p.twinbit_version, f.text("twinbit_version"));
  const json* backends = nullptr;
  TB_ASSIGN(backends, f.array("backends"));
  for (size_t i = 0; i < backends->size(); ++i) {
    const std::string at = Format("backends[%zu]", i);
    auto b = parse_backend((*backends)[i], at, source);
    if (!b.ok()) return b.status();
    if (p.find(b->spec) != nullptr) {
      return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s.spec': backend '%s' is given twice", source.c_str(), at.c_str(), b->spec.c_str());
    }
    p.backends.push_back(std::move(b.value()));
  }
  if (j.contains("splits")) {  // optional: profiles written before splits were measured lack it
    const json* splits = nullptr;
    TB_ASSIGN(splits, f.array("splits"));
    for (size_t i = 0; i < splits->size(); ++i) {
      const std::string at = Format("splits[%zu]", i);
      auto c = parse_split((*splits)[i], at, source, p);
      if (!c.ok()) return c.status();
      for (const SplitCost& seen : p.splits) {
        const bool pair = (seen.first == c->first && seen.second == c->second) || (seen.first == c->second && seen.second == c->first);
        if (pair && seen.mode == c->mode && seen.prec == c->prec) {
          return Error(TB_INVALID_ARGUMENT, "profile %s: field '%s': the pair %s + %s in %s %s is given twice", source.c_str(),
                       at.c_str(), c->first.c_str(), c->second.c_str(), mode_name(c->mode), precision_traits(c->prec).name);
        }
      }
      p.splits.push_back(c.value());
    }
  }
  return p;
}

Result<Profile> read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(TB_INVALID_ARGUMENT, "profile %s cannot be opened: %s", path.c_str(), std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error(TB_INVALID_ARGUMENT, "profile %s cannot be read: %s", path.c_str(), std::strerror(errno));
  return parse_profile(text.str(), path);
}

Status write_profile(const Profile& profile, artifact::OutputFile& out) {
  const std::string text = profile_json(profile);
  TB_RETURN_IF_ERROR(out.write(text.data(), text.size()));
  return out.commit();
}

Status write_profile(const Profile& profile, const std::string& path) {
  const std::string text = profile_json(profile);
  return artifact::write_output(path, text.data(), text.size());
}

}  // namespace twinbit::runtime
