// The host side of the source-mapping baseline (source_mapping.h): its inputs made from a strip
// set, so it multiplies the very weights twinbit is timed on, and its outputs held to the
// reference (core/reference.h) on a sample of rows and columns.
#pragma once

#include <cstdint>
#include <vector>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

#include "bench/cuda/source_mapping.h"

namespace twinbit::bench {

// The source engine's layout of a strip set's weights: wt (k, npad) int8 codes, K-major;
// bst (k / 32, npad) float scales (the fp16 scales converted exactly). Columns n .. npad hold
// code 0 and scale 0. Precondition: w.k a multiple of 32, npad >= w.n.
struct SourceWeights {
  int64_t npad = 0;
  std::vector<int8_t> wt;
  std::vector<float> bst;
};
SourceWeights source_weights(const tb_strips& w, int64_t npad);

// How far the source mapping's output is from the reference on the elements checked.
struct SourceCheck {
  int64_t checked = 0;    // elements compared
  int64_t bit_equal = 0;  // of those, equal to the reference's bits
  double worst = 0;       // max |y - ref| / sum_g |p[g] * ws[n][g]| (the terms' magnitude)
  bool exact = false;     // the source's nsplit is the contract's: every bit had to be equal
};

// Compares y (s.m, s.npad), the source mapping's output for activations x (s.m, w.k) on the
// weights source_weights(w, s.npad), with ref::gemm_f32_at on a sample of rows (all when
// s.m <= 8) and of columns (both ends, 1024-column block edges, evenly spread).
// Tolerance: the group dots p[g] are the reference's own (same fma chain); only the slicing of
// the groups differs, so where s.nsplit equals the contract's fold plan the bits must be equal,
// and elsewhere |y - ref| <= r (2^-24 sum_g |p[g] ws[n][g]| + 2^-150), r = 2 (2 ngroups + nsplit
// + nsplit_ref + 4): twice the first-order bound of two fma-chain-and-fold orders of the same
// terms (the 2^-150 for roundings of subnormal partial sums).
// An element outside it is INTERNAL naming the row, column, both values and the bound.
Result<SourceCheck> check_source_output(const tb_strips& w, const SourceMappingShape& s,
                                        const float* x, const float* y);

}  // namespace twinbit::bench
