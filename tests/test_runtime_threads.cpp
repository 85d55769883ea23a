// Concurrent calls on one Runtime (core/runtime/runtime.h "THREADS"): 8 threads released at once
// on a fresh runtime, so first binds race; each thread runs every job - the same entries as the
// others and different ones at the same moment - through 3-part and 2-part column splits, a part
// that falls back at the call, the threshold plan, F32 and I8 mode; a ninth thread reads
// decide() and report() meanwhile. Every output is compared with the scalar reference by memcmp,
// and the call and fallback counters with a run of the same jobs on one thread. The CI's
// ThreadSanitizer stage runs this (docs/RUNTIME.md "Threads").
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <latch>
#include <map>
#include <thread>

#include "core/runtime/overrides.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {
namespace {

using runtime::Runtime;

struct Job {
  std::string entry;
  int64_t m;
  tb_act_mode mode;
  std::vector<float> x, want;
};

std::unique_ptr<Runtime> open_threads_runtime() {
  const std::string best = best_cpu_spec();
  const std::string plugin = TWINBIT_DECLINES_AT_CALL_PLUGIN;
  runtime::RuntimeOptions o;
  o.backends = {"cpu,isa=sse2", best, "cpu,threads=1", plugin};
  auto rules = runtime::parse_overrides(
      "lm_head.q8=cpu,isa=sse2*0.25+" + best + "*0.5+cpu,threads=1*0.25\n"  // 3 parts
      "lm_head.q4=" + plugin + "*0.5+" + best + "*0.5\n"                   // one part falls back at the call
      "ffn_gate_up.q8=" + best + "*0.5+cpu,isa=sse2*0.5\n"
      "attn_v.q4=" + plugin + "\n",                                        // the whole call falls back
      "threads overrides");
  REQUIRE_MESSAGE(rules.ok(), rules.status().to_string());
  o.overrides = rules.value();
  auto rt = Runtime::open(runtime_test_artifact(), o);
  REQUIRE_MESSAGE(rt.ok(), rt.status().to_string());
  return std::move(rt.value());
}

// Runs a job, returning 0 when its bits are the reference's, 1 when they differ, 2 on an error.
int run_job(Runtime& rt, const Job& j) {
  const artifact::Entry* e = rt.artifact().find(j.entry);
  std::vector<float> y(j.want.size(), -1.0f);
  if (!rt.gemm(j.entry, j.m, j.mode, j.x.data(), e->k, y.data(), e->n).ok()) return 2;
  return std::memcmp(y.data(), j.want.data(), y.size() * sizeof(float)) == 0 ? 0 : 1;
}

}  // namespace

TEST_SUITE("runtime") {

TEST_CASE("runtime_concurrent_calls_from_8_threads_race_first_binds_splits_fallbacks_and_both_modes") {
  constexpr int kThreads = 8, kReps = 1;
  auto probe = open_threads_runtime();
  // attn_q.q8 and ffn_down.q4 stay on the CPU by the threshold; ffn_gate_up.q4 at M = 32 goes to
  // the next backend.
  const std::vector<std::string> entries = {"lm_head.q8", "lm_head.q4", "ffn_gate_up.q8", "attn_v.q4",
                                            "attn_q.q8",  "ffn_down.q4", "ffn_gate_up.q4"};
  std::vector<Job> jobs;
  uint64_t seed = 500;
  for (const std::string& entry : entries) {
    for (int64_t m : {int64_t{1}, int64_t{32}}) {
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        Job j{entry, m, mode, {}, {}};
        j.x = random_activations(m * probe->artifact().find(entry)->k, ++seed);
        j.want = reference_gemm(probe->artifact(), entry, m, mode, j.x);
        jobs.push_back(std::move(j));
      }
    }
  }
  // The counters one thread gets for one pass over the jobs.
  for (const Job& j : jobs) REQUIRE(run_job(*probe, j) == 0);
  std::map<std::string, runtime::EntryReport> one_pass;
  for (const auto& r : probe->report()) one_pass[r.entry] = r;
  CHECK(one_pass["lm_head.q4"].fallbacks == 4);  // each call's plugin part
  CHECK(one_pass["attn_v.q4"].fallbacks == 4);

  auto rt = open_threads_runtime();  // nothing bound yet: the first binds race
  std::latch start(kThreads + 1);
  std::atomic<int> running{kThreads};
  std::vector<int> wrong(kThreads, 0), failed(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int rep = 0; rep < kReps; ++rep) {
        for (size_t i = 0; i < jobs.size(); ++i) {
          // Thread pairs start at the same job (same entry at once); pairs start apart.
          const int r = run_job(*rt, jobs[(i + static_cast<size_t>(t / 2) * 3) % jobs.size()]);
          wrong[t] += r == 1;
          failed[t] += r == 2;
        }
      }
      running.fetch_sub(1);
    });
  }
  int decide_errors = 0, reads = 0;
  std::thread reader([&] {
    start.arrive_and_wait();
    while (running.load() > 0) {
      for (const std::string& entry : entries) decide_errors += rt->decide(entry, 32, TB_ACT_I8).ok() ? 0 : 1;
      reads += static_cast<int>(rt->report().size());
    }
  });
  for (auto& th : threads) th.join();
  reader.join();
  for (int t = 0; t < kThreads; ++t) {
    CHECK(failed[t] == 0);
    CHECK(wrong[t] == 0);
  }
  CHECK(decide_errors == 0);
  CHECK(reads > 0);
  for (const auto& r : rt->report()) {
    INFO(r.entry);
    CHECK(r.calls == one_pass[r.entry].calls * kThreads * kReps);
    CHECK(r.fallbacks == one_pass[r.entry].fallbacks * kThreads * kReps);
  }
}

}  // TEST_SUITE

}  // namespace twinbit::test
