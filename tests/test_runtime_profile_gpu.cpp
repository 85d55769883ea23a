// The calibrated plan with the CUDA backend (test suite "gpu": SKIPPED without a device):
// calibrate() measures cpu and cuda, the runtime plans with the result, and every call - wherever
// the plan sends it, splits included - gives the bits of the reference of the whole (memcmp).
#include <doctest/doctest.h>

#include "core/registry.h"
#include "core/runtime/calibrate.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {

TEST_SUITE("gpu") {

TEST_CASE("gpu runtime: the calibrated plan over cpu and cuda gives the bits of the whole") {
  auto probe = create_backend("cuda");
  if (!probe.ok()) {
    MESSAGE("SKIPPED (no CUDA backend here): " << probe.status().to_string());
    return;
  }
  runtime::CalibrateOptions quick;
  quick.quick = true;
  auto profile = runtime::calibrate({"cpu", "cuda"}, quick);
  REQUIRE_MESSAGE(profile.ok(), profile.status().to_string());
  REQUIRE(profile->find("cuda") != nullptr);
  CHECK(profile->find("cuda")->costs.size() == 4);
  runtime::RuntimeOptions o;
  o.backends = {"cpu", "cuda"};
  o.profile = profile.value();
  auto rt = runtime::Runtime::open(runtime_test_artifact(), o);
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  // An even split forced by equal hand-made costs and no measured split factors (on the H200
  // machine the measured factors keep every split out of the plan), on top of what was measured.
  runtime::Profile equal = profile.value();
  for (auto& b : equal.backends) {
    for (auto& c : b.costs) c = runtime::GemmCost{c.mode, c.prec, 1.0, 1e9, 1e10};
  }
  equal.splits.clear();
  o.profile = equal;
  auto split = runtime::Runtime::open(runtime_test_artifact(), o);
  REQUIRE_MESSAGE(split.ok(), split.status().to_string());
  auto d = split.value()->decide("lm_head.q8", 32, TB_ACT_I8);
  REQUIRE(d.ok());
  CHECK(d->placement.is_split());
  for (runtime::Runtime* r : {rt.value().get(), split.value().get()}) {
    for (const std::string entry : {"lm_head.q8", "lm_head.q4", "ffn_gate_up.q8", "attn_k.q4"}) {
      for (int64_t m : {int64_t{1}, int64_t{32}}) {
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) check_runtime_bits(*r, entry, m, mode, 17 + m);
      }
    }
  }
}

}  // TEST_SUITE
}  // namespace twinbit::test
