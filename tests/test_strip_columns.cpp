// Column ranges of a projection give exactly the bits of those columns of the whole
// (docs/NUMERICS.md "Column ranges"): the fold plan is split_plan of the projection's (N, K),
// carried by the view's n_total, never of the range's own n. For the reference and the CPU
// backend on every instruction-set tag this CPU runs, q8 and q4, modes F32 and I8: projections
// cut into random ranges at multiples of 32 (the last one ending ragged at N) are computed range
// by range, and the concatenation must memcmp-equal the whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/op_checks.h"
#include "core/reference.h"
#include "core/strip_layout.h"
#include "tests/test_support.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {
namespace {

using Range = testing::ColumnRange;

struct Inputs {
  int64_t m = 0, k = 0, kp = 0;
  std::vector<float> x;    // (m, k)
  std::vector<int8_t> xq;  // (m, kp)
  std::vector<float> xd;   // (m, kp / 32)
};

Inputs make_inputs(int64_t m, int64_t k, uint64_t seed) {
  Inputs in;
  in.m = m;
  in.k = k;
  in.kp = pad32(k);
  in.x = random_activations(m * k, seed);
  in.xq.resize(static_cast<size_t>(m * in.kp));
  in.xd.resize(static_cast<size_t>(m * in.kp / 32));
  ref::quantize_activations(m, k, in.x.data(), k, in.xq.data(), in.kp, in.xd.data(), in.kp / 32);
  return in;
}

// y (m, w.n) of one view, by some engine.
using Engine = std::function<void(const tb_strips& w, tb_act_mode mode, const Inputs& in, float* y)>;

// Computes the whole and each range; the concatenation must equal the whole bit for bit.
void check_cut(const Engine& run, const tb_strips& whole, tb_act_mode mode, const Inputs& in,
               const std::vector<Range>& ranges, const std::string& what) {
  const int64_t n = whole.n, m = in.m;
  std::vector<float> want(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n));
  run(whole, mode, in, want.data());
  for (const Range& r : ranges) {
    Result<tb_strips> part = StripLayout::columns(whole, r.begin, r.count);
    REQUIRE_MESSAGE(part.ok(), part.status().to_string());
    REQUIRE(check_strips(*part).ok());
    CHECK(part->n_total == whole.n_total);
    CHECK(part->n_begin == whole.n_begin + r.begin);
    std::vector<float> y(static_cast<size_t>(m * r.count));
    run(*part, mode, in, y.data());
    for (int64_t row = 0; row < m; ++row) {
      std::copy(y.begin() + row * r.count, y.begin() + (row + 1) * r.count,
                got.begin() + row * n + r.begin);
    }
  }
  const int64_t diff = first_difference(got.data(), want.data(), want.size());
  CHECK_MESSAGE(diff < 0, what << ": " << ranges.size() << " ranges, first difference at row "
                                << diff / n << " column " << diff % n);
}

void reference_engine(const tb_strips& w, tb_act_mode mode, const Inputs& in, float* y) {
  if (mode == TB_ACT_F32) {
    ref::gemm_f32(w, in.m, in.x.data(), in.k, y, w.n);
  } else {
    ref::gemm_i8(w, in.m, in.xq.data(), in.kp, in.xd.data(), in.kp / 32, y, w.n);
  }
}

Engine backend_engine(const Backend& be) {
  return [&be](const tb_strips& w, tb_act_mode mode, const Inputs& in, float* y) {
    tb_weights_view v{};
    v.kind = TB_WEIGHTS_STRIPS;
    v.strips = w;
    auto bound = be.bind(v);
    REQUIRE_MESSAGE(bound.ok(), bound.status().to_string());
    tb_gemm_args a{};
    a.mode = mode;
    a.m = in.m;
    a.x = in.x.data();
    a.ldx = in.k;
    a.xq = in.xq.data();
    a.ldxq = in.kp;
    a.xd = in.xd.data();
    a.ldxd = in.kp / 32;
    a.y = y;
    a.ldy = w.n;
    const Status s = be.gemm(bound.value(), a);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
  };
}

// Random codes for a wide projection, eight bytes per generator step (the per-code builder is too
// slow for 80 M codes): every byte is a valid q8 code (-128 included) or two valid q4 codes;
// normal scales of both signs; padding columns reset to code 0 and scale 0. K is a multiple of
// 32 here, so there is no padding k.
OwnedStrips wide_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  REQUIRE(k % 32 == 0);
  const StripLayout layout{prec, n, k};
  OwnedStrips s;
  conformance::OwnedStrips& o = s.owned;
  o.prec = prec;
  o.n = n;
  o.k = k;
  o.codes.resize(layout.codes_bytes());
  o.scales.assign(layout.scales_bytes() / 2, 0);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < o.codes.size(); i += 8) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;  // xorshift64
    std::memcpy(&o.codes[i], &state, std::min<size_t>(8, o.codes.size() - i));
  }
  for (size_t i = 0; i < o.scales.size(); ++i) {  // normal halves of both signs, 2^-8 .. 2^7
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    o.scales[i] = static_cast<uint16_t>((state & 0x83ff) | ((7 + (state >> 16) % 16) << 10));
  }
  for (int64_t col = n; col < layout.np(); ++col) {  // padding columns: code 0, scale 0
    for (int64_t g = 0; g < layout.groups(); ++g) {
      o.scales[layout.scale_index(col, g)] = 0;
      for (int64_t kk = g * 32; kk < g * 32 + 32; ++kk) layout.set_code(o.codes.data(), col, kk, 0);
    }
  }
  s.view = o.view();
  return s;
}

// A wide projection whose plan differs from its ranges': N = 40007 (B = 40: 13 slices at
// K = 2048), while any range of at most 16 Ki columns alone would get 16 slices.
constexpr int64_t kWideN = 40007, kWideK = 2048;

}  // namespace

TEST_SUITE("core") {

TEST_CASE("column ranges: a sub-view keeps the projection's plan, and bad ranges are refused") {
  OwnedStrips w = wide_strips(TB_PREC_Q4, kWideN, kWideK, 3);
  REQUIRE(w.view.n_total == kWideN);
  REQUIRE(w.view.n_begin == 0);
  Result<tb_strips> half = StripLayout::columns(w.view, 20000 / 32 * 32, kWideN - 20000 / 32 * 32);
  REQUIRE(half.ok());
  CHECK(fold_plan(*half) == fold_plan(w.view));
  CHECK(fold_plan(w.view) == 13);
  CHECK(split_plan(half->n, half->k) == 16);  // what the range alone would have folded
  // A range of a range: offsets add up, the projection stays the same.
  Result<tb_strips> quarter = StripLayout::columns(*half, 64, 100);
  REQUIRE(quarter.ok());
  CHECK(quarter->n_begin == half->n_begin + 64);
  CHECK(quarter->n_total == kWideN);
  CHECK(check_strips(*quarter).ok());
  CHECK(ref::weight_code(*quarter, 5, 7) == ref::weight_code(w.view, quarter->n_begin + 5, 7));
  CHECK(ref::weight_scale(*quarter, 99, 3) == ref::weight_scale(w.view, quarter->n_begin + 99, 3));

  CHECK(StripLayout::columns(w.view, 16, 32).status().code() == TB_INVALID_ARGUMENT);
  CHECK(StripLayout::columns(w.view, -32, 32).status().code() == TB_INVALID_ARGUMENT);
  CHECK(StripLayout::columns(w.view, 0, 0).status().code() == TB_INVALID_ARGUMENT);
  CHECK(StripLayout::columns(w.view, 39968, 40).status().code() == TB_INVALID_ARGUMENT);

  tb_strips bad = *half;
  bad.n_begin = 33;
  CHECK(check_strips(bad).message().find("n_begin") != std::string::npos);
  bad = *half;
  bad.n_total = bad.n_begin + bad.n - 1;
  CHECK(check_strips(bad).message().find("n_total") != std::string::npos);
  bad = *half;
  bad.n_total = 0;
  CHECK(check_strips(bad).message().find("n_total = 0") != std::string::npos);
  bad = *half;
  bad.n_begin = -32;
  CHECK(check_strips(bad).code() == TB_INVALID_ARGUMENT);
}

TEST_CASE("column ranges: the reference computes the columns of the whole, q8 q4, f32 i8") {
  std::mt19937_64 rng(2024);
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (int trial = 0; trial < 6; ++trial) {
      const int64_t n = 1 + static_cast<int64_t>(rng() % 700), k = 1 + static_cast<int64_t>(rng() % 1100);
      OwnedStrips w = random_strips(prec, n, k, rng());
      const Inputs in = make_inputs(1 + static_cast<int64_t>(rng() % 3), k, rng());
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        check_cut(reference_engine, w.view, mode, in, testing::random_column_ranges(rng, n),
                  "reference " + std::string(prec_name(prec)) + " " + act_mode_name(mode) +
                      " N=" + std::to_string(n) + " K=" + std::to_string(k));
      }
    }
    // The wide projection: sample columns around every boundary (the reference is slow).
    OwnedStrips w = wide_strips(prec, kWideN, kWideK, 77 + prec);
    const Inputs in = make_inputs(1, kWideK, 78);
    const std::vector<Range> ranges = testing::random_column_ranges(rng, kWideN);
    bool same = true;
    for (const Range& r : ranges) {
      Result<tb_strips> part = StripLayout::columns(w.view, r.begin, r.count);
      REQUIRE(part.ok());
      for (int64_t c : {int64_t{0}, int64_t{31}, r.count / 2, r.count - 1}) {
        const float f_part = ref::gemm_f32_at(*part, in.x.data(), c);
        const float f_whole = ref::gemm_f32_at(w.view, in.x.data(), r.begin + c);
        const float i_part = ref::gemm_i8_at(*part, in.xq.data(), in.xd.data(), c);
        const float i_whole = ref::gemm_i8_at(w.view, in.xq.data(), in.xd.data(), r.begin + c);
        same &= same_bits(&f_part, &f_whole, 1) && same_bits(&i_part, &i_whole, 1);
      }
    }
    CHECK_MESSAGE(same, "reference " << prec_name(prec) << " wide projection: " << ranges.size() << " ranges");
  }
}

TEST_CASE("column ranges: the cpu backend computes the columns of the whole on every isa tag") {
  std::vector<Backend> backends;
  for (cpu::Isa isa : cpu::runnable_isas()) {
    auto b = cpu_backend_for(isa);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    backends.push_back(std::move(b.value()));
  }
  REQUIRE(!backends.empty());
  std::mt19937_64 rng(4048);
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    struct Shape {
      int64_t n, k;
    };
    std::vector<Shape> shapes = {{kWideN, kWideK}};
    for (int trial = 0; trial < 4; ++trial) {
      shapes.push_back({1 + static_cast<int64_t>(rng() % 1500), 1 + static_cast<int64_t>(rng() % 1500)});
    }
    for (const Shape& sh : shapes) {
      OwnedStrips w = sh.n == kWideN ? wide_strips(prec, sh.n, sh.k, rng())
                                     : random_strips(prec, sh.n, sh.k, rng());
      const Inputs in = make_inputs(sh.n == kWideN ? 2 : 1 + static_cast<int64_t>(rng() % 5), sh.k, rng());
      const std::vector<Range> ranges = testing::random_column_ranges(rng, sh.n);
      for (size_t i = 0; i < backends.size(); ++i) {
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
          check_cut(backend_engine(backends[i]), w.view, mode, in, ranges,
                    std::string("cpu ") + cpu::isa_name(cpu::runnable_isas()[i]) + " " +
                        prec_name(prec) + " " + act_mode_name(mode) + " N=" +
                        std::to_string(sh.n) + " K=" + std::to_string(sh.k));
        }
      }
    }
  }
}

}  // TEST_SUITE

}  // namespace twinbit::test
