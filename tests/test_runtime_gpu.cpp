// The runtime with the CUDA backend (test suite "gpu": SKIPPED without a device): the threshold
// sends big calls to CUDA, column splits CPU + CUDA (and CUDA + CUDA across two devices, when
// the machine has them) with random cut fractions give the bits of the reference of the whole.
#include <doctest/doctest.h>

#include <random>

#include "core/registry.h"
#include "core/runtime/overrides.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {
namespace {

std::unique_ptr<runtime::Runtime> open_gpu_runtime(std::vector<std::string> backends, const std::string& rules) {
  runtime::RuntimeOptions o;
  o.backends = std::move(backends);
  auto parsed = runtime::parse_overrides(rules, "gpu test overrides");
  REQUIRE_MESSAGE(parsed.ok(), parsed.status().to_string());
  o.overrides = parsed.value();
  auto rt = runtime::Runtime::open(runtime_test_artifact(), o);
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  return std::move(rt.value());
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("gpu runtime: threshold to CUDA and CPU + CUDA column splits give the bits of the whole") {
  auto probe = create_backend("cuda");
  if (!probe.ok()) {
    MESSAGE("SKIPPED (no CUDA backend here): " << probe.status().to_string());
    return;
  }
  const std::vector<std::string> entries = {"lm_head.q8", "lm_head.q4", "ffn_gate_up.q8", "attn_k.q4"};
  auto plain = open_gpu_runtime({"cpu", "cuda"}, "");
  auto big = plain->decide("lm_head.q8", 32, TB_ACT_F32);
  REQUIRE(big.ok());
  CHECK(plain->backend_labels()[big->placement.parts[0].backend] == "cuda");
  for (const std::string& entry : entries) {
    for (int64_t m : {int64_t{1}, int64_t{32}}) {
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) check_runtime_bits(*plain, entry, m, mode, 7 + m);
    }
  }
  // Two devices, when there are: the same projection's columns on each.
  const bool two_gpus = create_backend("cuda:1").ok();
  std::mt19937_64 rng(11);
  for (int round = 0; round < 4; ++round) {
    std::vector<std::string> backends = {"cpu", "cuda"};
    std::string rules;
    for (const std::string& entry : entries) {
      const int a = 1 + static_cast<int>(rng() % 998);
      const std::string fa = Format("%d.%03d", a / 1000, a % 1000), fb = Format("%d.%03d", (1000 - a) / 1000, (1000 - a) % 1000);
      rules += entry + "=" + (two_gpus && round % 2 ? "cuda:1" : "cpu") + "*" + fa + "+cuda*" + fb + "\n";
    }
    if (two_gpus) backends.push_back("cuda:1");
    CAPTURE(rules);
    auto rt = open_gpu_runtime(backends, rules);
    for (const std::string& entry : entries) {
      for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{32}}) {
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) check_runtime_bits(*rt, entry, m, mode, rng());
      }
    }
    for (const auto& r : rt->report()) CHECK(r.fallbacks == 0);
  }
}

}  // TEST_SUITE

}  // namespace twinbit::test
