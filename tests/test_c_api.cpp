// The host C API (include/twinbit/twinbit.h), driven from C (tests/c_api/c_api_calls.c, compiled
// as C): a gemm through it gives the bits of the reference (memcmp) for one backend, a split and
// both modes; bad arguments to every call return their code with a message; the last error is
// per thread; concurrent C calls on one runtime agree with the reference.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/runtime/profile.h"
#include "tests/c_api/c_api_calls.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {
namespace {

std::unique_ptr<artifact::Artifact> open_test_artifact() {
  auto art = artifact::Artifact::open(runtime_test_artifact(), {});
  REQUIRE_MESSAGE(art.ok(), art.status().to_string());
  return std::move(art.value());
}

}  // namespace

TEST_SUITE("c_api") {

TEST_CASE("c_api_gemm_from_c_equals_the_reference_on_one_backend_and_a_split") {
  const std::string path = runtime_test_artifact();
  const auto art = open_test_artifact();
  const std::string best = best_cpu_spec();
  const char* specs[] = {"cpu,isa=sse2", best.c_str()};
  const std::string split = "lm_head.*=cpu,isa=sse2*0.375+" + best + "*0.625\nffn_gate_up.q4=" + best + "\n";
  struct Case {
    const char* entry;
    int64_t m;
    tb_act_mode mode;
    const char* overrides;
    const char* placement_starts;
  };
  const Case cases[] = {
      {"lm_head.q8", 3, TB_ACT_F32, split.c_str(), "cpu,isa=sse2*0.375+"},
      {"lm_head.q4", 32, TB_ACT_I8, split.c_str(), "cpu,isa=sse2*0.375+"},
      {"ffn_gate_up.q4", 5, TB_ACT_I8, split.c_str(), best.c_str()},
      {"attn_q.q8", 1, TB_ACT_F32, nullptr, "cpu,isa=sse2 (threshold"},  // the first cpu spec is the CPU backend
      {"lm_head.q8", 32, TB_ACT_I8, nullptr, best.c_str()},              // above the threshold: the next backend
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    CAPTURE(c.entry);
    CAPTURE(c.m);
    const artifact::Entry* e = art->find(c.entry);
    REQUIRE(e != nullptr);
    const std::vector<float> x = random_activations(c.m * e->k, ++seed);
    const std::vector<float> want = reference_gemm(*art, c.entry, c.m, c.mode, x);
    std::vector<float> got(want.size(), -1.0f);
    char placement[256] = "";
    const tb_code code = c_api_gemm(path.c_str(), specs, 2, c.overrides, nullptr, c.entry, c.m, c.mode, x.data(),
                                    got.data(), placement, sizeof placement);
    REQUIRE_MESSAGE(code == TB_OK, tb_runtime_last_error());
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    CHECK_MESSAGE(std::string(placement).rfind(c.placement_starts, 0) == 0, placement);
  }
}

TEST_CASE("c_api_open_with_a_profile_plans_by_it_and_keeps_the_bits") {
  const std::string best = best_cpu_spec();
  const std::string other = best == "cpu,threads=2" ? "cpu,isa=sse2" : best;
  const char* specs[] = {"cpu,isa=sse2", other.c_str()};
  // Equal costs on both backends: the calibrated plan splits lm_head across them.
  runtime::Profile profile;
  profile.machine = runtime::this_machine();
  profile.date = runtime::utc_now_iso8601();
  profile.twinbit_version = runtime::twinbit_version();
  for (const char* spec : specs) {
    auto b = create_backend(std::string_view(spec));
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    runtime::BackendProfile p{spec, b->name(), b->device(), {}};
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) p.costs.push_back(runtime::GemmCost{mode, prec, 1.0, 1e8, 1e9});
    }
    profile.backends.push_back(std::move(p));
  }
  const testart::TempDir dir;
  const std::string profile_path = dir.path + "/profile.json";
  REQUIRE(runtime::write_profile(profile, profile_path).ok());
  const auto art = open_test_artifact();
  const artifact::Entry* e = art->find("lm_head.q8");
  const std::vector<float> x = random_activations(5 * e->k, 77);
  const std::vector<float> want = reference_gemm(*art, "lm_head.q8", 5, TB_ACT_I8, x);
  std::vector<float> got(want.size(), -1.0f);
  char placement[512] = "";
  REQUIRE_MESSAGE(c_api_gemm(runtime_test_artifact().c_str(), specs, 2, nullptr, profile_path.c_str(), "lm_head.q8", 5,
                             TB_ACT_I8, x.data(), got.data(), placement, sizeof placement) == TB_OK,
                  tb_runtime_last_error());
  CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
  CHECK_MESSAGE(std::string(placement).find("(calibrated: ") != std::string::npos, placement);
  CHECK_MESSAGE(std::string(placement).find('+') != std::string::npos, placement);
  // A profile that is not there: the error names the file.
  tb_runtime* rt = nullptr;
  CHECK(tb_runtime_open(runtime_test_artifact().c_str(), specs, 2, nullptr, "/nonexistent/profile.json", &rt) != TB_OK);
  CHECK(rt == nullptr);
  CHECK(std::string(tb_runtime_last_error()).find("tb_runtime_open: ") != std::string::npos);
  CHECK(std::string(tb_runtime_last_error()).find("/nonexistent/profile.json") != std::string::npos);
}

TEST_CASE("c_api_bad_arguments_return_their_code_and_a_message_naming_what_was_wrong") {
  std::vector<char> failures(8192);
  const int wrong = c_api_bad_calls(runtime_test_artifact().c_str(), failures.data(), failures.size());
  CHECK_MESSAGE(wrong == 0, std::string(failures.data()));
}

TEST_CASE("c_api_last_error_belongs_to_the_calling_thread") {
  tb_runtime* rt = nullptr;
  CHECK(tb_runtime_open(nullptr, nullptr, 0, nullptr, nullptr, &rt) == TB_INVALID_ARGUMENT);
  const std::string mine = tb_runtime_last_error();
  CHECK(mine == "INVALID_ARGUMENT: tb_runtime_open: artifact must not be NULL");
  std::string other_before, other_after;
  std::thread([&] {
    other_before = tb_runtime_last_error();
    int64_t n = 0, k = 0;
    CHECK(tb_runtime_entry_shape(nullptr, "x", &n, &k) == TB_INVALID_ARGUMENT);
    other_after = tb_runtime_last_error();
  }).join();
  CHECK(other_before.empty());
  CHECK(other_after == "INVALID_ARGUMENT: tb_runtime_entry_shape: rt must not be NULL");
  CHECK(tb_runtime_last_error() == mine);  // the other thread's failure left this one's alone
  // A successful call leaves the last error as it was.
  REQUIRE(tb_runtime_open(runtime_test_artifact().c_str(), nullptr, 0, nullptr, nullptr, &rt) == TB_OK);
  CHECK(tb_runtime_last_error() == mine);
  tb_runtime_close(rt);
}

TEST_CASE("c_api_concurrent_gemms_on_one_runtime_equal_the_reference") {
  const auto art = open_test_artifact();
  const std::string best = best_cpu_spec();
  const char* specs[] = {"cpu,isa=sse2", best.c_str()};
  const std::string rules = "lm_head.*=" + best + "*0.5+cpu,isa=sse2*0.5\n";
  tb_runtime* rt = nullptr;
  REQUIRE_MESSAGE(tb_runtime_open(runtime_test_artifact().c_str(), specs, 2, rules.c_str(), nullptr, &rt) == TB_OK,
                  tb_runtime_last_error());
  const char* entries[] = {"lm_head.q8", "attn_v.q4"};
  std::vector<std::vector<float>> xs, wants;
  for (int i = 0; i < 2; ++i) {
    const artifact::Entry* e = art->find(entries[i]);
    xs.push_back(random_activations(4 * e->k, 400 + i));
    wants.push_back(reference_gemm(*art, entries[i], 4, TB_ACT_I8, xs.back()));
  }
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const int i = t % 2;
      int64_t n = 0, k = 0;
      if (tb_runtime_entry_shape(rt, entries[i], &n, &k) != TB_OK) ++wrong[t];
      std::vector<float> y(wants[i].size());
      if (tb_runtime_gemm(rt, entries[i], 4, TB_ACT_I8, xs[i].data(), k, y.data(), n) != TB_OK) ++wrong[t];
      else if (std::memcmp(y.data(), wants[i].data(), y.size() * sizeof(float)) != 0) ++wrong[t];
    });
  }
  for (auto& th : threads) th.join();
  tb_runtime_close(rt);
  for (int t = 0; t < 4; ++t) CHECK(wrong[t] == 0);
}

}  // TEST_SUITE

}  // namespace twinbit::test
