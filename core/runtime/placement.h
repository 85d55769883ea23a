// Where one projection runs: one backend, or its columns cut across several (a column split).
//
// A TARGET names it in text:
//   TARGET := SPEC | SPEC "*" FRACTION { "+" SPEC "*" FRACTION }
// SPEC is a backend spec (core/backend_spec.h, which reserves "+" and "*" for this grammar);
// FRACTION is a decimal number > 0, and the fractions of a split sum to 1 within 1e-6, e.g.
// "cuda" or "cpu,isa=sse2*0.25+cpu*0.75". Parsing is exact: anything else is INVALID_ARGUMENT
// quoting the text.
//
// Cuts: part i ends at round(N * (f_0 + ... + f_i) / 32) * 32 columns, so every part starts at
// a multiple of 32 (StripLayout::columns) and the ragged last strip goes to the last part. A part
// whose share rounds to no column runs nothing. The bits of a split are those of the whole
// (docs/NUMERICS.md "Column ranges").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend_spec.h"
#include <twinbit/status.hpp>

namespace twinbit::runtime {

// One part of a parsed TARGET, before its spec is matched with a runtime's backends.
struct TargetPart {
  BackendSpec spec;
  double fraction = 1.0;
};

Result<std::vector<TargetPart>> parse_target(std::string_view text);

// A placement: parts naming backends by their index in the runtime's list.
struct PlacementPart {
  size_t backend = 0;
  double fraction = 1.0;
};

struct Placement {
  std::vector<PlacementPart> parts;  // one part: the whole projection on that backend

  bool is_split() const { return parts.size() > 1; }
  static Placement single(size_t backend) { return Placement{{PlacementPart{backend, 1.0}}}; }
};

// Columns [begin, begin + count) of a projection, run by parts[part].
struct ColumnShare {
  size_t part = 0;
  int64_t begin = 0, count = 0;
};

// The shares of a projection of n columns, in column order; parts that get no column are left
// out, so the shares are never empty and cover [0, n) exactly.
std::vector<ColumnShare> column_shares(const Placement& placement, int64_t n);

// "cpu" or "cpu,isa=sse2*0.25+cpu*0.75", with each backend written as `labels` names it.
std::string placement_text(const Placement& placement, const std::vector<std::string>& labels);

}  // namespace twinbit::runtime
