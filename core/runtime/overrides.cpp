#include "core/runtime/overrides.h"

#include <fnmatch.h>

#include <fstream>
#include <sstream>

namespace twinbit::runtime {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool entry_matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

Result<OverrideRule> parse_override_rule(std::string_view line, const std::string& origin) {
  const std::string_view text = trim(line);
  const std::string quoted(text);
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return Error(TB_INVALID_ARGUMENT, "%s: '%s' is not PATTERN=TARGET (no '=')", origin.c_str(), quoted.c_str());
  }
  OverrideRule rule;
  rule.pattern = std::string(trim(text.substr(0, eq)));
  rule.text = quoted;
  rule.origin = origin;
  if (rule.pattern.empty()) {
    return Error(TB_INVALID_ARGUMENT, "%s: '%s' has an empty pattern", origin.c_str(), quoted.c_str());
  }
  // A spec's parameters also use '=', so the rule splits at the first '=' and the target is the
  // rest; a pattern never contains '='.
  auto target = parse_target(trim(text.substr(eq + 1)));
  if (!target.ok()) {
    return Error(TB_INVALID_ARGUMENT, "%s: '%s': %s", origin.c_str(), quoted.c_str(),
                 target.status().message().c_str());
  }
  rule.target = std::move(target.value());
  return rule;
}

Result<std::vector<OverrideRule>> parse_overrides(std::string_view text, const std::string& source) {
  std::vector<OverrideRule> rules;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    auto rule = parse_override_rule(t, Format("%s line %d", source.c_str(), number));
    if (!rule.ok()) return rule.status();
    rules.push_back(std::move(rule.value()));
  }
  return rules;
}

Result<std::vector<OverrideRule>> read_overrides_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(TB_UNAVAILABLE, "overrides file '%s' cannot be read", path.c_str());
  std::stringstream all;
  all << in.rdbuf();
  if (in.bad()) return Error(TB_UNAVAILABLE, "overrides file '%s': read error", path.c_str());
  return parse_overrides(all.str(), path);
}

}  // namespace twinbit::runtime
