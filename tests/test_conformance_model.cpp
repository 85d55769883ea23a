// The suite v2's case list (the model sweep, the versioned random generator), the support
// probe and the deviated references behind --explain (conformance/deviations.h).
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "conformance/conformance.h"
#include "conformance/deviations.h"
#include "conformance/explain.h"
#include "conformance/inputs.h"
#include "conformance/support.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "tests/broken_backends/broken_backends.h"
#include "tests/test_backend_util.h"

using namespace twinbit;
using twinbit::testing::make_backend;
using namespace twinbit::conformance;

namespace {
std::set<std::string> names_of(const std::vector<Case>& cases) {
  std::set<std::string> s;
  for (const Case& c : cases) s.insert(c.name());
  return s;
}
}  // namespace

TEST_CASE("model sweep: every projection shape at M 1 and 32 in the full sweep, each shape and M in the quick one (but the vocabulary at M 32)") {
  CaseOptions full;
  full.random_cases = 0;
  CaseOptions quick = full;
  quick.sweep = Sweep::quick;
  const std::set<std::string> f = names_of(generate_cases(full)), q = names_of(generate_cases(quick));
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1024, 2048}, {2048, 2048}, {4096, 2048}, {6144, 2048}, {12288, 2048}, {151936, 2048}, {2048, 6144}};
  for (auto [n, k] : shapes) {
    for (int64_t m : {1, 32}) {
      int in_quick = 0;
      for (const char* pm : {"q8_f32", "q8_i8", "q4_f32", "q4_i8"}) {
        const std::string name = Format("gemm_%s_M%lld_N%lld_K%lld", pm, (long long)m, (long long)n, (long long)k);
        CHECK_MESSAGE(f.count(name) == 1, name);
        in_quick += static_cast<int>(q.count(name));
      }
      CHECK_MESSAGE(in_quick == (n == 151936 && m == 32 ? 0 : 1), n, " ", k, " M", m);
    }
  }
}

TEST_CASE("generator 1 keeps the old random lists; generator 2 draws K % 32 == 0 for at least half of the gemm cases") {
  CaseOptions o;
  o.sweep = Sweep::none;
  o.seed = 3;
  o.random_cases = 12;
  o.generator = 1;
  std::vector<std::string> got;
  for (const Case& c : generate_cases(o)) got.push_back(c.name());
  // The list main's suite drew before the generator was versioned (seed 3, 12 cases).
  const std::vector<std::string> old = {
      "gemm_q4_i8_M7_N845_K3", "gemv_f32_N281_K2663", "gemm_q4_f32_M9_N256_K14",
      "gemm_q4_f32_M2_N395_K2782", "gemm_q4_f32_M8_N170_K18", "gemm_q4_i8_M51_N355_K749",
      "gemm_q4_f32_M17_N651_K9647", "gdn_delta_VH4_KH1_KD138_VD25", "batch_q8_f32_M7_N531_K3072",
      "gemm_q8_i8_M4_N964_K192", "gemm_q8_f32_M7_N799_K146", "gemm_q8_i8_M43_N144_K19"};
  CHECK(got == old);
  for (int gen : {1, 2}) {
    int64_t gemm = 0, whole = 0;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      o.seed = seed;
      o.random_cases = 100;
      o.generator = gen;
      for (const Case& c : generate_cases(o)) {
        if (c.kind != CaseKind::gemm && c.kind != CaseKind::batch_invariance) continue;
        ++gemm;
        whole += c.k % 32 == 0;
      }
    }
    MESSAGE("generator ", gen, ": ", whole, " of ", gemm, " random gemm cases with K % 32 == 0");
    if (gen == 1) CHECK(whole * 100 < gemm * 35);
    if (gen == 2) CHECK(whole * 2 >= gemm);
  }
}

TEST_CASE("deviations: each differs from the reference somewhere, and the contract's own plan is never offered") {
  Rng rng(case_seed(9, "deviations"));
  const int64_t n = 1024, k = 2048, kp = pad32(k);
  OwnedStrips w = random_strips(rng, TB_PREC_Q8, n, k);
  // Flush-to-zero shows only where values are subnormal: activations around 2^-120 for it.
  struct Inputs {
    std::vector<float> x, xd;
    std::vector<int8_t> xq;
  } normal, tiny;
  normal.x = random_floats(rng, k);
  tiny.x = random_floats(rng, k, -115);
  for (Inputs* in : {&normal, &tiny}) {
    in->xq.resize(kp);
    in->xd.resize(kp / 32);
    ref::quantize_activations(1, k, in->x.data(), k, in->xq.data(), kp, in->xd.data(), kp / 32);
  }
  const tb_strips v = w.view();
  for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
    for (const Deviation& d : gemm_deviations(mode, n, k)) {
      if (d.kind == DeviationKind::split_plan) CHECK(d.nsplit != split_plan(n, k));
      const Inputs& in = d.kind == DeviationKind::flush_to_zero ? tiny : normal;
      int64_t differ = 0;
      for (int64_t col = 0; col < 64; ++col) {
        const float want = mode == TB_ACT_F32 ? ref::gemm_f32_at(v, in.x.data(), col)
                                              : ref::gemm_i8_at(v, in.xq.data(), in.xd.data(), col);
        const float got = mode == TB_ACT_F32 ? deviant_gemm_f32_at(v, in.x.data(), col, d)
                                             : deviant_gemm_i8_at(v, in.xq.data(), in.xd.data(), col, d);
        differ += std::memcmp(&want, &got, 4) != 0;
      }
      CHECK_MESSAGE(differ > 0, act_mode_name(mode), ": ", d.detail());
    }
  }
}

TEST_CASE("explain on the exact reference backend: nothing to explain; a gdn case: not explained") {
  Backend b = make_backend(tb_backend_create_test_reference);
  Explanation e = explain_case(b, gemm_case(TB_PREC_Q4, TB_ACT_I8, 3, 33, 96), 1, 3e7);
  CHECK(e.backend.differing == 0);
  CHECK(e.not_explained.find("nothing to explain") != std::string::npos);
  e = explain_case(b, gdn_case(2, 1, 3, 5), 1, 3e7);
  CHECK(e.not_explained.find("only gemm and quantize_i8") != std::string::npos);
}

TEST_CASE("explain on the flip-bit backend: none of the usual deviations reproduces one flipped bit") {
  Backend b = make_backend(tb_backend_create_broken_flip_bit);
  const Explanation e = explain_case(b, gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96), 1, 3e7);
  CHECK(e.backend.differing == 1);
  CHECK(!e.trials.empty());
  CHECK(e.reproduced_by().empty());
  CHECK(format_explanation(e).find("reproduced by: none") != std::string::npos);
}

TEST_CASE("support probe of the test reference backend: every gemm probe claimed, probes for every op") {
  Backend b = make_backend(tb_backend_create_test_reference);
  const std::vector<SupportProbe> probes = probe_support(b);
  std::set<std::string> ops;
  for (const SupportProbe& p : probes) {
    ops.insert(p.op);
    if (p.op == "gemm") CHECK_MESSAGE(p.claimed, p.shape, ": ", p.refusal);
  }
  CHECK(ops == std::set<std::string>{"gemm", "gemv_f32", "gemv_f32_pair", "gdn_delta", "quantize_i8"});
  CHECK(format_support_text(b, probes).find("gemm q4 i8") != std::string::npos);
}
