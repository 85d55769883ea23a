// The conformance suite on the npu_layout backend for the shapes its sweeps leave out: K past one
// B segment of 8192 (8224, 11008), N past one matmul's 4096, M across the row tiles - both
// precisions, I8 - and a K % 32 != 0 case that must be unsupported with an exact fallback. (The
// generated sweeps run as the ctest entries conformance_npu_layout and
// conformance_npu_layout_claimed; their K stays at or below 6176 when K % 32 == 0.)
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "conformance/conformance.h"
#include "core/registry.h"

namespace twinbit::conformance {

TEST_CASE("npu_layout conformance: K > 8192 in segments, N > 4096, M 1..33, q8 q4 i8: 0 differ") {
  auto be = create_backend(std::string_view("npu_layout"));
  REQUIRE(be.ok());
  std::vector<Case> cases;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (int64_t m : {1, 33}) {  // two B segments: 8192 + 32 k, and 8192 + 2816 k
      cases.push_back(gemm_case(prec, TB_ACT_I8, m, 33, 11008));
      cases.push_back(gemm_case(prec, TB_ACT_I8, m, 257, 8224));
    }
    cases.push_back(gemm_case(prec, TB_ACT_I8, 2, 257, 11008));
    cases.push_back(gemm_case(prec, TB_ACT_I8, 5, 4130, 64));     // two matmuls' worth of N on one core
    cases.push_back(batch_case(prec, TB_ACT_I8, 9, 257, 11008));  // rows alone = rows together
    cases.push_back(gemm_case(prec, TB_ACT_I8, 3, 40, 8300));     // K % 32 != 0: unsupported
  }
  SuiteOptions o;
  o.seed = 14;
  const Report r = run_suite(be.value(), cases, o);
  INFO(format_text(r));
  CHECK(r.passed());
  CHECK(r.totals.differ == 0);
  CHECK(r.totals.error == 0);
  CHECK(r.totals.equal == static_cast<int64_t>(cases.size()) - 2);
  CHECK(r.totals.unsupported == 2);
  CHECK(r.totals.fallback_failed == 0);
}

}  // namespace twinbit::conformance
