// The runtime with a profile (core/runtime/runtime.h): the calibrated plan places calls by the
// cost model, splits across two CPU specs give the reference bits (memcmp), a backend the profile
// does not cover or measured elsewhere is an error at open, overrides still come first; and
// calibrate() itself (quick sweep) on two CPU specs, in process.
#include <doctest/doctest.h>

#include "core/registry.h"
#include "core/runtime/calibrate.h"
#include "core/runtime/overrides.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {
namespace {

using runtime::BackendProfile;
using runtime::GemmCost;
using runtime::Profile;
using runtime::Runtime;
using runtime::RuntimeOptions;

// A profile entry for `spec` with the identity of the backend it creates here.
BackendProfile measured_as(const std::string& spec, double fixed_us, double bytes_per_s, double flops_per_s) {
  auto b = create_backend(spec);
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  BackendProfile p{spec, b->name(), b->device(), {}};
  for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) p.costs.push_back(GemmCost{mode, prec, fixed_us, bytes_per_s, flops_per_s});
  }
  return p;
}

Profile profile_of(std::vector<BackendProfile> backends) {
  Profile p;
  p.machine = runtime::this_machine();
  p.date = runtime::utc_now_iso8601();
  p.twinbit_version = runtime::twinbit_version();
  p.backends = std::move(backends);
  p.source = "hand-made.json";
  return p;
}

Result<std::unique_ptr<Runtime>> open_with(std::vector<std::string> backends, Profile profile, const std::string& overrides = "") {
  RuntimeOptions o;
  o.backends = std::move(backends);
  o.profile = std::move(profile);
  auto rules = runtime::parse_overrides(overrides, "ov.txt");
  REQUIRE(rules.ok());
  o.overrides = rules.value();
  return Runtime::open(runtime_test_artifact(), o);
}

}  // namespace

TEST_SUITE("runtime") {

TEST_CASE("runtime_with_a_profile_splits_two_equal_cpu_backends_with_the_reference_bits") {
  const std::string other = best_cpu_spec() == "cpu,threads=2" ? "cpu,isa=sse2" : best_cpu_spec();
  const std::vector<std::string> specs{"cpu,isa=sse2", other};
  // Equal costs: every call of more than one strip is worth splitting, except where the fixed
  // cost dominates (the margin keeps those whole).
  auto rt = open_with(specs, profile_of({measured_as(specs[0], 1.0, 1e8, 1e9), measured_as(specs[1], 1.0, 1e8, 1e9)}));
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  Runtime& r = *rt.value();
  REQUIRE(r.profile() != nullptr);
  for (const artifact::Entry& e : r.artifact().entries()) {
    if (e.kind != TB_WEIGHTS_STRIPS) continue;
    for (int64_t m : {1, 5}) {
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        auto d = r.decide(e.name, m, mode);
        REQUIRE(d.ok());
        INFO(e.name, " m=", m);
        REQUIRE(d->predicted_us.size() == 2);  // both specs are named cpu: no plain cpu is added
        CHECK(d->predicted_choice_us.has_value());
        CHECK(d->why.rfind("calibrated: ", 0) == 0);
        if (e.n > 32) {
          CHECK(d->placement.is_split());
          for (const auto& share : runtime::column_shares(d->placement, e.n)) CHECK(share.begin % 32 == 0);
        }
        check_runtime_bits(r, e.name, m, mode, 11 + static_cast<uint64_t>(m));
      }
    }
  }
  bool split_ran = false;
  for (const auto& entry : r.report()) split_ran |= entry.placement.find('+') != std::string::npos;
  CHECK(split_ran);
}

TEST_CASE("runtime_with_a_profile_follows_the_cost_model_and_overrides_still_come_first") {
  // sse2: low fixed cost, slow; the other: high fixed cost, 100x the rates. Small calls stay on
  // sse2, big ones go to the other (the threshold rule keeps all of this artifact's M = 1 calls
  // on the CPU backend, sse2 here, whatever the costs). A profile may measure more backends than
  // the runtime has.
  const std::vector<std::string> specs{"cpu,isa=sse2", "cpu,threads=1"};
  auto rt = open_with(specs, profile_of({measured_as("cpu", 1e6, 1e6, 1e6), measured_as(specs[0], 1.0, 1e9, 1e10),
                                         measured_as(specs[1], 500.0, 1e11, 1e12)}),
                      "attn_q.*=cpu,threads=1");
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  auto small = rt.value()->decide("attn_k.q8", 1, TB_ACT_F32);  // 128 x 256: ~70 KB
  REQUIRE(small.ok());
  CHECK(runtime::placement_text(small->placement, rt.value()->backend_labels()) == "cpu,isa=sse2");
  auto big = rt.value()->decide("lm_head.q4", 32, TB_ACT_I8);  // 1000 x 256, 16 MFLOP
  REQUIRE(big.ok());
  CHECK(runtime::placement_text(big->placement, rt.value()->backend_labels()) == "cpu,threads=1");
  CHECK(big->why.find("-> cpu,threads=1") != std::string::npos);
  check_runtime_bits(*rt.value(), "lm_head.q4", 32, TB_ACT_I8, 3);
  auto overridden = rt.value()->decide("attn_q.q8", 1, TB_ACT_F32);  // the model says sse2
  REQUIRE(overridden.ok());
  CHECK(runtime::placement_text(overridden->placement, rt.value()->backend_labels()) == "cpu,threads=1");
  CHECK(overridden->why.rfind("override ov.txt line 1", 0) == 0);
  CHECK_FALSE(overridden->predicted_choice_us.has_value());
  REQUIRE(overridden->predicted_us.size() == 2);  // the predictions are still shown
  CHECK(*overridden->predicted_us[0] < *overridden->predicted_us[1]);
}

TEST_CASE("runtime_refuses_a_profile_that_does_not_cover_its_backends") {
  auto missing = open_with({"cpu", "cpu,isa=sse2"}, profile_of({measured_as("cpu", 1, 1e9, 1e9)}));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == TB_INVALID_ARGUMENT);
  CHECK(missing.status().message() ==
        "profile hand-made.json has no measurements for backend 'cpu,isa=sse2'; run twinbit calibrate --backend cpu,isa=sse2");
  BackendProfile elsewhere = measured_as("cpu", 1, 1e9, 1e9);
  elsewhere.device = "Another CPU (64 threads, avx512bw)";
  auto moved = open_with({"cpu"}, profile_of({elsewhere}));
  REQUIRE_FALSE(moved.ok());
  CHECK(moved.status().message().find("profile hand-made.json measured backend 'cpu' as cpu on 'Another CPU (64 threads, avx512bw)', but here it is cpu on") == 0);
}

TEST_CASE("calibrate_quick_measures_two_cpu_specs_and_the_runtime_plans_with_the_result") {
  std::vector<std::string> lines;
  runtime::CalibrateOptions o;
  o.quick = true;
  o.progress = [&](const std::string& line) { lines.push_back(line); };
  auto p = runtime::calibrate({"cpu,isa=sse2", "cpu"}, o);
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(p->source == "calibrated in this process");
  CHECK(p->twinbit_version == runtime::twinbit_version());
  CHECK(p->machine.cores >= 1);
  REQUIRE(p->backends.size() == 2);
  CHECK(p->backends[0].spec == "cpu,isa=sse2");
  CHECK(p->backends[0].device.find("sse2") != std::string::npos);
  for (const BackendProfile& b : p->backends) {
    CHECK(b.name == "cpu");
    CHECK(b.costs.size() == 4);
    for (const GemmCost& c : b.costs) {
      CHECK(c.fixed_us >= 0.0);
      CHECK(c.bytes_per_s > 0.0);
      CHECK(c.flops_per_s > 0.0);
      CHECK(std::isfinite(c.bytes_per_s + c.flops_per_s + c.fixed_us));
    }
  }
  // 3 repetitions x 20 points (4 probes and 16 shapes), one line each, in order; then the pair's
  // split in each of the 4 (mode, prec).
  REQUIRE(lines.size() == 64);
  CHECK(lines.front().rfind("calibrate: rep 1/3, shape 1/20 (32 x 32, M 1, f32 q8) on cpu,isa=sse2, cpu", 0) == 0);
  CHECK(lines[59].rfind("calibrate: rep 3/3, shape 20/20", 0) == 0);
  CHECK(lines.back() == "calibrate: split cpu,isa=sse2 + cpu, i8 q4");
  // What it measured, the runtime accepts (same specs, same identities) and plans with.
  auto rt = open_with({"cpu,isa=sse2", "cpu"}, p.value());
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  auto d = rt.value()->decide("ffn_gate_up.q8", 32, TB_ACT_I8);
  REQUIRE(d.ok());
  CHECK(d->why.rfind("calibrated: cpu,isa=sse2 ", 0) == 0);
  check_runtime_bits(*rt.value(), "ffn_gate_up.q8", 32, TB_ACT_I8, 5);

  auto twice = runtime::calibrate({"cpu", "cpu"}, o);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("backend 'cpu' is listed twice") != std::string::npos);
  auto bad = runtime::calibrate({"cpu,threads=0"}, o);
  REQUIRE_FALSE(bad.ok());
  auto nothing = runtime::calibrate({"null"}, o);  // declines every gemm: measured, no costs
  REQUIRE(nothing.ok());
  CHECK(nothing->backends.at(0).costs.empty());
}

}  // TEST_SUITE
}  // namespace twinbit::test
