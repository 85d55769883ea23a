#include "bench/cuda/source_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/numerics.h"
#include "core/reference.h"
#include "core/strip_layout.h"

namespace twinbit::bench {

SourceWeights source_weights(const tb_strips& w, int64_t npad) {
  const StripLayout layout = StripLayout::of(w);
  const PrecisionTraits& traits = layout.traits();
  const int64_t ngroups = w.k / 32;
  SourceWeights out;
  out.npad = npad;
  out.wt.assign(static_cast<size_t>(w.k * npad), 0);
  out.bst.assign(static_cast<size_t>(ngroups * npad), 0.0f);
  const auto* codes = static_cast<const uint8_t*>(w.codes);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t g = 0; g < ngroups; ++g) {
      const uint8_t* run = codes + layout.code_offset(n, g);  // one column's 32 codes of group g
      for (int kk = 0; kk < 32; ++kk) {
        out.wt[static_cast<size_t>((g * 32 + kk) * npad + n)] =
            static_cast<int8_t>(traits.load_code(run, kk));
      }
      out.bst[static_cast<size_t>(g * npad + n)] = ref::weight_scale(w, n, g);
    }
  }
  return out;
}

namespace {

// The rows and columns compared: every row of a small batch, else the first four, the last and
// eight spread between; both ends of the columns, the edges of the first 1024-column blocks
// (where the decode grid's blocks meet) and 57 spread between.
std::set<int64_t> sample_rows(int64_t m) {
  std::set<int64_t> rows;
  for (int64_t r = 0; r < m; r += m <= 8 ? 1 : m / 8) rows.insert(r);
  for (int64_t r = 0; r < std::min<int64_t>(m, 4); ++r) rows.insert(r);
  rows.insert(m - 1);
  return rows;
}

std::set<int64_t> sample_columns(int64_t n) {
  std::set<int64_t> cols;
  for (int64_t c : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{4}, int64_t{1023}, int64_t{1024},
                    int64_t{2047}, int64_t{2048}, n - 2, n - 1}) {
    if (c >= 0 && c < n) cols.insert(c);
  }
  for (int64_t i = 0; i <= 56; ++i) cols.insert(i * (n - 1) / 56);
  return cols;
}

// sum_g |p[g] * ws[n][g]| for row x, column n, p[g] formed as the contract forms it.
double term_magnitude(const tb_strips& w, const float* x, int64_t n) {
  double sum = 0;
  for (int64_t g = 0; g < w.k / 32; ++g) {
    float p = 0.0f;
    for (int64_t kk = 0; kk < 32; ++kk) {
      p = std::fma(static_cast<float>(ref::weight_code(w, n, g * 32 + kk)), x[g * 32 + kk], p);
    }
    sum += std::fabs(static_cast<double>(p) * ref::weight_scale(w, n, g));
  }
  return sum;
}

}  // namespace

Result<SourceCheck> check_source_output(const tb_strips& w, const SourceMappingShape& s,
                                        const float* x, const float* y) {
  const int64_t ngroups = w.k / 32, nsplit_ref = fold_plan(w);
  SourceCheck out;
  out.exact = s.nsplit == nsplit_ref;
  // Roundings of the two orders together, each at most half an ulp: relative to the terms, or
  // absolute (2^-150 each) where a partial sum is subnormal.
  const double roundings = 2.0 * static_cast<double>(2 * ngroups + s.nsplit + nsplit_ref + 4);
  const double rel_bound = roundings * 0x1p-24, abs_bound = roundings * 0x1p-150;
  for (int64_t r : sample_rows(s.m)) {
    const float* xr = x + r * w.k;
    for (int64_t c : sample_columns(w.n)) {
      const float want = ref::gemm_f32_at(w, xr, c);
      const float got = y[r * s.npad + c];
      const double mag = term_magnitude(w, xr, c);
      const double err = std::fabs(static_cast<double>(got) - want);
      const bool same_bits = std::memcmp(&got, &want, sizeof got) == 0;
      ++out.checked;
      out.bit_equal += same_bits ? 1 : 0;
      if (mag > 0) out.worst = std::max(out.worst, err / mag);
      const double allowed = rel_bound * mag + abs_bound;
      const bool within = out.exact ? same_bits : err <= allowed;  // false for NaN
      if (!within) {
        return Error(TB_INTERNAL,
                     "source mapping (M %lld, N %lld, K %lld, nsplit %lld) row %lld column %lld: "
                     "%.9g, reference %.9g; allowed %s (terms' magnitude %.6g)",
                     static_cast<long long>(s.m), static_cast<long long>(w.n),
                     static_cast<long long>(w.k), static_cast<long long>(s.nsplit),
                     static_cast<long long>(r), static_cast<long long>(c), got, want,
                     out.exact ? "the same bits (its nsplit is the contract's)"
                               : Format("|error| <= %.3g", allowed).c_str(),
                     mag);
      }
    }
  }
  return out;
}

}  // namespace twinbit::bench
