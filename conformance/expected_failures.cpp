// Expected failures: cases a backend is KNOWN to get wrong today, each with the reason.
//
// An entry here is a debt, not a waiver: the case still runs, is reported as "xfail" with the
// reason, and the day it passes it is reported as "xpass" (which fails the run) so the entry is
// removed. A backend that cannot do a case exactly must say UNIMPLEMENTED from supports() instead
// of being listed here.
#include <fstream>

#include "conformance/conformance.h"

namespace twinbit::conformance {

const std::vector<ExpectedFailure>& builtin_expected_failures() {
  // Built-in backends currently produce the reference's bits on every case they claim.
  static const std::vector<ExpectedFailure> kList = {};
  return kList;
}

Result<std::vector<ExpectedFailure>> read_expected_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(TB_UNAVAILABLE, "cannot open expected-failure list '%s'", path.c_str());
  std::vector<ExpectedFailure> out;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
    ExpectedFailure e;
    const size_t s1 = line.find_first_of(" \t");
    const size_t p1 = s1 == std::string::npos ? s1 : line.find_first_not_of(" \t", s1);
    const size_t s2 = p1 == std::string::npos ? p1 : line.find_first_of(" \t", p1);
    const size_t r = s2 == std::string::npos ? s2 : line.find_first_not_of(" \t", s2);
    if (r == std::string::npos) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: expected 'BACKEND PATTERN REASON...', found '%s' "
                   "(every expected failure needs a reason)", path.c_str(), lineno, line.c_str());
    }
    e.backend = line.substr(0, s1);
    e.pattern = line.substr(p1, s2 - p1);
    e.reason = line.substr(r);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace twinbit::conformance
