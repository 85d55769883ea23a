#include "core/backend_spec.h"

#include <algorithm>

namespace twinbit {

const char kBackendSpecHelp[] =
    "A backend is named by a SPEC := NAME[:DEVICE]{,KEY=VALUE}, or by a plugin path (starting\n"
    "with '/' or '.', or containing '/'); '+' and '*' are reserved.\n"
    "  e.g. cpu   cpu,threads=8,isa=fma3_avx2   cuda   cuda:1   ./libmyplugin.so\n"
    "  (docs/BACKENDS.md lists each backend's keys; `twinbit devices` lists what runs here)\n";

namespace {

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }
bool is_value_char(char c) {
  return is_name_char(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '-';
}
bool all_of(std::string_view s, bool (*pred)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), pred);
}

Status bad(std::string_view text, const std::string& why) {
  return Error(TB_INVALID_ARGUMENT, "backend spec '%.*s': %s (grammar: NAME[:DEVICE]{,KEY=VALUE} "
               "or a plugin path)", static_cast<int>(text.size()), text.data(), why.c_str());
}

Result<int32_t> parse_device(std::string_view text, std::string_view d) {
  if (d.empty()) return bad(text, "the device index after ':' is empty");
  if (!std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad(text, "device '" + std::string(d) + "' is not a non-negative integer index");
  }
  if (d.size() > 1 && d[0] == '0') {
    return bad(text, "device '" + std::string(d) + "' has a leading zero");
  }
  if (d.size() > 9) return bad(text, "device '" + std::string(d) + "' is out of range");
  return static_cast<int32_t>(std::stol(std::string(d)));
}

Status parse_param(std::string_view text, std::string_view part, BackendSpec& out) {
  if (part.empty()) return bad(text, "a parameter between commas is empty");
  const size_t eq = part.find('=');
  if (eq == std::string_view::npos) {
    return bad(text, "parameter '" + std::string(part) + "' is not KEY=VALUE");
  }
  const std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
  if (!all_of(key, is_name_char)) {
    return bad(text, "parameter key '" + std::string(key) + "' is not [a-z0-9_]+");
  }
  if (!all_of(value, is_value_char)) {
    return bad(text, "value '" + std::string(value) + "' of key '" + std::string(key) +
                         "' is not [A-Za-z0-9_.-]+");
  }
  if (out.param(key)) return bad(text, "key '" + std::string(key) + "' is given twice");
  out.params.push_back({std::string(key), std::string(value)});
  return Status();
}

}  // namespace

const std::string* BackendSpec::param(std::string_view key) const {
  for (const BackendParam& p : params) {
    if (p.key == key) return &p.value;
  }
  return nullptr;
}

std::string BackendSpec::to_string() const {
  std::string out = is_plugin() ? plugin_path : name;
  if (is_plugin()) {
    std::string extra;
    if (device) extra = "device " + std::to_string(*device);
    for (const BackendParam& p : params) extra += (extra.empty() ? "" : ", ") + p.key + "=" + p.value;
    return extra.empty() ? out : out + " (" + extra + ")";
  }
  if (device) out += ":" + std::to_string(*device);
  for (const BackendParam& p : params) out += "," + p.key + "=" + p.value;
  return out;
}

Result<BackendSpec> parse_backend_spec(std::string_view text) {
  if (text.empty()) return bad(text, "it is empty");
  for (char c : text) {
    if (c == '+' || c == '*') {
      return bad(text, std::string("'") + c + "' is reserved (the runtime uses '+' to join split "
                 "parts and '*' for fractions)");
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0') {
      return bad(text, "it contains whitespace or a NUL");
    }
  }
  BackendSpec spec;
  if (text[0] == '/' || text[0] == '.' || text.find('/') != std::string_view::npos) {
    spec.plugin_path = std::string(text);
    return spec;
  }
  const size_t comma = text.find(',');
  const std::string_view head = text.substr(0, comma);
  const size_t colon = head.find(':');
  const std::string_view name = head.substr(0, colon);
  if (name.empty()) return bad(text, "the backend name is empty");
  if (!all_of(name, is_name_char)) {
    return bad(text, "name '" + std::string(name) + "' is not [a-z0-9_]+ (a plugin path starts "
               "with '/' or '.' or contains '/')");
  }
  spec.name = std::string(name);
  if (colon != std::string_view::npos) {
    auto device = parse_device(text, head.substr(colon + 1));
    if (!device.ok()) return device.status();
    spec.device = *device;
  }
  if (comma == std::string_view::npos) return spec;
  std::string_view rest = text.substr(comma + 1);
  while (true) {
    const size_t next = rest.find(',');
    TB_RETURN_IF_ERROR(parse_param(text, rest.substr(0, next), spec));
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  return spec;
}

}  // namespace twinbit
