// The model step (core/runtime/model_step.h): its projections in order for both namings, its
// inputs, and its hash against the scalar reference's outputs hashed independently, for a
// placement on one CPU backend and a column split across two.
#include <doctest/doctest.h>

#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/synthetic.h"
#include "core/runtime/model_step.h"
#include "core/runtime/runtime.h"
#include "test_artifact_util.h"
#include "test_model_util.h"
#include "test_runtime_util.h"

using namespace twinbit;
using twinbit::test::layered_options;

TEST_SUITE("runtime") {

TEST_CASE("model_step_projections_in_order_for_both_namings") {
  const testart::TempDir dir;
  REQUIRE(synthetic::write_model(dir.path + "/l3.tbc", layered_options(3, true)).ok());
  auto art = artifact::Artifact::open(dir.path + "/l3.tbc");
  REQUIRE(art.ok());
  auto step = runtime::model_step(**art, TB_PREC_Q4);
  REQUIRE(step.ok());
  CHECK(step->layers == 3);
  REQUIRE(step->projections.size() == 13);
  CHECK(step->projections[0].entry == "blk.0.attn_qkv.q4");
  CHECK(step->projections[1].entry == "blk.0.attn_o.q4");
  CHECK(step->projections[2].entry == "blk.0.ffn_gate_up.q4");
  CHECK(step->projections[3].entry == "blk.0.ffn_down.q4");
  CHECK(step->projections[11].entry == "blk.2.ffn_down.q4");
  CHECK(step->projections[12].entry == "lm_head.q4");
  CHECK(step->projections[2].n == 192);
  uint64_t bytes = 0;
  for (const runtime::StepProjection& p : step->projections) {
    for (const auto& pl : (*art)->find(p.entry)->payloads) bytes += pl.bytes;
  }
  CHECK(step->weight_bytes() == bytes);

  // The single-layer model: its fused entries and lm_head; the unfused ones are not run.
  synthetic::Options single = layered_options(0, false);
  REQUIRE(synthetic::write_model(dir.path + "/single.tbc", single).ok());
  auto one = artifact::Artifact::open(dir.path + "/single.tbc");
  REQUIRE(one.ok());
  auto s1 = runtime::model_step(**one, TB_PREC_Q8);
  REQUIRE(s1.ok());
  CHECK(s1->layers == 0);
  std::vector<std::string> names;
  for (const auto& p : s1->projections) names.push_back(p.entry);
  CHECK(names == std::vector<std::string>{"attn_qkv.q8", "attn_o.q8", "ffn_gate_up.q8", "ffn_down.q8"});

  // A precision the artifact does not have is named.
  synthetic::Options q8only = layered_options(1, false);
  q8only.precisions = {TB_PREC_Q8};
  REQUIRE(synthetic::write_model(dir.path + "/q8.tbc", q8only).ok());
  auto q8 = artifact::Artifact::open(dir.path + "/q8.tbc");
  REQUIRE(q8.ok());
  auto none = runtime::model_step(**q8, TB_PREC_Q4);
  CHECK(none.status().code() == TB_INVALID_ARGUMENT);
  CHECK(none.status().message().find("'blk.0.attn_qkv.q4'") != std::string::npos);
}

TEST_CASE("model_step_hash_equals_the_reference_outputs_hashed_on_every_cpu_placement") {
  const testart::TempDir dir;
  const std::string path = dir.path + "/l2.tbc";
  REQUIRE(synthetic::write_model(path, layered_options(2, true)).ok());
  auto art = artifact::Artifact::open(path);
  REQUIRE(art.ok());
  auto step = runtime::model_step(**art, TB_PREC_Q8);
  REQUIRE(step.ok());
  const std::string split = "*=cpu,isa=sse2*0.5+" + test::best_cpu_spec() + "*0.5";
  for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
    for (int64_t m : {int64_t{1}, int64_t{3}}) {
      CAPTURE(mode);
      CAPTURE(m);
      // The independent recomputation: each projection's reference output, hashed in order.
      runtime::StepBuffers buffers(step.value(), m);
      XXH64_state_t* st = XXH64_createState();
      XXH64_reset(st, 0);
      std::vector<std::vector<float>> want;
      for (size_t i = 0; i < step->projections.size(); ++i) {
        const runtime::StepProjection& p = step->projections[i];
        CHECK(buffers.input(i) == runtime::step_activations(p.entry, m, p.k));
        want.push_back(test::reference_gemm(**art, p.entry, m, mode, buffers.input(i)));
        XXH64_update(st, want.back().data(), want.back().size() * sizeof(float));
      }
      const uint64_t want_hash = XXH64_digest(st);
      XXH64_freeState(st);

      for (const std::vector<std::string>& rules : {std::vector<std::string>{}, std::vector<std::string>{split}}) {
        runtime::RuntimeOptions ro;
        ro.backends = {test::best_cpu_spec(), "cpu,isa=sse2"};
        for (const std::string& r : rules) ro.overrides.push_back(runtime::parse_override_rule(r, "test").value());
        auto rt = runtime::Runtime::open(path, ro);
        REQUIRE(rt.ok());
        buffers.poison();
        const uint64_t poisoned = buffers.hash();
        REQUIRE(buffers.run(**rt, mode).ok());
        for (size_t i = 0; i < want.size(); ++i) {
          CHECK(std::memcmp(buffers.output(i).data(), want[i].data(), want[i].size() * sizeof(float)) == 0);
        }
        CHECK(buffers.hash() == want_hash);
        CHECK(buffers.hash() != poisoned);
      }
    }
  }
}

TEST_CASE("model_step_activations_differ_by_entry_and_m_and_are_finite") {
  const std::vector<float> a = runtime::step_activations("blk.0.attn_o.q8", 2, 64);
  CHECK(a == runtime::step_activations("blk.0.attn_o.q8", 2, 64));
  CHECK(a != runtime::step_activations("blk.1.attn_o.q8", 2, 64));
  const std::vector<float> b = runtime::step_activations("blk.0.attn_o.q8", 1, 128);
  CHECK(std::memcmp(a.data(), b.data(), 128 * sizeof(float)) != 0);
  for (float v : a) CHECK(std::isfinite(v));
}

}  // TEST_SUITE
