// The conformance suite's inputs reach the corners the contract names: q8 weight codes over all
// of int8 (-128 included), and I8 activation groups whose scale is subnormal, with codes that the
// quantiser saturates at +-127. The suite itself (test_conformance.cpp) then runs every backend
// on them; here only the inputs are checked.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "conformance/inputs.h"
#include "core/numerics.h"
#include "core/reference.h"

using namespace twinbit;
using namespace twinbit::conformance;

TEST_SUITE("conformance") {

TEST_CASE("random_strips q8 N40 K100 seed 5: every int8 code -128..127 occurs, padding code 0") {
  Rng rng(5);
  const OwnedStrips s = random_strips(rng, TB_PREC_Q8, 40, 100);
  const tb_strips v = s.view();
  std::vector<int> seen(256, 0);
  int64_t padding_nonzero = 0;
  for (int64_t n = 0; n < v.np; ++n) {
    for (int64_t k = 0; k < v.kp; ++k) {
      const int c = ref::weight_code(v, n, k);
      if (n < v.n && k < v.k) {
        ++seen[c + 128];
      } else {
        padding_nonzero += c != 0;
      }
    }
  }
  int64_t missing = 0;
  for (int c : seen) missing += c == 0;
  CHECK(missing == 0);
  CHECK(padding_nonzero == 0);
}

TEST_CASE("tiny_activation_groups M64 K1000 ldx1003 seed 11: subnormal-d rows and groups, saturated codes, codes in -127..127") {
  const int64_t m = 64, k = 1000, ldx = 1003, kp = pad32(k), ng = kp / 32;
  Rng rng(11);
  std::vector<float> x = random_floats(rng, m * ldx);
  const std::vector<float> before = x;
  tiny_activation_groups(rng, x, m, k, ldx);
  for (int64_t r = 0; r < m; ++r) {  // the slack past k is never written
    for (int64_t c = k; c < ldx; ++c) REQUIRE(std::memcmp(&x[r * ldx + c], &before[r * ldx + c], 4) == 0);
  }
  std::vector<int8_t> q(static_cast<size_t>(m * kp));
  std::vector<float> d(static_cast<size_t>(m * ng));
  ref::quantize_activations(m, k, x.data(), ldx, q.data(), kp, d.data(), ng);
  int64_t tiny_groups = 0, tiny_rows = 0, zero_d = 0, saturated = 0, out_of_range = 0;
  for (int64_t r = 0; r < m; ++r) {
    int64_t tiny_in_row = 0;
    for (int64_t g = 0; g < ng; ++g) {
      const float dg = d[r * ng + g];
      if (dg >= 0x1p-125f) continue;  // subnormal d, or d at the smallest normals
      ++tiny_in_row;
      zero_d += dg == 0.0f;
      for (int64_t kk = 0; kk < 32 && g * 32 + kk < k; ++kk) {
        const float xv = x[r * ldx + g * 32 + kk];
        // a quotient past 127.5: rint gives 128 or more, the code is clamped
        saturated += dg != 0.0f && std::fabs(xv / dg) > 127.5f;
      }
    }
    tiny_groups += tiny_in_row;
    tiny_rows += tiny_in_row == ng;
  }
  for (int8_t c : q) out_of_range += c < -127;
  CHECK(tiny_rows >= 4);
  CHECK(tiny_groups >= tiny_rows * ng + 20);  // and single groups in other rows
  CHECK(zero_d >= 1);
  CHECK(saturated >= 20);
  CHECK(out_of_range == 0);
}

}  // TEST_SUITE
