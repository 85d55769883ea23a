// The cost model of the calibrated plan: the predicted time of a gemm on a backend from its
// profile (core/runtime/profile.h), and the calibrated choice of a call - the single backend or
// the two-backend column split with the lowest predicted time.
//
// PREDICTED TIME of a gemm of M rows on N columns x K in (mode, prec):
//     t = fixed_us + max(weight_bytes / bytes_per_s, 2*M*N*K / flops_per_s)
// A call either streams its weights (small M: every code is read once and used M times) or
// computes (large M), and a backend overlaps the two, so the slower of them bounds the call - the
// roofline. The activations and outputs (M*K + M*N floats) are left out: for the projections the
// plan places (K, N >= 1024, M <= a few hundred) they are a few percent of the weights.
//
// THE CHOICE of a call (entry, M, mode) among the backends that support() it: the lowest
// predicted single-backend time, and for each pair of those backends the column split that
// balances the two parts (the parts run concurrently, so a split takes the longer part's time).
// Cuts are at whole strips of 32 columns, as core/runtime/placement.h cuts. A split is chosen
// only when it beats the best single backend by kSplitMargin, so measurement noise does not buy
// a split its second thread and the extra binding. Ties keep the earlier backend (list order).
// The parts share the host - memory bandwidth, and the cores a GPU's host thread needs - so a
// split's balanced prediction is multiplied by the pair's measured split factor
// (Profile::split_factor: calibrate runs a split of each pair concurrently and divides its time
// by this prediction); a profile without one predicts the parts as independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <twinbit/backend.h>
#include "core/runtime/placement.h"
#include "core/runtime/profile.h"

namespace twinbit::runtime {

// A split must predict at most (1 - kSplitMargin) of the best single backend's time.
inline constexpr double kSplitMargin = 0.10;

struct GemmShape {
  int64_t m = 1, n = 0, k = 0;
  tb_prec prec = TB_PREC_Q8;
  tb_act_mode mode = TB_ACT_F32;
};

// Bytes of the strips of n columns x k (codes and binary16 scales, padded to whole 32 x 32 tiles
// as the canonical layout stores them: docs/FORMAT.md).
double strip_bytes(tb_prec prec, int64_t n, int64_t k);

// The model's time in microseconds, or nullopt when the profile has no cost for (mode, prec).
std::optional<double> predict_us(const BackendProfile& backend, const GemmShape& shape);

// One candidate backend of a call: its profile (null: not predicted) and whether its supports()
// accepted the whole call.
struct Candidate {
  const BackendProfile* profile = nullptr;
  bool supported = false;
};

struct CalibratedChoice {
  Placement placement;
  double predicted_us = 0.0;                       // of the placement
  std::vector<std::optional<double>> single_us;    // per candidate; nullopt: unsupported or not measured
  std::string why;                                 // "calibrated: cpu 41 us, cuda 12 us -> cuda"
};

// The cut of a pair that balances its parts' predictions: strips of 32 columns on `a` (the rest
// on `b`) and the longer part's predicted time, before any split factor. nullopt when the shape
// has a single strip or either backend has no cost for (mode, prec).
struct BalancedCut {
  int64_t first_strips = 0;
  double us = 0.0;
};
std::optional<BalancedCut> balanced_cut(const BackendProfile& a, const BackendProfile& b, const GemmShape& shape);

// The choice among `candidates` (indexed as the runtime's backends; `labels` name them, as the
// profile's specs do). When no candidate is both supported and predicted, the placement is
// `fallback` (the CPU backend) and `why` says so. `profile` gives the pairs' split factors (null:
// factor 1).
CalibratedChoice choose_calibrated(const std::vector<Candidate>& candidates, const std::vector<std::string>& labels,
                                   const GemmShape& shape, size_t fallback, const Profile* profile = nullptr);

}  // namespace twinbit::runtime
