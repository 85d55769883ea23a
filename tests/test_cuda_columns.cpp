// Column ranges on the CUDA backend (docs/NUMERICS.md "Column ranges"): a projection cut into
// random ranges at multiples of 32 (the last one ending ragged at N) and computed range by range
// gives, concatenated, exactly the bits of the whole; and the whole equals the reference. q8 and
// q4, modes F32 and I8, decode and prefill rows. Runs only where a CUDA device is present (ctest
// entry "gpu"; SKIPPED elsewhere).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/op_checks.h"
#include "core/strip_layout.h"
#include "tests/test_support.h"
#include "tests/test_cuda_support.h"

namespace twinbit::cuda_test {
namespace {

using Range = testing::ColumnRange;

// y (m, w.n) of one view on the backend (bound for this call only).
std::vector<float> run(const Backend& cuda, const tb_strips& w, tb_act_mode mode, int64_t m,
                       Activations& a, Status* status) {
  std::vector<float> y(static_cast<size_t>(m * w.n), std::nanf("0x7ab"));  // poison
  tb_weights_view v{};
  v.kind = TB_WEIGHTS_STRIPS;
  v.strips = w;
  auto bound = cuda.bind(v);
  if (!bound.ok()) {
    *status = bound.status();
    return y;
  }
  *status = cuda.gemm(*bound, gemm_args(mode, m, w, a, y.data()));
  return y;
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("gpu gemm column ranges concatenate to the whole projection's bits, q8 q4, f32 i8") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  std::mt19937_64 rng(909);
  struct Shape {
    int64_t n, k;
  };
  // 40007 x 2048: the whole folds 13 slices, a range of at most 16 Ki columns alone would fold 16;
  // 151936 x 2048 is lm_head (4 slices whole, 7 on half its columns).
  const Shape shapes[] = {{40007, 2048}, {151936, 2048}, {1000, 6144}, {257, 96}, {4100, 2048}};
  int64_t cases = 0, failed = 0;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (const Shape& sh : shapes) {
      HostStrips h = random_strips(prec, sh.n, sh.k, rng());
      const std::vector<Range> ranges = testing::random_column_ranges(rng, sh.n);
      for (int64_t m : {1, 8, 33}) {
        Activations a = make_activations(m, sh.k, rng());
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
          Status s;
          const std::vector<float> whole = run(*cuda, h.view, mode, m, a, &s);
          REQUIRE_MESSAGE(s.ok(), s.to_string());
          if (sh.n * sh.k <= (int64_t{1} << 24)) {  // the reference is slow on the wide shapes
            const std::vector<float> want = reference(mode, m, h.view, a);
            CHECK(bit_diff(want.data(), whole.data(), m * sh.n).first == 0);
          }
          std::vector<float> cat(whole.size(), std::nanf("0x7ac"));
          for (const Range& r : ranges) {
            Result<tb_strips> part = StripLayout::columns(h.view, r.begin, r.count);
            REQUIRE_MESSAGE(part.ok(), part.status().to_string());
            const std::vector<float> y = run(*cuda, *part, mode, m, a, &s);
            REQUIRE_MESSAGE(s.ok(), s.to_string());
            for (int64_t row = 0; row < m; ++row) {
              std::copy(y.begin() + row * r.count, y.begin() + (row + 1) * r.count,
                        cat.begin() + row * sh.n + r.begin);
            }
          }
          const auto [diffs, first] = bit_diff(whole.data(), cat.data(), m * sh.n);
          ++cases;
          if (diffs != 0) {
            ++failed;
            FAIL_CHECK(std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                       << " M=" << m << " N=" << sh.n << " K=" << sh.k << ": " << ranges.size()
                       << " ranges, " << diffs << " columns differ, first at " << first);
          }
        }
      }
    }
  }
  const int64_t passed = cases - failed;
  MESSAGE(passed << "/" << cases << " cut projections memcmp-equal to the whole");
  CHECK(failed == 0);
}

}  // TEST_SUITE

}  // namespace twinbit::cuda_test
