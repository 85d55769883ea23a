// How the conformance suite is instantiated: the exhaustive sweep holds the whole cross product
// the backends' own sweeps covered, every gemm case is checked on a second call too, and ctest has
// an instance for every registered backend and every instruction-set tag of the CPU backend.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>

#include "backends/cpu/cpu_isa.h"
#include "conformance/conformance.h"
#include "core/registry.h"
#include "tests/broken_backends/broken_backends.h"

using namespace twinbit;
using namespace twinbit::conformance;

namespace {

std::set<std::string> names_of(const std::vector<Case>& cases) {
  std::set<std::string> names;
  for (const Case& c : cases) names.insert(c.name());
  return names;
}

std::vector<std::string> ctest_instance_specs() {
  std::vector<std::string> specs;
  std::stringstream in(TWINBIT_CONFORMANCE_SPECS);  // '|'-separated, from conformance/CMakeLists.txt
  for (std::string s; std::getline(in, s, '|');) specs.push_back(s);
  return specs;
}

}  // namespace

TEST_SUITE("conformance") {

TEST_CASE("exhaustive sweep: every M x N x K of both products for q8/q4 x f32/i8, and all of the full sweep") {
  CaseOptions o;
  o.sweep = Sweep::exhaustive;
  o.random_cases = 0;
  const std::vector<Case> cases = generate_cases(o);
  const std::set<std::string> names = names_of(cases);
  CHECK(names.size() == cases.size());
  const std::vector<int64_t> ms = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 32, 33, 64};
  struct Product {
    std::vector<int64_t> ns, ks;
  };
  const Product products[] = {{{1, 3, 31, 32, 33, 255, 256, 257, 1000}, {32, 64, 96, 2048, 6144}},
                              {{1, 31, 33, 257}, {1, 17, 31, 33, 63, 100, 1000, 2047, 2049}}};
  int64_t missing = 0, product_cases = 0;
  for (const Product& p : products) {
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        for (int64_t m : ms) {
          for (int64_t n : p.ns) {
            for (int64_t k : p.ks) {
              ++product_cases;
              const std::string name = gemm_case(prec, mode, m, n, k).name();
              if (names.count(name) == 0) {
                ++missing;
                FAIL_CHECK("missing " << name);
              }
            }
          }
        }
      }
    }
  }
  CHECK(product_cases == 2520 + 2016);
  CHECK(missing == 0);
  o.sweep = Sweep::full;
  int64_t full_missing = 0;
  const std::vector<Case> full = generate_cases(o);
  for (const Case& c : full) full_missing += names.count(c.name()) == 0;
  CHECK(full_missing == 0);
  CHECK(cases.size() > full.size());
  o.random_cases = 10;  // the random part comes on top, as with every sweep
  CHECK(generate_cases(o).size() == full.size() + 10);
}

TEST_CASE("second call on one binding: broken_second_call differs in y_call2 at (0, 0), 1 ulp; gemv unaffected") {
  tb_backend raw{};
  tb_error err{};
  REQUIRE(tb_backend_create_broken_second_call(TB_BACKEND_ABI_VERSION, &raw, &err, nullptr) == TB_OK);
  auto adopted = Backend::adopt(raw);
  REQUIRE(adopted.ok());
  const Backend b = std::move(adopted).value();
  const std::vector<Case> cases = {gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96),
                                   gemm_case(TB_PREC_Q4, TB_ACT_I8, 1, 257, 100),
                                   gemv_case(false, 33, 100)};
  const Report r = run_suite(b, cases, SuiteOptions{});
  INFO(format_text(r));
  CHECK(r.totals.differ == 2);
  CHECK(r.totals.equal == 1);
  CHECK_FALSE(r.passed());
  for (size_t i = 0; i < 2; ++i) {
    const CaseResult& c = r.results[i];
    CHECK(c.verdict == Verdict::differ);
    CHECK(c.mismatch.first_output == "y_call2");
    CHECK(c.mismatch.differing == 1);
    CHECK(c.mismatch.first_m == 0);
    CHECK(c.mismatch.first_n == 0);
    CHECK(c.mismatch.max_ulp == 1);
  }
  CHECK(r.results[2].verdict == Verdict::equal);
  CHECK(format_text(r).find("first at y_call2(m 0, n 0)") != std::string::npos);
}

TEST_CASE("ctest instances: one for every built-in backend, and for cpu one per compiled instruction-set tag") {
  const std::vector<std::string> specs = ctest_instance_specs();
  REQUIRE_FALSE(specs.empty());
  for (const BackendEntry& e : builtin_backends()) {
    const std::string name = e.name;
    bool found = false;
    for (const std::string& s : specs) found |= s == name || s.rfind(name + ",", 0) == 0;
    CHECK_MESSAGE(found, "no conformance instance for the built-in backend " << name);
  }
  for (cpu::Isa isa : cpu::compiled_isas()) {
    const std::string want = std::string("cpu,isa=") + cpu::isa_name(isa);
    bool found = false;
    for (const std::string& s : specs) found |= s == want;
    CHECK_MESSAGE(found, "no conformance instance " << want);
  }
}

}  // TEST_SUITE
