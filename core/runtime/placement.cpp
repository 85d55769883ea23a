#include "core/runtime/placement.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace twinbit::runtime {
namespace {

constexpr double kFractionSumTolerance = 1e-6;

// A fraction as the grammar writes it: digits with at most one '.', nothing else (no sign, no
// exponent, no "inf"), so strtod's extras never sneak in.
bool parse_fraction(std::string_view text, double* out) {
  if (text.empty()) return false;
  int dots = 0;
  for (char c : text) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  if (dots > 1 || text == ".") return false;
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return errno == 0 && end == s.c_str() + s.size();
}

}  // namespace

Result<std::vector<TargetPart>> parse_target(std::string_view text) {
  const std::string quoted(text);
  if (text.empty()) return Error(TB_INVALID_ARGUMENT, "placement '': empty (expected SPEC or SPEC*FRACTION+SPEC*FRACTION...)");
  std::vector<std::string_view> pieces;
  for (size_t start = 0;;) {
    const size_t plus = text.find('+', start);
    pieces.push_back(text.substr(start, plus == std::string_view::npos ? plus : plus - start));
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  std::vector<TargetPart> parts;
  double sum = 0.0;
  for (std::string_view piece : pieces) {
    const size_t star = piece.find('*');
    if (pieces.size() > 1 && star == std::string_view::npos) {
      return Error(TB_INVALID_ARGUMENT, "placement '%s': part '%s' has no '*FRACTION' (every part of a split needs one)",
                   quoted.c_str(), std::string(piece).c_str());
    }
    TargetPart part;
    const std::string_view spec_text = piece.substr(0, star);
    auto spec = parse_backend_spec(spec_text);
    if (!spec.ok()) return Error(TB_INVALID_ARGUMENT, "placement '%s': %s", quoted.c_str(), spec.status().message().c_str());
    part.spec = spec.value();
    if (star != std::string_view::npos) {
      const std::string_view f = piece.substr(star + 1);
      if (!parse_fraction(f, &part.fraction) || !(part.fraction > 0.0) || part.fraction > 1.0) {
        return Error(TB_INVALID_ARGUMENT, "placement '%s': fraction '%s' is not a number in (0, 1]",
                     quoted.c_str(), std::string(f).c_str());
      }
    }
    sum += part.fraction;
    parts.push_back(std::move(part));
  }
  if (std::fabs(sum - 1.0) > kFractionSumTolerance) {
    return Error(TB_INVALID_ARGUMENT, "placement '%s': fractions sum to %.9g, not 1", quoted.c_str(), sum);
  }
  return parts;
}

std::vector<ColumnShare> column_shares(const Placement& placement, int64_t n) {
  std::vector<ColumnShare> out;
  const int64_t strips = (n + 31) / 32;
  double cumulative = 0.0;
  int64_t begin = 0;
  for (size_t i = 0; i < placement.parts.size(); ++i) {
    cumulative += placement.parts[i].fraction;
    int64_t end = 0;
    if (i + 1 == placement.parts.size()) {
      end = n;  // the last part takes the rest, ragged strip included
    } else {
      const int64_t strip_end = static_cast<int64_t>(std::llround(cumulative * static_cast<double>(strips)));
      end = std::min(n, std::max(begin, strip_end * 32));
    }
    if (end > begin) out.push_back(ColumnShare{i, begin, end - begin});
    begin = std::max(begin, end);
  }
  return out;
}

std::string placement_text(const Placement& placement, const std::vector<std::string>& labels) {
  if (!placement.is_split()) return labels.at(placement.parts.at(0).backend);
  std::string out;
  for (const PlacementPart& p : placement.parts) {
    if (!out.empty()) out += '+';
    out += labels.at(p.backend) + Format("*%g", p.fraction);
  }
  return out;
}

}  // namespace twinbit::runtime
