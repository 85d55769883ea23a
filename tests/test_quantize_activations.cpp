// The I8 activation quantiser's saturation contract (NUMERICS.md "gemm, activation mode I8"):
// code = clamp(rint(x / d), -127, 127), d = amax / 127. It bites only where d is subnormal and
// amax / d exceeds 127.5 (amax from 128 to 16065 units of 2^-149). The reference is checked
// against an independent computation - integers where d is subnormal, float64 elsewhere - and the
// CPU quantiser of every runnable instruction-set tag against the reference, byte for byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "core/numerics.h"
#include "core/reference.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {
namespace {

constexpr double kUnit = 0x1p-149;  // the smallest subnormal float

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float units(int64_t a) { return static_cast<float>(static_cast<double>(a) * kUnit); }  // exact

// n / den rounded to the nearest integer, ties to even (n >= 0, den > 0).
int64_t div_rne(int64_t n, int64_t den) {
  const int64_t q = n / den, r2 = 2 * (n % den);
  return (r2 > den || (r2 == den && (q & 1))) ? q + 1 : q;
}

// The maxima the sweeps cover: every multiple of 2^-149 up to 2^14 of them (all of the range
// where rint(amax / d) exceeds 127 lies below 16066), then every power of two from there up to
// 2^-100 (d turns normal at amax = 127 * 2^-126, about 2^-119) with its two neighbours, and that
// turning point with its neighbours.
std::vector<float> sweep_maxima() {
  std::vector<float> out;
  for (int64_t a = 1; a <= (int64_t{1} << 14); ++a) out.push_back(units(a));
  for (int e = -135; e <= -100; ++e) {
    const float p = std::ldexp(1.0f, e);
    out.push_back(std::nextafter(p, 0.0f));
    out.push_back(p);
    out.push_back(std::nextafter(p, 1.0f));
  }
  const float turn = 127.0f * 0x1p-126f;  // exact: 127 has 7 bits
  out.push_back(std::nextafter(turn, 0.0f));
  out.push_back(turn);
  out.push_back(std::nextafter(turn, 1.0f));
  return out;
}

// One group of 32 values whose largest magnitude is `amax`: both signs of amax, its lower
// neighbour, exact ties x / d = j + 1/2 just below amax where d is an even number of units, and
// random magnitudes below amax, shuffled.
void fill_group(float amax, std::mt19937_64& rng, float* v) {
  int i = 0;
  const bool neg = rng() % 2;
  v[i++] = neg ? -amax : amax;
  v[i++] = neg ? amax : -amax;
  v[i++] = std::nextafter(amax, 0.0f);
  const double a = static_cast<double>(amax) / kUnit;
  if (a < 127.0 * 0x1p23) {  // d subnormal: D units, D = rne(A / 127)
    const int64_t d_units = div_rne(static_cast<int64_t>(a), 127);
    if (d_units > 0 && d_units % 2 == 0) {
      for (int64_t j = static_cast<int64_t>(a) / d_units; j >= 0 && i < 10; --j) {
        const int64_t x = j * d_units + d_units / 2;
        if (x > static_cast<int64_t>(a)) continue;
        v[i] = (j % 2 ? -1.0f : 1.0f) * units(x);
        ++i;
      }
    }
  }
  const uint32_t top = float_bits(amax);
  for (; i < 32; ++i) {
    const float m = bits_float(static_cast<uint32_t>(rng() % (uint64_t{top} + 1)));
    v[i] = rng() % 2 ? -m : m;
  }
  std::shuffle(v, v + 32, rng);
}

struct Quantised {
  std::vector<int8_t> q;
  std::vector<float> d;
};

Quantised reference(const std::vector<float>& x, int64_t m, int64_t k) {
  const int64_t kp = pad32(k), ng = kp / 32;
  Quantised r{std::vector<int8_t>(static_cast<size_t>(m * kp), 99),
              std::vector<float>(static_cast<size_t>(m * ng), -1.0f)};
  ref::quantize_activations(m, k, x.data(), k, r.q.data(), kp, r.d.data(), ng);
  return r;
}

// Checks every group of the reference's output against the independent computation:
//  - d: float64 amax / 127 rounded to float (double rounding is harmless for a quotient of two
//    floats: 53 >= 2 * 24 + 2 bits), and, where d is subnormal, D = rne(A / 127) in integers;
//  - codes: rint(float(x / d)) clamped to [-127, 127], and, where d is subnormal with D < 2^16
//    units, rne(X / D) clamped, in integers (a quotient within 1 / (2D) > 2^-17 of a half-integer
//    is a tie, so the float division cannot move it across one).
// Returns the number of codes the saturation changed (|rint| > 127).
int64_t check_against_independent(const std::vector<float>& x, int64_t m, int64_t k,
                                  const Quantised& r) {
  const int64_t kp = pad32(k), ng = kp / 32;
  int64_t saturated = 0, bad = 0;
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t g = 0; g < ng; ++g) {
      double amax = 0.0;
      double v[32];
      for (int64_t kk = 0; kk < 32; ++kk) {
        const int64_t c = g * 32 + kk;
        v[kk] = c < k ? static_cast<double>(x[row * k + c]) : 0.0;
        if (!std::isnan(v[kk])) amax = std::max(amax, std::fabs(v[kk]));
      }
      const float d = static_cast<float>(amax / 127.0);
      const float got_d = r.d[row * ng + g];
      bad += float_bits(got_d) != float_bits(d);
      const bool subnormal_d = amax < 127.0 * 0x1p-126;
      int64_t d_units = 0;
      if (subnormal_d) {
        d_units = div_rne(static_cast<int64_t>(amax / kUnit), 127);
        bad += static_cast<double>(got_d) != static_cast<double>(d_units) * kUnit;
      }
      for (int64_t kk = 0; kk < 32; ++kk) {
        const int got = r.q[row * kp + g * 32 + kk];
        bad += got < -127 || got > 127;
        int want = 0;
        if (d != 0.0f) {
          const double rq = std::nearbyint(static_cast<double>(static_cast<float>(v[kk] / d)));
          saturated += std::fabs(rq) > 127.0;
          want = std::isnan(rq) ? 0 : static_cast<int>(std::clamp(rq, -127.0, 127.0));
          if (subnormal_d && d_units < (1 << 16)) {
            const int64_t xu = static_cast<int64_t>(std::fabs(v[kk]) / kUnit);
            const int64_t mag = std::min<int64_t>(div_rne(xu, d_units), 127);
            bad += (v[kk] < 0 ? -mag : mag) != want;
          }
        }
        if (got != want) {
          ++bad;
          if (bad < 10) {
            MESSAGE("row " << row << " group " << g << " k " << kk << ": x " << v[kk] << " d "
                           << d << " code " << got << ", expected " << want);
          }
        }
      }
    }
  }
  CHECK(bad == 0);
  return saturated;
}

}  // namespace

TEST_CASE("quantize_activations_subnormal_d_saturates_amax_64_127_128_150_190_191_16065_16192_units") {
  // One group per amax (units of 2^-149), values {+amax, -amax, 0, ...}: d = rne(A / 127) units
  // and the code of amax is A / D rounded, clamped.
  struct Row { int64_t a; int64_t d_units; int code; };
  const Row rows[] = {
      {63, 0, 0},        // 63/127 < 1/2: d = 0, every code 0
      {64, 1, 64},       // d = 1 unit, codes exact
      {127, 1, 127},     // amax = 127 * min_subnormal: the last exact 127
      {128, 1, 127},     // 128 -> 127 (the wrapping cast gave -128 for -amax)
      {150, 1, 127},     // 150 -> 127 (the wrapping cast gave -106)
      {190, 1, 127},     // the largest quotient, 190
      {191, 2, 96},      // 191/127 rounds to d = 2 units: 95.5 ties to 96
      {16065, 126, 127}, // 16065 / 126 = 127.5 exactly, ties to 128 -> 127: the last saturating amax
      {16192, 127, 127}, // 16192 / 127 = 127.496 -> 127
  };
  const int64_t m = static_cast<int64_t>(std::size(rows));
  std::vector<float> x(static_cast<size_t>(m * 32), 0.0f);
  for (int64_t r = 0; r < m; ++r) {
    x[r * 32 + 0] = units(rows[r].a);
    x[r * 32 + 1] = -units(rows[r].a);
    x[r * 32 + 2] = -units(rows[r].a / 2);
  }
  const Quantised q = reference(x, m, 32);
  for (int64_t r = 0; r < m; ++r) {
    CAPTURE(rows[r].a);
    CHECK(static_cast<double>(q.d[r]) == static_cast<double>(rows[r].d_units) * kUnit);
    CHECK(q.q[r * 32 + 0] == rows[r].code);
    CHECK(q.q[r * 32 + 1] == -rows[r].code);
    if (rows[r].d_units > 0) {
      const int want_half = static_cast<int>(std::min<int64_t>(div_rne(rows[r].a / 2, rows[r].d_units), 127));
      CHECK(q.q[r * 32 + 2] == -want_half);
    }
    for (int kk = 3; kk < 32; ++kk) CHECK(q.q[r * 32 + kk] == 0);
  }
  check_against_independent(x, m, 32, q);
}

TEST_CASE("quantize_activations_amax_sweep_1_to_2^14_units_and_powers_of_two_to_2^-100_equals_integer_and_float64_computation") {
  const std::vector<float> maxima = sweep_maxima();
  const int64_t k = 128, groups_per_row = k / 32;
  const int64_t m = ceil_div(static_cast<int64_t>(maxima.size()), groups_per_row);
  std::vector<float> x(static_cast<size_t>(m * k), 0.0f);
  std::mt19937_64 rng(20261201);
  for (size_t i = 0; i < maxima.size(); ++i) fill_group(maxima[i], rng, &x[i * 32]);
  const Quantised q = reference(x, m, k);
  const int64_t saturated = check_against_independent(x, m, k, q);
  CHECK(saturated > 10000);  // the sweep does reach the saturating range (both signs of each amax)
}

TEST_CASE("quantize_activations_nan_and_inf_give_defined_codes_nan_0_inf_group_all_0") {
  std::vector<float> x(96, 0.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  x[0] = nan;      // group 0: the NaN is skipped by amax and quantised to 0
  x[1] = 127.0f;   // d = 1
  x[2] = -3.0f;
  x[32] = inf;     // group 1: d = inf, x / d is 0 or NaN: all codes 0
  x[33] = 5.0f;
  x[64] = -inf;    // group 2: likewise
  x[65] = nan;
  const Quantised q = reference(x, 1, 96);
  CHECK(q.d[0] == 1.0f);
  CHECK(q.q[0] == 0);
  CHECK(q.q[1] == 127);
  CHECK(q.q[2] == -3);
  CHECK(q.d[1] == inf);
  CHECK(q.d[2] == inf);
  for (int kk = 32; kk < 96; ++kk) CHECK(q.q[kk] == 0);
}

TEST_CASE("cpu_quantize_every_isa_equals_reference_on_the_subnormal_amax_sweep_and_nan_inf_groups") {
  const std::vector<float> maxima = sweep_maxima();
  const int64_t k = 100;  // 4 groups, the last one 4 values + padding
  const int64_t m = ceil_div(static_cast<int64_t>(maxima.size()), 3) + 1;
  std::vector<float> x(static_cast<size_t>(m * k), 0.0f);
  std::mt19937_64 rng(7);
  float group[32];
  for (size_t i = 0; i < maxima.size(); ++i) {  // groups 0..2 of each row
    fill_group(maxima[i], rng, group);
    std::memcpy(&x[(i / 3) * k + (i % 3) * 32], group, sizeof group);
  }
  for (int64_t r = 0; r < m; ++r) {  // group 3's four values: ragged tails of subnormal groups
    for (int64_t kk = 96; kk < 100; ++kk) x[r * k + kk] = (kk % 2 ? -1.0f : 1.0f) * units(128 + r % 64 + kk);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  float* last = &x[(m - 1) * k];
  last[0] = nan;
  last[1] = units(150);
  last[32] = inf;
  last[33] = -units(3);
  last[64] = -inf;
  last[65] = nan;
  const int64_t kp = pad32(k), ng = kp / 32;
  const Quantised want = reference(x, m, k);
  for (cpu::Isa isa : cpu::runnable_isas()) {
    const cpu::KernelTable& kt = cpu::kernel_table(isa);
    std::vector<int8_t> q(static_cast<size_t>(m * kp), 77);
    std::vector<float> d(static_cast<size_t>(m * ng), -2.0f);
    std::vector<int32_t> sums(static_cast<size_t>(m * ng), -1);
    kt.quantize(k, x.data(), k, q.data(), kp, d.data(), ng, sums.data(), 0, m);
    INFO("isa " << std::string(cpu::isa_name(isa)));
    CHECK(std::memcmp(q.data(), want.q.data(), q.size()) == 0);
    CHECK(std::memcmp(d.data(), want.d.data(), d.size() * sizeof(float)) == 0);
    CHECK(std::all_of(q.begin(), q.end(), [](int8_t c) { return c >= -127; }));
    int64_t bad_sums = 0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t g = 0; g < ng; ++g) {
        int32_t s = 0;
        for (int kk = 0; kk < 32; ++kk) s += want.q[r * kp + g * 32 + kk];
        bad_sums += sums[r * ng + g] != s;
      }
    }
    CHECK(bad_sums == 0);
  }
}

}  // namespace twinbit::test
