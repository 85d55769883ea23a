// The runtime (core/runtime): routing by the threshold and by overrides (first match wins),
// column splits across CPU backends of different instruction sets with random cut fractions,
// fallback from a backend that implements nothing, override errors quoting the text, and
// concurrent calls. Every output is compared with the scalar reference of the whole projection by
// memcmp.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <thread>

#include "core/runtime/overrides.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {
namespace {

using runtime::Runtime;
using runtime::RuntimeOptions;

std::unique_ptr<Runtime> open_runtime(std::vector<std::string> backends, const std::string& overrides = "") {
  RuntimeOptions o;
  o.backends = std::move(backends);
  auto rules = runtime::parse_overrides(overrides, "test overrides");
  REQUIRE_MESSAGE(rules.ok(), rules.status().to_string());
  o.overrides = rules.value();
  auto rt = Runtime::open(runtime_test_artifact(), o);
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  return std::move(rt.value());
}

Status open_error(std::vector<std::string> backends, const std::string& overrides) {
  RuntimeOptions o;
  o.backends = std::move(backends);
  auto rules = runtime::parse_overrides(overrides, "ov.txt");
  if (!rules.ok()) return rules.status();
  o.overrides = rules.value();
  auto rt = Runtime::open(runtime_test_artifact(), o);
  return rt.ok() ? Status() : rt.status();
}

std::string fraction_text(int thousandths) { return Format("%d.%03d", thousandths / 1000, thousandths % 1000); }

}  // namespace

TEST_SUITE("runtime") {

TEST_CASE("runtime_threshold_keeps_small_calls_on_the_cpu_and_sends_big_ones_to_the_next_backend") {
  auto rt = open_runtime({"cpu", "cpu,isa=sse2"});
  CHECK(rt->cpu_backend() == 0);
  auto small = rt->decide("lm_head.q8", 1, TB_ACT_F32);  // 2*1*1000*256 = 512000
  REQUIRE(small.ok());
  CHECK(small->placement.parts.size() == 1);
  CHECK(small->placement.parts[0].backend == 0);
  CHECK(small->why.find("threshold") != std::string::npos);
  auto big = rt->decide("lm_head.q8", 32, TB_ACT_F32);  // 16384000 >= 1e7
  REQUIRE(big.ok());
  CHECK(big->placement.parts[0].backend == 1);
  auto tiny = rt->decide("attn_k.q4", 32, TB_ACT_I8);  // 2*32*128*256 = 2097152
  REQUIRE(tiny.ok());
  CHECK(tiny->placement.parts[0].backend == 0);
  // No CPU backend listed: one is added last and small calls go there.
  auto only_sse2 = open_runtime({"cpu,isa=sse2"});
  CHECK(only_sse2->backend_labels().size() == 1);
  auto added = open_runtime({"null"});
  CHECK(added->backend_labels() == std::vector<std::string>{"null", "cpu"});
  auto declined = added->decide("lm_head.q8", 32, TB_ACT_F32);
  REQUIRE(declined.ok());
  CHECK(declined->placement.parts[0].backend == 1);
  CHECK(declined->why.find("no other backend supports it") != std::string::npos);
  CHECK(declined->fallbacks == 0);
}

TEST_CASE("runtime_default_plan_leaves_an_emulated_device_out_and_an_override_still_reaches_it") {
  // npu_layout on a machine without the chip is its host emulator (tag "emulated"): the same bits
  // as the CPU backend, slower. Listed first, it must not take the big I8 calls by default.
  auto rt = open_runtime({"npu_layout", "cpu"});
  REQUIRE(rt->cpu_backend() == 1);
  auto big = rt->decide("lm_head.q8", 32, TB_ACT_I8);  // 16384000 >= 1e7, npu_layout supports it
  REQUIRE(big.ok());
  CHECK(big->placement.parts[0].backend == 1);
  CHECK(big->why.find("npu_layout is emulated on the host") != std::string::npos);
  CHECK(big->fallbacks == 0);
  check_runtime_bits(*rt, "lm_head.q8", 32, TB_ACT_I8, 21);
  auto told = open_runtime({"npu_layout", "cpu"}, "lm_head.* = npu_layout\n");
  auto placed = told->decide("lm_head.q8", 32, TB_ACT_I8);
  REQUIRE(placed.ok());
  CHECK(placed->placement.parts[0].backend == 0);
  check_runtime_bits(*told, "lm_head.q8", 32, TB_ACT_I8, 22);
}

TEST_CASE("runtime_overrides_first_match_wins_over_the_threshold") {
  auto rt = open_runtime({"cpu", "cpu,isa=sse2"}, "# lm_head stays where it is told\n"
                                                  "lm_head.q8 = cpu\n\n"
                                                  "lm_head.* = cpu,isa=sse2\n");
  auto q8 = rt->decide("lm_head.q8", 32, TB_ACT_F32);
  REQUIRE(q8.ok());
  CHECK(q8->placement.parts[0].backend == 0);
  CHECK(q8->why.find("test overrides line 2") != std::string::npos);
  auto q4 = rt->decide("lm_head.q4", 1, TB_ACT_F32);
  REQUIRE(q4.ok());
  CHECK(q4->placement.parts[0].backend == 1);
  CHECK(q4->why.find("test overrides line 4") != std::string::npos);
  auto other = rt->decide("ffn_down.q8", 1, TB_ACT_F32);
  REQUIRE(other.ok());
  CHECK(other->why.find("threshold") != std::string::npos);
  check_runtime_bits(*rt, "lm_head.q4", 3, TB_ACT_F32, 11);
  check_runtime_bits(*rt, "lm_head.q8", 32, TB_ACT_I8, 12);
}

TEST_CASE("runtime_column_splits_with_random_cuts_give_the_bits_of_the_whole") {
  const std::string best = best_cpu_spec();
  const std::vector<std::string> backends = {"cpu,isa=sse2", best, "cpu,threads=1"};
  const std::vector<std::string> entries = {"lm_head.q8", "lm_head.q4", "ffn_gate_up.q4", "attn_k.q8", "ffn_down.q8"};
  std::mt19937_64 rng(2026);
  for (int round = 0; round < 4; ++round) {
    std::string rules;
    for (const std::string& entry : entries) {
      const int a = 1 + static_cast<int>(rng() % 998);
      if (round % 2 == 0) {
        rules += entry + "=cpu,isa=sse2*" + fraction_text(a) + "+" + best + "*" + fraction_text(1000 - a) + "\n";
      } else {
        const int b = 1 + static_cast<int>(rng() % static_cast<uint64_t>(999 - a));
        rules += entry + "=" + best + "*" + fraction_text(a) + "+cpu,threads=1*" + fraction_text(b) +
                 "+cpu,isa=sse2*" + fraction_text(1000 - a - b) + "\n";
      }
    }
    CAPTURE(rules);
    auto rt = open_runtime(backends, rules);
    for (const std::string& entry : entries) {
      for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{32}}) {
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) check_runtime_bits(*rt, entry, m, mode, rng());
      }
    }
    for (const auto& r : rt->report()) {
      const bool placed = std::find(entries.begin(), entries.end(), r.entry) != entries.end();
      CHECK(r.calls == (placed ? 6 : 0));  // 3 M x 2 modes
      CHECK(r.fallbacks == 0);
    }
  }
}

TEST_CASE("runtime_column_shares_cut_at_multiples_of_32_with_the_ragged_strip_last") {
  runtime::Placement p{{{0, 0.5}, {1, 0.25}, {2, 0.25}}};
  auto shares = runtime::column_shares(p, 1000);  // 32 strips: 16, 8, 8
  REQUIRE(shares.size() == 3);
  CHECK(shares[0].begin == 0);
  CHECK(shares[0].count == 512);
  CHECK(shares[1].begin == 512);
  CHECK(shares[1].count == 256);
  CHECK(shares[2].begin == 768);
  CHECK(shares[2].count == 232);
  // A share that rounds to no column runs nothing; the others still cover every column.
  runtime::Placement q{{{0, 0.01}, {1, 0.99}}};
  auto two = runtime::column_shares(q, 64);
  REQUIRE(two.size() == 1);
  CHECK(two[0].part == 1);
  CHECK(two[0].count == 64);
}

TEST_CASE("runtime_fallback_from_a_backend_that_implements_nothing_keeps_the_bits") {
  auto rt = open_runtime({"null", "cpu"}, "lm_head.q8=null*0.5+cpu*0.5\n*=null\n");
  auto d = rt->decide("attn_q.q8", 1, TB_ACT_F32);
  REQUIRE(d.ok());
  CHECK(d->placement.parts[0].backend == 1);
  CHECK(d->fallbacks == 1);
  CHECK(d->why.find("fallback: null declined") != std::string::npos);
  check_runtime_bits(*rt, "attn_q.q8", 1, TB_ACT_F32, 1);
  check_runtime_bits(*rt, "attn_q.q8", 7, TB_ACT_I8, 2);
  check_runtime_bits(*rt, "ffn_down.q4", 32, TB_ACT_I8, 3);
  check_runtime_bits(*rt, "lm_head.q8", 32, TB_ACT_F32, 4);
  check_runtime_bits(*rt, "lm_head.q8", 2, TB_ACT_I8, 5);
  for (const auto& r : rt->report()) {
    INFO(r.entry);
    if (r.entry == "attn_q.q8") {
      CHECK(r.calls == 2);
      CHECK(r.fallbacks == 2);
      CHECK(r.placement == "cpu");
    } else if (r.entry == "lm_head.q8") {
      CHECK(r.calls == 2);
      CHECK(r.fallbacks == 2);  // one part of two, per call
      CHECK(r.placement == "cpu[0:512]+cpu[512:1000]");
    } else if (r.entry == "ffn_down.q4") {
      CHECK(r.fallbacks == 1);
    }
  }
}

TEST_CASE("runtime_fallback_at_the_call_when_supports_accepted") {
  // The plugin accepts every op at supports(), binds, and then declines every gemm: the plan
  // keeps it, the call falls back to the next of the default order, and the bits stay.
  const std::string plugin = TWINBIT_DECLINES_AT_CALL_PLUGIN;
  auto rt = open_runtime({"cpu", plugin}, "attn_v.q4=" + plugin + "*0.5+cpu*0.5\n");
  auto planned = rt->decide("lm_head.q8", 32, TB_ACT_F32);  // above the threshold: the plugin
  REQUIRE(planned.ok());
  CHECK(planned->placement.parts[0].backend == 1);
  CHECK(planned->fallbacks == 0);
  check_runtime_bits(*rt, "lm_head.q8", 32, TB_ACT_F32, 21);
  check_runtime_bits(*rt, "lm_head.q4", 32, TB_ACT_I8, 22);
  check_runtime_bits(*rt, "attn_v.q4", 3, TB_ACT_I8, 23);
  check_runtime_bits(*rt, "attn_q.q8", 1, TB_ACT_F32, 24);  // below the threshold: the CPU, no fallback
  for (const auto& r : rt->report()) {
    INFO(r.entry);
    if (r.entry == "lm_head.q8" || r.entry == "lm_head.q4") {
      CHECK(r.calls == 1);
      CHECK(r.fallbacks == 1);
      CHECK(r.placement == "cpu");
    } else if (r.entry == "attn_v.q4") {
      CHECK(r.fallbacks == 1);
      CHECK(r.placement == "cpu[0:64]+cpu[64:128]");
    } else if (r.entry == "attn_q.q8") {
      CHECK(r.fallbacks == 0);
    }
  }
}

TEST_CASE("runtime_i8_quantises_once_per_call_on_the_first_backend_of_the_placement") {
  const std::string plugin = TWINBIT_COUNTS_QUANTIZE_PLUGIN;
  auto rt = open_runtime({"cpu", "cpu,isa=sse2", plugin},
                         "lm_head.q8=" + plugin + "*0.5+cpu*0.25+cpu,isa=sse2*0.25\n"
                         "lm_head.q4=cpu*0.5+" + plugin + "*0.5\n");
  auto b = create_backend(plugin);
  REQUIRE(b.ok());
  auto count = reinterpret_cast<int64_t (*)()>(b->proc("test.quantize_calls"));
  REQUIRE(b->proc("test.quantize_calls") != nullptr);
  const int64_t before = count();
  check_runtime_bits(*rt, "lm_head.q8", 5, TB_ACT_I8, 31);  // three parts, one quantisation
  CHECK(count() == before + 1);
  check_runtime_bits(*rt, "lm_head.q8", 32, TB_ACT_I8, 32);
  CHECK(count() == before + 2);
  check_runtime_bits(*rt, "lm_head.q8", 4, TB_ACT_F32, 33);  // F32 mode: none
  check_runtime_bits(*rt, "lm_head.q4", 4, TB_ACT_I8, 34);   // the CPU part is first: the CPU quantises
  CHECK(count() == before + 2);
}

TEST_CASE("runtime_override_errors_quote_the_text_and_the_line") {
  auto expect = [](const Status& s, tb_code code, std::vector<std::string> parts) {
    CAPTURE(s.to_string());
    CHECK(s.code() == code);
    for (const std::string& p : parts) CHECK(s.message().find(p) != std::string::npos);
  };
  expect(open_error({"cpu"}, "lm_head.q8"), TB_INVALID_ARGUMENT, {"ov.txt line 1", "'lm_head.q8'", "no '='"});
  expect(open_error({"cpu"}, "# c\n =cpu"), TB_INVALID_ARGUMENT, {"ov.txt line 2", "'=cpu'", "empty pattern"});
  expect(open_error({"cpu"}, "x=cpu*0.5+cpu,isa=sse2*0.4"), TB_INVALID_ARGUMENT, {"line 1", "sum to 0.9"});
  expect(open_error({"cpu"}, "x=cpu*abc"), TB_INVALID_ARGUMENT, {"fraction 'abc'"});
  expect(open_error({"cpu"}, "x=cpu*0"), TB_INVALID_ARGUMENT, {"fraction '0'"});
  expect(open_error({"cpu"}, "x=cpu+cpu,isa=sse2"), TB_INVALID_ARGUMENT, {"part 'cpu' has no '*FRACTION'"});
  expect(open_error({"cpu"}, "x=cpu,"), TB_INVALID_ARGUMENT, {"'x=cpu,'"});
  expect(open_error({"cpu"}, "x="), TB_INVALID_ARGUMENT, {"'x='"});
  expect(open_error({"cpu"}, "\n\nlm_head.*=cpu,isa=sse2"), TB_INVALID_ARGUMENT,
         {"ov.txt line 3", "'lm_head.*=cpu,isa=sse2'", "backend 'cpu,isa=sse2' is not one of the runtime's backends (cpu)"});
  expect(open_error({"cpu"}, "lm_head.*=cpu\nblk.*=cpu"), TB_INVALID_ARGUMENT,
         {"ov.txt line 2", "'blk.*=cpu'", "pattern 'blk.*' matches no entry"});
  expect(open_error({"cpu", "cpu"}, ""), TB_INVALID_ARGUMENT, {"listed twice"});
  auto rule = runtime::parse_override_rule("attn_*=cuda:x", "--override 1");
  expect(rule.status(), TB_INVALID_ARGUMENT, {"--override 1", "'attn_*=cuda:x'"});
  auto missing = runtime::read_overrides_file("/nonexistent/overrides.txt");
  expect(missing.status(), TB_UNAVAILABLE, {"/nonexistent/overrides.txt"});
  // Not a strip set, or no such entry.
  auto rt = open_runtime({"cpu"});
  std::vector<float> x(64), y(64);
  expect(rt->gemm("ssm_beta", 1, TB_ACT_F32, x.data(), 40, y.data(), 48), TB_INVALID_ARGUMENT, {"'ssm_beta'", "not a strip set"});
  expect(rt->gemm("nope", 1, TB_ACT_F32, x.data(), 40, y.data(), 48), TB_INVALID_ARGUMENT, {"no entry 'nope'"});
  expect(rt->gemm("attn_q.q8", 0, TB_ACT_F32, x.data(), 256, y.data(), 256), TB_INVALID_ARGUMENT, {});
  // A split's parts each see only their columns: the runtime checks the whole row's strides.
  auto split = open_runtime({"cpu", "cpu,isa=sse2"}, "lm_head.q8=cpu*0.5+cpu,isa=sse2*0.5\n");
  std::vector<float> xs(256), ys(1000);
  expect(split->gemm("lm_head.q8", 1, TB_ACT_F32, xs.data(), 256, ys.data(), 512), TB_INVALID_ARGUMENT, {"ldy 512 >= N"});
  expect(split->gemm("lm_head.q8", 1, TB_ACT_I8, xs.data(), 200, ys.data(), 1000), TB_INVALID_ARGUMENT, {"ldx 200 must be >= K"});
  expect(split->gemm("lm_head.q8", 1, TB_ACT_F32, nullptr, 256, ys.data(), 1000), TB_INVALID_ARGUMENT, {"must not be null"});
}

TEST_CASE("runtime_concurrent_calls_from_4_threads_equal_the_reference") {
  const std::string best = best_cpu_spec();
  auto rt = open_runtime({"cpu,isa=sse2", best}, "lm_head.*=cpu,isa=sse2*0.375+" + best + "*0.625\n");
  const std::vector<std::string> entries = {"lm_head.q8", "lm_head.q4", "ffn_gate_up.q8", "attn_v.q4"};
  struct Job {
    std::string entry;
    int64_t m;
    tb_act_mode mode;
    std::vector<float> x, want;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < 16; ++i) {
    Job j{entries[i % entries.size()], i % 3 == 0 ? 32 : static_cast<int64_t>(1 + i), i % 2 ? TB_ACT_I8 : TB_ACT_F32, {}, {}};
    const artifact::Entry* e = rt->artifact().find(j.entry);
    j.x = random_activations(j.m * e->k, 100 + i);
    j.want = reference_gemm(rt->artifact(), j.entry, j.m, j.mode, j.x);
    jobs.push_back(std::move(j));
  }
  std::vector<int> wrong(4, 0), failed(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        for (size_t i = static_cast<size_t>(t % 2); i < jobs.size(); i += 2) {  // each job on two threads
          const Job& j = jobs[i];
          const artifact::Entry* e = rt->artifact().find(j.entry);
          std::vector<float> y(j.want.size());
          if (!rt->gemm(j.entry, j.m, j.mode, j.x.data(), e->k, y.data(), e->n).ok()) ++failed[t];
          else if (std::memcmp(y.data(), j.want.data(), y.size() * sizeof(float)) != 0) ++wrong[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    CHECK(failed[t] == 0);
    CHECK(wrong[t] == 0);
  }
  int64_t calls = 0;
  for (const auto& r : rt->report()) calls += r.calls;
  CHECK(calls == 4 * 3 * 8);
}

}  // TEST_SUITE

}  // namespace twinbit::test
