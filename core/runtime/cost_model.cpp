#include "core/runtime/cost_model.h"

#include <algorithm>

#include "core/runtime/default_plan.h"
#include "core/strip_layout.h"

namespace twinbit::runtime {

double strip_bytes(tb_prec prec, int64_t n, int64_t k) {
  const StripLayout layout{prec, n, k};
  return static_cast<double>(layout.codes_bytes() + layout.scales_bytes());
}

std::optional<double> predict_us(const BackendProfile& backend, const GemmShape& s) {
  const GemmCost* cost = backend.find(s.mode, s.prec);
  if (cost == nullptr) return std::nullopt;
  const double stream_s = strip_bytes(s.prec, s.n, s.k) / cost->bytes_per_s;
  const double compute_s = gemm_flops(s.m, s.n, s.k) / cost->flops_per_s;
  return cost->fixed_us + 1e6 * std::max(stream_s, compute_s);
}

namespace {

std::string us_text(double us) { return us < 10.0 ? Format("%.2g us", us) : Format("%.0f us", us); }

struct Split {
  size_t first = 0, second = 0;
  int64_t first_strips = 0;  // strips of 32 columns on `first`; the rest on `second`
  double us = 0.0;
  double factor = 1.0;       // the pair's measured split factor, already in `us`
};

// The cut of a pair that balances its parts. The first part's predicted time grows with its
// strips and the second's shrinks (both are nondecreasing in their columns), so the longer of
// the two is smallest next to where they cross: a binary search finds the first cut at which the
// first part is the longer, and that cut or the one before it is the best. Cheap enough to run
// on every call (decide runs per call): log2(N / 32) steps.
Split best_cut(const BackendProfile& a, const BackendProfile& b, const GemmShape& s) {
  const int64_t strips = (s.n + 31) / 32;
  Split best;
  best.us = -1.0;
  if (strips < 2) return best;
  auto parts = [&](int64_t cut) {
    GemmShape first = s, second = s;
    first.n = cut * 32;
    second.n = s.n - first.n;
    return std::make_pair(*predict_us(a, first), *predict_us(b, second));
  };
  int64_t lo = 1, hi = strips - 1;  // the first cut in [lo, hi] where the first part is the longer
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const auto [first_us, second_us] = parts(mid);
    if (first_us >= second_us) hi = mid;
    else lo = mid + 1;
  }
  for (int64_t cut : {lo - 1, lo}) {
    if (cut < 1) continue;
    const auto [first_us, second_us] = parts(cut);
    const double us = std::max(first_us, second_us);
    if (best.us < 0.0 || us < best.us) {
      best.first_strips = cut;
      best.us = us;
    }
  }
  return best;
}

}  // namespace

std::optional<BalancedCut> balanced_cut(const BackendProfile& a, const BackendProfile& b, const GemmShape& shape) {
  if (!predict_us(a, shape) || !predict_us(b, shape)) return std::nullopt;
  const Split s = best_cut(a, b, shape);
  if (s.us < 0.0) return std::nullopt;
  return BalancedCut{s.first_strips, s.us};
}

CalibratedChoice choose_calibrated(const std::vector<Candidate>& candidates, const std::vector<std::string>& labels,
                                   const GemmShape& shape, size_t fallback, const Profile* profile) {
  CalibratedChoice c;
  std::vector<size_t> usable;
  std::string listed;
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::optional<double> us;
    if (candidates[i].supported && candidates[i].profile != nullptr) us = predict_us(*candidates[i].profile, shape);
    c.single_us.push_back(us);
    if (!us) continue;
    usable.push_back(i);
    listed += (listed.empty() ? "" : ", ") + labels[i] + " " + us_text(*us);
  }
  if (usable.empty()) {
    c.placement = Placement::single(fallback);
    c.why = Format("calibrated: no backend both supports %s %s and has a cost in the profile -> %s",
                   mode_name(shape.mode), precision_traits(shape.prec).name, labels[fallback].c_str());
    return c;
  }
  size_t best = usable.front();
  for (size_t i : usable) {
    if (*c.single_us[i] < *c.single_us[best]) best = i;
  }
  c.placement = Placement::single(best);
  c.predicted_us = *c.single_us[best];
  c.why = Format("calibrated: %s -> %s", listed.c_str(), labels[best].c_str());

  Split split;
  split.us = -1.0;
  for (size_t x = 0; x < usable.size(); ++x) {
    for (size_t y = x + 1; y < usable.size(); ++y) {
      Split s = best_cut(*candidates[usable[x]].profile, *candidates[usable[y]].profile, shape);
      if (s.us < 0.0) continue;  // one strip: nothing to cut
      s.first = usable[x];
      s.second = usable[y];
      s.factor = profile ? profile->split_factor(labels[s.first], labels[s.second], shape.mode, shape.prec) : 1.0;
      s.us *= s.factor;
      if (split.us < 0.0 || s.us < split.us) split = s;
    }
  }
  if (split.us >= 0.0 && split.us <= (1.0 - kSplitMargin) * c.predicted_us) {
    const int64_t strips = (shape.n + 31) / 32;
    // Fractions in whole strips: column_shares cuts at round(f * strips) strips, which gives
    // back exactly first_strips.
    const double f = static_cast<double>(split.first_strips) / static_cast<double>(strips);
    c.placement.parts = {PlacementPart{split.first, f}, PlacementPart{split.second, 1.0 - f}};
    c.predicted_us = split.us;
    c.why = Format("calibrated: %s; split %s %lld + %s %lld columns %s (split factor %.2f) -> split", listed.c_str(),
                   labels[split.first].c_str(), static_cast<long long>(split.first_strips * 32), labels[split.second].c_str(),
                   static_cast<long long>(shape.n - split.first_strips * 32), us_text(split.us).c_str(), split.factor);
  } else if (split.us >= 0.0 && split.factor != 1.0) {
    c.why += Format(" (best split %s, split factor %.2f: not %.0f%% faster)", us_text(split.us).c_str(), split.factor,
                    100.0 * kSplitMargin);
  }
  return c;
}

}  // namespace twinbit::runtime
