// Overrides: rules that place entries by name, in the spirit of llama.cpp's --override-tensor.
//
//   one rule per line:  PATTERN=TARGET
// PATTERN is a glob over entry names ('*', '?', '[...]'), matched as `twinbit check --entry`
// matches (fnmatch without flags), e.g. "lm_head.*" is every precision of lm_head. TARGET is a
// placement (core/runtime/placement.h). Blank lines and lines starting with '#' (after leading
// spaces) are ignored; spaces around PATTERN and TARGET are trimmed. The first rule that matches
// an entry places it.
//
// Parsing here checks the text only; the Runtime checks the rest when it opens (a backend not
// among its backends, a pattern matching no entry of the artifact). Every error quotes the line
// and names where it came from ("overrides.txt line 3", "--override 2").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/runtime/placement.h"
#include <twinbit/status.hpp>

namespace twinbit::runtime {

struct OverrideRule {
  std::string pattern;
  std::vector<TargetPart> target;
  std::string text;    // the line as written (trimmed)
  std::string origin;  // "FILE line N" or "--override N": where the rule was written
};

// Rules from text holding one rule per line; `source` names the text in messages and origins
// ("overrides.txt" gives "overrides.txt line 3").
Result<std::vector<OverrideRule>> parse_overrides(std::string_view text, const std::string& source);

// One rule given on the command line: the same syntax, no comments; `origin` as above.
Result<OverrideRule> parse_override_rule(std::string_view line, const std::string& origin);

// The rules of a file (UNAVAILABLE naming it when it cannot be read).
Result<std::vector<OverrideRule>> read_overrides_file(const std::string& path);

// Whether `pattern` matches the entry name: the matcher of `twinbit check --entry`.
bool entry_matches(const std::string& pattern, const std::string& name);

}  // namespace twinbit::runtime
