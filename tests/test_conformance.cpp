// The conformance suite, tested: it passes correct backends (the CPU backend, the example plugin
// loaded through dlopen), catches the two deliberately broken backends with exact counts and
// indices, reports xfail/xpass honestly, checks the fallback of unsupported cases, and refuses a
// plugin of another ABI version with both versions named.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "conformance/conformance.h"
#include "core/registry.h"
#include "tests/broken_backends/broken_backends.h"
#include "tests/test_backend_util.h"

using namespace twinbit;
using twinbit::testing::make_backend;
using namespace twinbit::conformance;
using twinbit::testing::kFlipCol;
using twinbit::testing::kFlipK;
using twinbit::testing::kFlipM;
using twinbit::testing::kFlipN;
using twinbit::testing::kFlipRow;

namespace {

const CaseResult& find(const Report& r, const std::string& name) {
  for (const CaseResult& c : r.results) {
    if (c.name == name) return c;
  }
  FAIL("no case " << name);
  return r.results.front();
}

std::vector<Case> all_precs_modes(int64_t m, int64_t n, int64_t k) {
  std::vector<Case> out;
  for (tb_prec p : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (tb_act_mode a : {TB_ACT_F32, TB_ACT_I8}) out.push_back(gemm_case(p, a, m, n, k));
  }
  return out;
}

}  // namespace

TEST_SUITE("conformance") {

TEST_CASE("case names spell out their parameters") {
  CHECK(gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96).name() == "gemm_q8_f32_M3_N33_K96");
  CHECK(batch_case(TB_PREC_Q4, TB_ACT_I8, 33, 257, 100).name() == "batch_q4_i8_M33_N257_K100");
  CHECK(gemv_case(false, 257, 100).name() == "gemv_f32_N257_K100");
  CHECK(gemv_case(true, 31, 2048).name() == "gemv_f32_pair_N31_K2048");
  CHECK(gdn_case(16, 16, 128, 128).name() == "gdn_delta_VH16_KH16_KD128_VD128");
}

TEST_CASE("generated list seed 7 cases 300: unique, deterministic, the sweep's edges, awkward random shapes") {
  CaseOptions o;
  o.seed = 7;
  o.random_cases = 300;
  const std::vector<Case> a = generate_cases(o), b = generate_cases(o);
  REQUIRE(a.size() == b.size());
  std::set<std::string> names;
  int64_t random = 0;
  bool m70 = false, n_tail = false, k_tail = false, one_group = false, k_big = false, gdn128 = false;
  std::set<int64_t> ms, ns, ks;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name() == b[i].name());
    names.insert(a[i].name());
    if (a[i].random) ++random;
    if (a[i].kind == CaseKind::gemm || a[i].kind == CaseKind::batch_invariance) {
      if (!a[i].random) {
        ms.insert(a[i].m);
        ns.insert(a[i].n);
        ks.insert(a[i].k);
      } else {
        m70 |= a[i].m > 33;
        n_tail |= a[i].n % 32 != 0;
        k_tail |= a[i].k % 32 != 0 && a[i].k > 32;
        one_group |= a[i].k <= 32;
        k_big |= a[i].k > 8192;
      }
    }
    gdn128 |= a[i].kind == CaseKind::gdn_delta && a[i].kd == 128 && a[i].vd == 128;
  }
  CHECK(names.size() == a.size());
  CHECK(random == 300);
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 32, 33, 64}) CHECK(ms.count(m) == 1);
  for (int64_t n : {1, 3, 31, 32, 33, 255, 256, 257, 1000}) CHECK(ns.count(n) == 1);
  for (int64_t k : {32, 64, 96, 2048, 6144, 1, 33, 100, 2049}) CHECK(ks.count(k) == 1);
  CHECK(m70);
  CHECK(n_tail);
  CHECK(k_tail);
  CHECK(one_group);
  CHECK(k_big);
  CHECK(gdn128);
  o.seed = 8;
  CHECK(generate_cases(o).back().name() != a.back().name());  // the random part follows the seed
}

TEST_CASE("run_suites: several backends in one run, each case prepared once, give the reports each gives alone") {
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  Backend broken = make_backend(tb_backend_create_broken_flip_bit);
  CaseOptions co;
  co.seed = 5;
  co.sweep = Sweep::quick;
  co.model_shapes = false;  // scalar backends, or covered by the conformance_cpu_* instances
  co.random_cases = 4;
  const std::vector<Case> cases = generate_cases(co);
  SuiteOptions so;
  so.seed = 5;
  const std::vector<Report> both = run_suites({&cpu.value(), &broken}, cases, so);
  REQUIRE(both.size() == 2);
  const Report alone[2] = {run_suite(cpu.value(), cases, so), run_suite(broken, cases, so)};
  for (int b = 0; b < 2; ++b) {
    CHECK(both[b].backend == alone[b].backend);
    REQUIRE(both[b].results.size() == alone[b].results.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      INFO(both[b].backend << " " << both[b].results[i].name);
      CHECK(both[b].results[i].name == alone[b].results[i].name);
      CHECK(both[b].results[i].verdict == alone[b].results[i].verdict);
      CHECK(both[b].results[i].mismatch.differing == alone[b].results[i].mismatch.differing);
    }
  }
  CHECK(both[0].passed());
  CHECK_FALSE(both[1].passed());  // the broken backend's differences stay its own
  CHECK(both[1].totals.differ > 0);
}

TEST_CASE("cpu backend, quick sweep + 12 random cases seed 3: every case equal") {
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  CaseOptions co;
  co.seed = 3;
  co.sweep = Sweep::quick;
  co.model_shapes = false;  // scalar backends, or covered by the conformance_cpu_* instances
  co.random_cases = 12;
  const std::vector<Case> cases = generate_cases(co);
  SuiteOptions so;
  so.seed = 3;
  const Report r = run_suite(cpu.value(), cases, so);
  INFO(format_text(r));
  CHECK(r.backend == "cpu");
  CHECK(r.totals.cases == static_cast<int64_t>(cases.size()));
  CHECK(r.totals.equal == r.totals.cases);
  CHECK(r.passed());
}

TEST_CASE("example plugin via dlopen, quick sweep: equal, q4 i8 unsupported and exact on the cpu fallback") {
  auto plugin = load_plugin(TWINBIT_EXAMPLE_PLUGIN);
  REQUIRE_MESSAGE(plugin.ok(), plugin.status().to_string());
  CHECK(plugin->name() == "example");
  CHECK(has_feature_tag(plugin->features(), "gemm.q4"));
  CaseOptions co;
  co.sweep = Sweep::quick;
  co.model_shapes = false;  // scalar backends, or covered by the conformance_cpu_* instances
  co.random_cases = 0;
  const std::vector<Case> cases = generate_cases(co);
  int64_t q4_i8 = 0, quantize = 0;
  for (const Case& c : cases) {
    const bool gemm = c.kind == CaseKind::gemm || c.kind == CaseKind::batch_invariance;
    q4_i8 += gemm && c.prec == TB_PREC_Q4 && c.mode == TB_ACT_I8;
    quantize += c.kind == CaseKind::quantize_i8;
  }
  REQUIRE(q4_i8 > 0);
  REQUIRE(quantize > 0);
  const Report r = run_suite(plugin.value(), cases, SuiteOptions{});
  INFO(format_text(r));
  // The plugin has no quantize_i8 entry: those cases are unsupported and checked on the cpu.
  CHECK(r.totals.unsupported == q4_i8 + quantize);
  CHECK(r.totals.equal == r.totals.cases - q4_i8 - quantize);
  CHECK(r.totals.fallback_failed == 0);
  for (const CaseResult& c : r.results) {
    if (c.verdict != Verdict::unsupported) continue;
    CHECK(c.message.find(c.c.kind == CaseKind::quantize_i8 ? "has no quantize_i8 entry"
                                                           : "not ported yet") != std::string::npos);
    CHECK(c.fallback.backend == "cpu");
    CHECK(c.fallback.verdict == Verdict::equal);
  }
  CHECK(r.passed());
}

TEST_CASE("plugin of ABI version 3: refused, naming both versions (plugin's check and host's check)") {
  auto a = load_plugin(TWINBIT_EXAMPLE_PLUGIN_ABI3);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == TB_FAILED_PRECONDITION);
  CHECK(a.status().message().find("speaks backend ABI version 3, the host speaks 2") != std::string::npos);
  CHECK(a.status().message().find(TWINBIT_EXAMPLE_PLUGIN_ABI3) != std::string::npos);
  auto b = load_plugin(TWINBIT_EXAMPLE_PLUGIN_ABI3_TRUSTING);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == TB_FAILED_PRECONDITION);
  CHECK(b.status().message().find("backend speaks ABI version 3, this library speaks 2") != std::string::npos);
  auto c = load_plugin("/nonexistent/libnothing.so");
  CHECK(c.status().code() == TB_UNAVAILABLE);
}

TEST_CASE("broken_flip_bit: M3 N33 K96 caught in all 4 prec/modes and its batch check, 1/99 at (1, 5), 1 ulp") {
  Backend b = make_backend(tb_backend_create_broken_flip_bit);
  std::vector<Case> cases = all_precs_modes(kFlipM, kFlipN, kFlipK);
  cases.push_back(batch_case(TB_PREC_Q8, TB_ACT_F32, kFlipM, kFlipN, kFlipK));
  for (const Case& c : all_precs_modes(1, kFlipN, kFlipK)) cases.push_back(c);  // other shapes:
  for (const Case& c : all_precs_modes(kFlipM, 32, kFlipK)) cases.push_back(c);  // untouched
  cases.push_back(gemm_case(TB_PREC_Q8, TB_ACT_F32, kFlipM, kFlipN, 100));
  cases.push_back(gdn_case(2, 1, 128, 128));
  const Report r = run_suite(b, cases, SuiteOptions{});
  INFO(format_text(r));
  CHECK(r.totals.cases == 15);
  CHECK(r.totals.differ == 5);
  CHECK(r.totals.equal == 10);
  CHECK_FALSE(r.passed());
  for (const CaseResult& c : r.results) {
    const bool broken = c.c.kind != CaseKind::gdn_delta && c.c.m == kFlipM && c.c.n == kFlipN &&
                        c.c.k == kFlipK;
    CHECK_MESSAGE(c.verdict == (broken ? Verdict::differ : Verdict::equal), c.name);
    if (!broken) continue;
    CHECK(c.mismatch.differing == 1);
    CHECK(c.mismatch.total == kFlipM * kFlipN);  // 99
    CHECK(c.mismatch.first_m == kFlipRow);
    CHECK(c.mismatch.first_n == kFlipCol);
    CHECK(c.mismatch.max_ulp == 1);
  }
  CHECK(format_text(r).find("DIFFER       gemm_q8_f32_M3_N33_K96: 1/99 differ, first at y(m 1, n 5), "
                            "max 1 ulp [all 33 columns]") != std::string::npos);
}

TEST_CASE("broken_last_column: N 33, 1, 257 miss column N-1 in every row; N 32 and 256 equal") {
  Backend b = make_backend(tb_backend_create_broken_last_column);
  std::vector<Case> cases;
  for (int64_t n : {33, 1, 257, 32, 256}) cases.push_back(gemm_case(TB_PREC_Q4, TB_ACT_I8, 2, n, 96));
  cases.push_back(gemm_case(TB_PREC_Q8, TB_ACT_F32, 5, 31, 33));
  const Report r = run_suite(b, cases, SuiteOptions{});
  INFO(format_text(r));
  CHECK(r.totals.differ == 4);
  CHECK(r.totals.equal == 2);
  struct Want { const char* name; int64_t differing, total, first_n; };
  for (const Want& w : {Want{"gemm_q4_i8_M2_N33_K96", 2, 66, 32}, Want{"gemm_q4_i8_M2_N1_K96", 2, 2, 0},
                        Want{"gemm_q4_i8_M2_N257_K96", 2, 514, 256},
                        Want{"gemm_q8_f32_M5_N31_K33", 5, 155, 30}}) {
    const CaseResult& c = find(r, w.name);
    CHECK_MESSAGE(c.verdict == Verdict::differ, w.name);
    CHECK(c.mismatch.differing == w.differing);
    CHECK(c.mismatch.total == w.total);
    CHECK(c.mismatch.first_m == 0);
    CHECK(c.mismatch.first_n == w.first_n);
  }
  CHECK(find(r, "gemm_q4_i8_M2_N32_K96").verdict == Verdict::equal);
  CHECK(find(r, "gemm_q4_i8_M2_N256_K96").verdict == Verdict::equal);
}

TEST_CASE("broken_last_column on the quick sweep: differ count = gemm cases with N % 32 != 0") {
  Backend b = make_backend(tb_backend_create_broken_last_column);
  CaseOptions co;
  co.sweep = Sweep::quick;
  co.model_shapes = false;  // scalar backends, or covered by the conformance_cpu_* instances
  co.random_cases = 0;
  const std::vector<Case> cases = generate_cases(co);
  int64_t tails = 0;
  for (const Case& c : cases) tails += c.kind == CaseKind::gemm && c.n % 32 != 0;
  const Report r = run_suite(b, cases, SuiteOptions{});
  CHECK(tails > 0);
  CHECK(r.totals.differ == tails);
  for (const CaseResult& c : r.results) {
    if (c.verdict != Verdict::differ) continue;
    CHECK(c.mismatch.differing == c.c.m);
    CHECK(c.mismatch.first_n == c.c.n - 1);
  }
}

TEST_CASE("sampled reference (budget 1000) still checks the last column: M1 N1000 K64 1 differs at (0, 999)") {
  Backend b = make_backend(tb_backend_create_broken_last_column);
  SuiteOptions so;
  so.reference_budget = 1000;
  const Report r = run_suite(b, {gemm_case(TB_PREC_Q8, TB_ACT_F32, 1, 1000, 64)}, so);
  const CaseResult& c = r.results.at(0);
  CHECK(c.sampled);
  CHECK(c.checked.find("sampled") == 0);
  CHECK(c.verdict == Verdict::differ);
  CHECK(c.mismatch.differing == 1);
  CHECK(c.mismatch.total < 1000);
  CHECK(c.mismatch.first_n == 999);
}

TEST_CASE("expected failures: a listed failing case is xfail, a listed passing case is xpass (fails the run)") {
  Backend b = make_backend(tb_backend_create_broken_flip_bit);
  const std::vector<Case> cases = {gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96),
                                   gemm_case(TB_PREC_Q4, TB_ACT_F32, 3, 33, 96),
                                   gemm_case(TB_PREC_Q8, TB_ACT_F32, 1, 33, 96)};
  SuiteOptions so;
  so.expected = {{"broken_flip_bit", "gemm_*_f32_M3_N33_K96", "flips a bit on purpose"}};
  Report r = run_suite(b, cases, so);
  CHECK(r.totals.xfail == 2);
  CHECK(r.totals.equal == 1);
  CHECK(r.passed());
  CHECK(r.results[0].mismatch.differing == 1);
  CHECK(r.results[0].message.find("flips a bit on purpose") != std::string::npos);

  so.expected.push_back({"broken_flip_bit", "gemm_q8_f32_M1_N33_K96", "stale entry"});
  so.expected.push_back({"some_other_backend", "*", "does not apply here"});
  r = run_suite(b, cases, so);
  CHECK(r.totals.xfail == 2);
  CHECK(r.totals.xpass == 1);
  CHECK(r.results[2].verdict == Verdict::xpass);
  CHECK(r.results[2].message.find("stale entry") != std::string::npos);
  CHECK_FALSE(r.passed());
}

TEST_CASE("expected-failure file: BACKEND PATTERN REASON lines, comments, and a line without a reason refused") {
  const std::string path = "conformance-expected-test.txt";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs("# vendor list\n\nnpu  gemm_q4_*  int4 path rounds scales to fp16 twice  # ticket 12\n", f);
    std::fclose(f);
  }
  auto ok = read_expected_failures(path);
  REQUIRE(ok.ok());
  REQUIRE(ok->size() == 1);
  CHECK((*ok)[0].backend == "npu");
  CHECK((*ok)[0].pattern == "gemm_q4_*");
  CHECK((*ok)[0].reason == "int4 path rounds scales to fp16 twice");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("npu gemm_q4_*\n", f);
    std::fclose(f);
  }
  auto bad = read_expected_failures(path);
  CHECK(bad.status().code() == TB_INVALID_ARGUMENT);
  CHECK(bad.status().message().find(":1:") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("fallback: null backend's unsupported cases run exactly on cpu; a broken or absent fallback fails") {
  auto null = create_backend("null");
  REQUIRE(null.ok());
  const std::vector<Case> cases = {gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96),
                                   gemv_case(true, 33, 100), gdn_case(3, 3, 17, 33)};
  Report r = run_suite(null.value(), cases, SuiteOptions{});
  CHECK(r.totals.unsupported == 3);
  CHECK(r.totals.fallback_failed == 0);
  for (const CaseResult& c : r.results) {
    CHECK(c.fallback.backend == "cpu");
    CHECK(c.fallback.verdict == Verdict::equal);
  }
  CHECK(r.passed());

  SuiteOptions broken;
  broken.fallback_order = {{"broken_flip_bit", tb_backend_create_broken_flip_bit}};
  r = run_suite(null.value(), cases, broken);
  CHECK(r.totals.fallback_failed == 1);
  CHECK(r.results[0].fallback.verdict == Verdict::differ);
  CHECK(r.results[0].fallback.mismatch.differing == 1);
  CHECK_FALSE(r.passed());

  SuiteOptions none;
  none.fallback_order = {{"null", builtin_backends().back().create}};  // skipped: same name
  r = run_suite(null.value(), cases, none);
  CHECK(r.totals.fallback_failed == 3);
  CHECK_FALSE(r.results[0].fallback.ran);
}

TEST_CASE("reports: JSON totals keys and counts, JUnit failures, text header and result line") {
  Backend b = make_backend(tb_backend_create_broken_flip_bit);
  Report r = run_suite(b, all_precs_modes(kFlipM, kFlipN, kFlipK), SuiteOptions{});
  r.source = "test";
  const auto j = nlohmann::json::parse(format_json(r));
  for (const char* key : {"cases", "equal", "differ", "unsupported", "xfail", "xpass"}) {
    CHECK(j["totals"].contains(key));
  }
  CHECK(j["totals"]["cases"] == 4);
  CHECK(j["totals"]["differ"] == 4);
  CHECK(j["passed"] == false);
  CHECK(j["cases"].size() == 4);
  CHECK(j["cases"][0]["result"]["first"]["m"] == kFlipRow);
  CHECK(j["cases"][0]["result"]["first"]["n"] == kFlipCol);
  const std::string x = format_junit(r);
  CHECK(x.find("tests=\"4\" failures=\"4\"") != std::string::npos);
  CHECK(x.find("<failure message=") != std::string::npos);
  const std::string t = format_text(r);
  CHECK(t.find("backend    broken_flip_bit (test)") != std::string::npos);
  CHECK(t.find("result: FAIL") != std::string::npos);
}

TEST_CASE("ulp distance: adjacent floats 1, +0 and -0 are 1 apart, equal bits 0") {
  CHECK(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulp_distance(0.0f, -0.0f) == 1);
  CHECK(ulp_distance(-1.0f, -1.0f) == 0);
  CHECK(ulp_distance(std::nextafter(0.0f, 1.0f), std::nextafter(0.0f, -1.0f)) == 3);
}

}  // TEST_SUITE
