// Hand-computed cases for every operation of the contract (docs/NUMERICS.md), run on the scalar
// reference. Each expected value is worked out in the comment beside it.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/reference.h"
#include "core/tb_expf.h"
#include "tests/test_support.h"

using namespace twinbit;
using twinbit::testing::bits;
using twinbit::testing::HandStrips;

namespace {
constexpr uint16_t kHalfOne = 0x3c00, kHalfHalf = 0x3800, kHalfTwo = 0x4000;
constexpr uint16_t kHalfMinSub = 0x0001;  // 2^-24
const float kNaN = std::numeric_limits<float>::quiet_NaN();

float gemm1(const HandStrips& w, const std::vector<float>& x) {
  float y = -1234.0f;
  ref::gemm_f32(w.view(), 1, x.data(), static_cast<int64_t>(x.size()), &y, 1);
  return y;
}
}  // namespace

TEST_SUITE("core") {

TEST_CASE("gemm_f32 N1 K1 q8: one weight, one scale") {
  HandStrips w(TB_PREC_Q8, 1, 1);
  w.set(0, 0, 3);
  w.set_scale(0, 0, kHalfHalf);
  CHECK(gemm1(w, {2.0f}) == 3.0f);  // p = fma(3, 2, +0) = 6; out = fma(6, 0.5, +0) = 3
}

TEST_CASE("gemm_f32 q4 decodes low nibble k<16 and high nibble k>=16, codes -8..7") {
  HandStrips w(TB_PREC_Q4, 1, 32);
  w.set(0, 0, -8);
  w.set(0, 16, 7);
  w.set(0, 15, 1);
  w.set_scale(0, 0, kHalfOne);
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[16] = 10.0f;
  x[15] = 100.0f;
  CHECK(gemm1(w, x) == 162.0f);  // -8 + 100 + 70
  CHECK(ref::weight_code(w.view(), 0, 0) == -8);
  CHECK(ref::weight_code(w.view(), 0, 16) == 7);
  CHECK(ref::weight_code(w.view(), 0, 31) == 0);  // nibble 8 = code 0
}

TEST_CASE("gemm_f32 signed zeros: an all -0 row gives +0, never -0") {
  HandStrips w(TB_PREC_Q8, 1, 32);
  for (int k = 0; k < 32; ++k) w.set(0, k, 5);
  w.set_scale(0, 0, kHalfOne);
  std::vector<float> x(32, -0.0f);
  // every step: fma(5, -0, +0) = -0 + +0 = +0; out = fma(+0, 1, +0) = +0
  CHECK(bits(gemm1(w, x)) == 0x00000000u);
}

TEST_CASE("gemm_f32 subnormal result is kept and rounded to nearest even (no FTZ)") {
  HandStrips w(TB_PREC_Q8, 1, 1);
  w.set(0, 0, 1);
  w.set_scale(0, 0, kHalfMinSub);  // 2^-24, a subnormal half
  const float flt_min = std::numeric_limits<float>::min();  // 2^-126
  // 1.5 * 2^-126 * 2^-24 = 0.75 * 2^-149 -> rounds up to the smallest subnormal 2^-149
  CHECK(gemm1(w, {1.5f * flt_min}) == std::numeric_limits<float>::denorm_min());
  // 2^-126 * 2^-24 = 2^-150: exactly half the smallest subnormal, a tie -> even -> +0
  CHECK(bits(gemm1(w, {flt_min})) == 0u);
  // a subnormal activation: 2^-140 * 3 = 3 * 2^-140 (exact), * 1 = itself
  w.set_scale(0, 0, kHalfOne);
  w.set(0, 0, 3);
  CHECK(gemm1(w, {std::ldexp(1.0f, -140)}) == std::ldexp(3.0f, -140));
}

TEST_CASE("gemm_f32 fused group dot: fma per step, not a rounded product") {
  HandStrips w(TB_PREC_Q8, 1, 32);
  w.set(0, 0, 1);
  w.set(0, 1, 1);
  w.set_scale(0, 0, kHalfOne);
  // step 0: p = fma(1, 1, 0) = 1; step 1: p = fma(1, 2^-24, 1) = 1 + 2^-24 -> tie -> 1
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = std::ldexp(1.0f, -24);
  CHECK(gemm1(w, x) == 1.0f);
  x[1] = std::ldexp(3.0f, -25);  // 1 + 1.5 * 2^-24: above the tie -> 1 + 2^-23
  CHECK(gemm1(w, x) == 1.0f + std::ldexp(1.0f, -23));
}

TEST_CASE("gemm_f32 slices: K256 has 2 slices of 4 groups folded as (+0 + a0) + a1") {
  REQUIRE(split_plan(1, 256) == 2);
  HandStrips w(TB_PREC_Q8, 1, 256);
  w.set(0, 0, 1);
  w.set(0, 128, 1);  // group 4: the first group of slice 1
  w.set_scale(0, 0, kHalfOne);
  w.set_scale(0, 4, 0x3C01);  // 1 + 2^-10
  std::vector<float> x(256, 0.0f);
  x[0] = 2.0f;
  x[128] = 1.0f + std::ldexp(1.0f, -23);
  // a0 = 2; a1 = round((1 + 2^-23)(1 + 2^-10)) = 1 + 2^-10 + 2^-23 (the 2^-33 term is lost);
  // out = (+0 + 2) + a1 = 3 + 2^-10 + 2^-23: a tie at ulp 2^-22, to even -> 3 + 2^-10.
  // One fma chain over both slices would round once: 3 + 2^-10 + 2^-22.
  CHECK(gemm1(w, x) == 3.0f + std::ldexp(1.0f, -10));
}

TEST_CASE("gemm_f32 K33 (K % 32 != 0): activations past K are never read") {
  HandStrips w(TB_PREC_Q8, 1, 33);
  for (int k = 0; k < 33; ++k) w.set(0, k, 1);
  w.set_scale(0, 0, kHalfOne);
  w.set_scale(0, 1, kHalfHalf);
  std::vector<float> x(64, kNaN);  // ldx = 64; x[33..63] are poison
  for (int k = 0; k < 33; ++k) x[k] = 1.0f;
  float y = 0;
  ref::gemm_f32(w.view(), 1, x.data(), 64, &y, 1);
  CHECK(y == 32.5f);  // group 0: 32 * 1 * 1; group 1: 1 * 0.5
}

TEST_CASE("gemm_f32 N33 (N % 32 != 0): only n < N is written") {
  HandStrips w(TB_PREC_Q8, 33, 32);
  for (int n = 0; n < 33; ++n) {
    w.set(n, 0, n % 7 - 3);
    w.set_scale(n, 0, kHalfOne);
  }
  std::vector<float> x(32, 0.0f);
  x[0] = 2.0f;
  std::vector<float> y(40, 99.0f);
  ref::gemm_f32(w.view(), 1, x.data(), 32, y.data(), 40);
  for (int n = 0; n < 33; ++n) CHECK(y[n] == 2.0f * static_cast<float>(n % 7 - 3));
  for (int n = 33; n < 40; ++n) CHECK(y[n] == 99.0f);
}

TEST_CASE("quantize_activations: amax/127 scale, ties to even, zero groups") {
  std::vector<float> x(64, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;    // rint -> 2 (roundf would give 3)
  x[2] = 3.5f;    // -> 4
  x[3] = -2.5f;   // -> -2
  x[4] = -127.0f;
  x[5] = -0.0f;
  // group 1 (x[32..63]) all zero -> d = 0, codes 0
  std::vector<int8_t> q(64, 77);
  std::vector<float> d(2, -1.0f);
  ref::quantize_activations(1, 64, x.data(), 64, q.data(), 64, d.data(), 2);
  CHECK(d[0] == 1.0f);
  CHECK(q[0] == 127);
  CHECK(q[1] == 2);
  CHECK(q[2] == 4);
  CHECK(q[3] == -2);
  CHECK(q[4] == -127);
  CHECK(q[5] == 0);
  CHECK(d[1] == 0.0f);
  for (int k = 32; k < 64; ++k) CHECK(q[k] == 0);
}

TEST_CASE("quantize_activations K40: padding is +0 and codes fill Kp") {
  std::vector<float> x(40, 1.0f);
  x[39] = -4.0f;
  std::vector<int8_t> q(64, 77);
  std::vector<float> d(2);
  ref::quantize_activations(1, 40, x.data(), 40, q.data(), 64, d.data(), 2);
  CHECK(d[1] == 4.0f / 127.0f);
  CHECK(q[39] == -127);
  CHECK(q[32] == static_cast<int8_t>(std::nearbyint(1.0f / (4.0f / 127.0f))));  // 31.75 -> 32
  CHECK(q[32] == 32);
  for (int k = 40; k < 64; ++k) CHECK(q[k] == 0);
}

TEST_CASE("gemm_i8: exact integer dot, then fma(p, ws*xd, acc)") {
  HandStrips w(TB_PREC_Q8, 1, 64);
  for (int k = 0; k < 64; ++k) w.set(0, k, 127);
  w.set_scale(0, 0, kHalfHalf);
  w.set_scale(0, 1, kHalfTwo);
  std::vector<int8_t> xq(64, -127);
  std::vector<float> xd = {0.25f, 3.0f};
  float y = 0;
  ref::gemm_i8(w.view(), 1, xq.data(), 64, xd.data(), 2, &y, 1);
  // isum = 32 * 127 * -127 = -516128 (the contract's bound, exact in float)
  // slices: a0 = -516128 * (0.5 * 0.25) = -64516; a1 = -516128 * 6 = -3096768
  CHECK(y == -64516.0f - 3096768.0f);
}

TEST_CASE("reference gemm is batch invariant: row m of M33 equals that row alone") {
  HandStrips w(TB_PREC_Q4, 45, 100);
  for (int n = 0; n < 45; ++n) {
    for (int k = 0; k < 100; ++k) w.set(n, k, (n * 31 + k * 7) % 16 - 8);
    for (int g = 0; g < 4; ++g) w.set_scale(n, g, static_cast<uint16_t>(0x2c00 + n * 13 + g));
  }
  const int M = 33;
  std::vector<float> x(M * 100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * 3.0f;
  std::vector<float> y(M * 45), y1(45);
  ref::gemm_f32(w.view(), M, x.data(), 100, y.data(), 45);
  for (int m = 0; m < M; ++m) {
    ref::gemm_f32(w.view(), 1, x.data() + m * 100, 100, y1.data(), 45);
    CHECK(std::memcmp(y1.data(), y.data() + m * 45, 45 * 4) == 0);
  }
}

TEST_CASE("gemv_f32 sums 32 lanes then a halving tree, not sequentially") {
  std::vector<float> wv(64, 0.0f), x(64, 1.0f);
  wv[0] = 1.0f;
  wv[1] = std::ldexp(1.0f, -24);
  wv[33] = std::ldexp(1.0f, -24);
  tb_matrix_f32 w{1, 64, wv.data()};
  float y = 0;
  ref::gemv_f32(w, x.data(), &y);
  // lane 1 = 2^-24 + 2^-24 = 2^-23; tree: s0 + s1 = 1 + 2^-23. (A sequential sum gives 1.)
  CHECK(y == 1.0f + std::ldexp(1.0f, -23));
}

TEST_CASE("gdn_delta vh1 kh1 kd1 vd1 by hand") {
  float S = 2.0f, q = 2.0f, k = 1.0f, v = 5.0f, g = 0.0f, beta = 0.5f, o = 0;
  tb_gdn_args a{1, 1, 1, 1, &S, &q, &k, &v, &g, &beta, &o};
  ref::gdn_delta(a);
  // alpha = exp(0) = 1; t = 2; kv = 2; tmp = (5 - 2) * 0.5 = 1.5; t = fma(1, 1.5, 2) = 3.5
  CHECK(S == 3.5f);
  CHECK(o == 7.0f);  // fma(3.5, 2, +0)
}

TEST_CASE("gdn_delta vh4 kh2: value head vi uses key head vi / 2") {
  std::vector<float> S(4, 0.0f), q = {1.0f, 10.0f}, k = {1.0f, 1.0f}, v = {1, 2, 3, 4},
                     g(4, 0.0f), beta(4, 1.0f), o(4);
  tb_gdn_args a{4, 2, 1, 1, S.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), o.data()};
  ref::gdn_delta(a);
  // S = 0 -> kv = 0, tmp = v, S = v, o = v * q[head]
  CHECK(o == std::vector<float>{1.0f, 2.0f, 30.0f, 40.0f});
}

TEST_CASE("tb_expf special values and exact points") {
  CHECK(tb_expf(0.0f) == 1.0f);
  CHECK(tb_expf(-0.0f) == 1.0f);
  CHECK(std::isnan(tb_expf(kNaN)));
  CHECK(tb_expf(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(bits(tb_expf(-std::numeric_limits<float>::infinity())) == 0u);
  CHECK(tb_expf(89.0f) == std::numeric_limits<float>::infinity());
  CHECK(tb_expf(88.72283935546875f) == std::numeric_limits<float>::infinity());
  CHECK(std::isfinite(tb_expf(88.72283172607422f)));
  CHECK(bits(tb_expf(-104.0f)) == 0u);
  CHECK(tb_expf(-103.9f) == std::numeric_limits<float>::denorm_min());  // e^-103.9 ~ 0.54 * 2^-149
  CHECK(tb_expf(-87.5f) < std::numeric_limits<float>::min());            // subnormal, kept
  CHECK(tb_expf(-87.5f) > 0.0f);
  CHECK(tb_expf(1.0f) == 2.71828174591064453125f);  // float(e), correctly rounded
}

}  // TEST_SUITE
