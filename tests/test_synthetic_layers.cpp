// The layered synthetic model (artifacts/synthetic.h LAYERED): entry names in order, fused
// ranges and source tensors, distinct weights per layer, --small, and a bad layer count.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/synthetic.h"
#include "test_artifact_util.h"
#include "test_model_util.h"

using namespace twinbit;
using twinbit::test::layered_options;

namespace {

std::vector<std::string> strip_names(const artifact::Artifact& art) {
  std::vector<std::string> names;
  for (const artifact::Entry& e : art.entries()) {
    if (e.kind == TB_WEIGHTS_STRIPS) names.push_back(e.name);
  }
  return names;
}

std::string ranges_text(const artifact::Entry& e) {
  std::string t;
  for (const artifact::FusedRange& r : e.ranges) {
    t += r.name + "[" + std::to_string(r.begin) + "," + std::to_string(r.end) + ") ";
  }
  return t;
}

}  // namespace

TEST_SUITE("artifact") {

TEST_CASE("layered_pack_names_fused_ranges_and_distinct_layers") {
  const testart::TempDir dir;
  synthetic::Options o = layered_options(2, true);
  o.precisions = {TB_PREC_Q8, TB_PREC_Q4};
  REQUIRE(synthetic::write_model(dir.path + "/l2.tbc", o).ok());
  auto art = artifact::Artifact::open(dir.path + "/l2.tbc");
  REQUIRE(art.ok());
  const std::vector<std::string> want = {
      "blk.0.attn_qkv.q8", "blk.0.attn_qkv.q4", "blk.0.attn_o.q8", "blk.0.attn_o.q4",
      "blk.0.ffn_gate_up.q8", "blk.0.ffn_gate_up.q4", "blk.0.ffn_down.q8", "blk.0.ffn_down.q4",
      "blk.1.attn_qkv.q8", "blk.1.attn_qkv.q4", "blk.1.attn_o.q8", "blk.1.attn_o.q4",
      "blk.1.ffn_gate_up.q8", "blk.1.ffn_gate_up.q4", "blk.1.ffn_down.q8", "blk.1.ffn_down.q4",
      "lm_head.q8", "lm_head.q4"};
  CHECK(strip_names(**art) == want);
  // The f32 matrices stay, once.
  CHECK((*art)->find("ssm_beta") != nullptr);
  CHECK((*art)->find("gdn.state") != nullptr);
  const artifact::Entry* qkv = (*art)->find("blk.1.attn_qkv.q8");
  CHECK(ranges_text(*qkv) == "blk.1.attn_q[0,64) blk.1.attn_k[64,96) blk.1.attn_v[96,128) ");
  CHECK(qkv->k == 64);
  CHECK(qkv->source_tensors == std::vector<std::string>{"synthetic.blk.1.attn_q", "synthetic.blk.1.attn_k",
                                                         "synthetic.blk.1.attn_v"});
  const artifact::Entry* gate_up = (*art)->find("blk.0.ffn_gate_up.q4");
  CHECK(ranges_text(*gate_up) == "blk.0.ffn_gate[0,96) blk.0.ffn_up[96,192) ");
  CHECK(ranges_text(*(*art)->find("blk.0.ffn_down.q8")).empty());
  CHECK((*art)->find("blk.0.ffn_down.q8")->k == 96);
  CHECK((*art)->find("lm_head.q8")->n == 100);
  // Every layer's weights differ: the streams are keyed by the entry's own name.
  for (const char* proj : synthetic::kLayerProjections) {
    const std::string suffix = std::string(".") + "q8";
    CHECK((*art)->find(std::string("blk.0.") + proj + suffix)->payloads[0].xxh64 !=
          (*art)->find(std::string("blk.1.") + proj + suffix)->payloads[0].xxh64);
  }
  for (const artifact::Entry& e : (*art)->entries()) CHECK((*art)->verify(e).ok());

  // --small: no lm_head; and the same seed gives the same layers.
  REQUIRE(synthetic::write_model(dir.path + "/small.tbc", layered_options(2, false)).ok());
  auto small = artifact::Artifact::open(dir.path + "/small.tbc");
  REQUIRE(small.ok());
  CHECK((*small)->find("lm_head.q8") == nullptr);
  CHECK((*small)->find("blk.1.ffn_down.q4")->payloads[0].xxh64 == (*art)->find("blk.1.ffn_down.q4")->payloads[0].xxh64);
  CHECK((*small)->find("attn_q.q8") == nullptr);  // no unfused entries in a layered model
}

TEST_CASE("layered_pack_rejects_a_bad_layer_count") {
  const testart::TempDir dir;
  for (int bad : {-1, synthetic::kMaxLayers + 1}) {
    const Status s = synthetic::write_model(dir.path + "/x.tbc", layered_options(bad, false));
    CHECK(s.code() == TB_INVALID_ARGUMENT);
    CHECK(s.message().find("layers = " + std::to_string(bad) + " is out of range") != std::string::npos);
  }
}

}  // TEST_SUITE
