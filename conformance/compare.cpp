// Bit comparison and verdict bookkeeping.
#include <cstring>

#include "conformance/conformance.h"

namespace twinbit::conformance {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::equal: return "equal";
    case Verdict::differ: return "differ";
    case Verdict::unsupported: return "unsupported";
    case Verdict::xfail: return "xfail";
    case Verdict::xpass: return "xpass";
    case Verdict::error: return "error";
    case Verdict::crash: return "crash";
    case Verdict::timeout: return "timeout";
  }
  return "unknown";
}

namespace {
// Maps float bits onto a line where adjacent floats are adjacent integers: +0 -> 0, -0 -> -1,
// the smallest negative subnormal -> -2, ... NaNs land beyond the infinities.
int64_t ordered(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (u & 0x80000000u) return -static_cast<int64_t>(u & 0x7fffffffu) - 1;
  return static_cast<int64_t>(u);
}
}  // namespace

uint64_t ulp_distance(float a, float b) {
  const int64_t d = ordered(a) - ordered(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

void Mismatch::merge(const Mismatch& o) {
  if (o.differing > 0 && differing == 0) {
    first_m = o.first_m;
    first_n = o.first_n;
    first_output = o.first_output;
  }
  differing += o.differing;
  total += o.total;
  if (o.max_ulp > max_ulp) max_ulp = o.max_ulp;
}

Mismatch compare_bits(const float* got, int64_t ld_got, const float* want, int64_t ld_want,
                      int64_t rows, int64_t cols, const std::vector<int64_t>& cols_checked,
                      const std::string& output_name) {
  Mismatch mm;
  auto one = [&](int64_t r, int64_t c) {
    const float g = got[r * ld_got + c], w = want[r * ld_want + c];
    ++mm.total;
    if (std::memcmp(&g, &w, 4) == 0) return;
    if (mm.differing == 0) {
      mm.first_m = r;
      mm.first_n = c;
      mm.first_output = output_name;
    }
    ++mm.differing;
    const uint64_t u = ulp_distance(g, w);
    if (u > mm.max_ulp) mm.max_ulp = u;
  };
  for (int64_t r = 0; r < rows; ++r) {
    if (cols_checked.empty()) {
      for (int64_t c = 0; c < cols; ++c) one(r, c);
    } else {
      for (int64_t c : cols_checked) one(r, c);
    }
  }
  return mm;
}

bool CaseResult::failed() const {
  switch (verdict) {
    case Verdict::equal:
    case Verdict::xfail:
      return false;
    case Verdict::unsupported:
      return !fallback.ran || fallback.verdict != Verdict::equal;
    default:
      return true;
  }
}

bool Report::passed() const {
  for (const CaseResult& r : results) {
    if (r.failed()) return false;
  }
  return true;
}

}  // namespace twinbit::conformance
