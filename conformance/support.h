// What a backend claims: `twinbit conformance --support` (docs/CONFORMANCE.md "Support listing").
//
// supports() is asked - nothing is computed - for every op x precision x activation mode on a
// grid of probe shapes chosen at the edges backends refuse (one group, K % 32 != 0, the target
// model's projections, the vocabulary's N, K past 8192, a large batch). The listing shows, per
// op x precision x mode, which probes are claimed and the backend's reason for each refusal.
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"

namespace twinbit::conformance {

struct SupportProbe {
  std::string op, prec, mode;  // prec and mode "" where the op has none
  std::string shape;           // "M1 N33 K100", "VH32 KH16 KD128 VD128", ...
  std::string why;             // the shape's point, e.g. "K % 32 != 0"
  bool claimed = false;
  std::string refusal;         // the backend's reason when not claimed
};

std::vector<SupportProbe> probe_support(const Backend& backend);
std::string format_support_text(const Backend& backend, const std::vector<SupportProbe>& probes);
std::string format_support_json(const Backend& backend, const std::vector<SupportProbe>& probes);

}  // namespace twinbit::conformance
