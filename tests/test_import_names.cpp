// The name mapping (artifacts/import/names.h): both naming schemes to the same entries, fusion
// groups, tied embeddings, name-map files, and the shape checks' errors.
#include <doctest/doctest.h>

#include <map>

#include "artifacts/import/names.h"
#include "artifacts/import/safetensors_file.h"
#include "test_artifact_util.h"
#include "test_import_util.h"

using namespace twinbit;
using namespace twinbit::import;
using testimport::fixture;

namespace {

SourceTensor tensor(const std::string& name, std::vector<int64_t> dims, SourceType type = SourceType::f16) {
  SourceTensor t;
  t.name = name;
  t.type = type;
  t.type_name = type == SourceType::other ? "I64" : "F16";
  t.dims = std::move(dims);
  int64_t count = 1;
  for (int64_t d : t.dims) count *= d;
  t.bytes = static_cast<uint64_t>(count) * 2;
  return t;
}

// A llama.cpp-named model with the fixtures' shapes (dims outermost first, as the GGUF reader
// hands them out).
std::vector<SourceTensor> gguf_model(bool with_output) {
  std::vector<SourceTensor> ts = {tensor("token_embd.weight", {32, 64}), tensor("output_norm.weight", {64})};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back(tensor(p + "attn_norm.weight", {64}));
    ts.push_back(tensor(p + "attn_q.weight", {64, 64}));
    ts.push_back(tensor(p + "attn_k.weight", {8, 64}));
    ts.push_back(tensor(p + "attn_v.weight", {8, 64}));
    ts.push_back(tensor(p + "attn_output.weight", {64, 64}));
    ts.push_back(tensor(p + "ffn_gate.weight", {16, 64}));
    ts.push_back(tensor(p + "ffn_up.weight", {16, 64}));
    ts.push_back(tensor(p + "ffn_down.weight", {64, 16}));
  }
  if (with_output) ts.push_back(tensor("output.weight", {32, 64}));
  return ts;
}

const std::vector<std::string> kExpectedEntries = {
    "blk.0.attn_q", "blk.0.attn_k", "blk.0.attn_v", "blk.0.attn_o", "blk.0.ffn_gate", "blk.0.ffn_up",
    "blk.0.ffn_down", "blk.1.attn_q", "blk.1.attn_k", "blk.1.attn_v", "blk.1.attn_o", "blk.1.ffn_gate",
    "blk.1.ffn_up", "blk.1.ffn_down", "lm_head"};

std::vector<std::string> entry_names(const ImportPlan& p) {
  std::vector<std::string> names;
  for (const auto& e : p.entries) names.push_back(e.name);
  return names;
}

std::map<std::string, std::string> skipped_reasons(const ImportPlan& p) {
  std::map<std::string, std::string> out;
  for (const auto& s : p.skipped) out[s.name] = s.reason;
  return out;
}

Status plan_error(const std::vector<SourceTensor>& ts, const NameOptions& o = {}) {
  auto p = plan_names(ts, o);
  return p.ok() ? Status() : p.status();
}

void expect_error(const Status& s, const std::vector<std::string>& parts) {
  CAPTURE(s.to_string());
  CHECK(s.code() == TB_INVALID_ARGUMENT);
  for (const auto& part : parts) CHECK_MESSAGE(s.message().find(part) != std::string::npos, part);
}

}  // namespace

TEST_SUITE("import") {

TEST_CASE("names_hugging_face_fixture_maps_to_the_per_layer_entries") {
  auto f = open_safetensors(fixture("hf_bf16.safetensors"));
  REQUIRE(f.ok());
  auto p = plan_names(**f, {});
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(entry_names(*p) == kExpectedEntries);
  const auto& ts = (*f)->tensors();
  for (const auto& e : p->entries) {
    CAPTURE(e.name);
    CHECK(e.n == ts[e.tensor].dims[0]);
    CHECK(e.k == ts[e.tensor].dims[1]);
    CHECK_FALSE(e.from_embedding);
  }
  CHECK(ts[p->entries[0].tensor].name == "model.layers.0.self_attn.q_proj.weight");
  CHECK(ts[p->entries[3].tensor].name == "model.layers.0.self_attn.o_proj.weight");
  CHECK(ts[p->entries[13].tensor].name == "model.layers.1.mlp.down_proj.weight");
  CHECK(ts[p->entries[14].tensor].name == "lm_head.weight");
  CHECK(p->entries[1].layer == 0);
  CHECK(p->entries[1].role == "attn_k");
  CHECK(p->entries[14].layer == -1);
  const auto skipped = skipped_reasons(*p);
  CHECK(skipped.size() == 6);  // embedding, final norm, 2 x 2 layer norms
  CHECK(skipped.at("model.embed_tokens.weight") == "embedding (the model has its own lm_head)");
  CHECK(skipped.at("model.norm.weight") == "norm");
  CHECK(skipped.at("model.layers.1.post_attention_layernorm.weight") == "norm");
  for (const auto& s : p->skipped) CHECK(s.bytes == ts[s.tensor].bytes);
  CHECK(p->fused.empty());
  CHECK(p->notes.empty());
}

TEST_CASE("names_llama_cpp_names_give_the_same_plan") {
  auto p = plan_names(gguf_model(true), {});
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(entry_names(*p) == kExpectedEntries);
  CHECK(p->entries[3].n == 64);
  CHECK(p->entries[6].k == 16);
  const auto skipped = skipped_reasons(*p);
  CHECK(skipped.size() == 4);
  CHECK(skipped.at("token_embd.weight") == "embedding (the model has its own lm_head)");
  CHECK(skipped.at("blk.1.attn_norm.weight") == "norm");
}

TEST_CASE("names_fusion_groups_stack_the_parts_in_order") {
  NameOptions o;
  o.fuse_qkv = o.fuse_gate_up = true;
  auto p = plan_names(gguf_model(true), o);
  REQUIRE(p.ok());
  REQUIRE(p->fused.size() == 4);
  const FusionGroup& qkv = p->fused[0];
  CHECK(qkv.name == "blk.0.attn_qkv");
  CHECK(qkv.role == "attn_qkv");
  CHECK(qkv.n == 64 + 8 + 8);
  CHECK(qkv.k == 64);
  REQUIRE(qkv.parts.size() == 3);
  CHECK(p->entries[qkv.parts[0]].name == "blk.0.attn_q");
  CHECK(p->entries[qkv.parts[2]].name == "blk.0.attn_v");
  CHECK(p->fused[1].name == "blk.0.ffn_gate_up");
  CHECK(p->fused[1].n == 32);
  CHECK(p->fused[3].name == "blk.1.ffn_gate_up");
  CHECK(p->entries.size() == 15);  // the parts stay entries of their own
  // Only one kind on request; a layer missing a part is not fused, and the plan says why.
  o.fuse_gate_up = false;
  auto ts = gguf_model(true);
  ts.erase(std::find_if(ts.begin(), ts.end(), [](const auto& t) { return t.name == "blk.1.attn_v.weight"; }));
  auto q = plan_names(ts, o);
  REQUIRE(q.ok());
  REQUIRE(q->fused.size() == 1);
  CHECK(q->fused[0].name == "blk.0.attn_qkv");
  REQUIRE(q->notes.size() == 1);
  CHECK(q->notes[0].find("no blk.1.attn_qkv") != std::string::npos);
}

TEST_CASE("names_tied_embeddings_make_lm_head_from_the_embedding") {
  auto f = open_safetensors(fixture("tied_bf16.safetensors"));
  REQUIRE(f.ok());
  auto p = plan_names(**f, {});
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(entry_names(*p) == kExpectedEntries);
  const PlannedEntry& head = p->entries.back();
  CHECK(head.from_embedding);
  CHECK((*f)->tensors()[head.tensor].name == "model.embed_tokens.weight");
  CHECK(head.n == 32);
  CHECK(head.k == 64);
  REQUIRE(p->notes.size() == 1);
  CHECK(p->notes[0].find("tied embeddings") != std::string::npos);
  CHECK(skipped_reasons(*p).count("model.embed_tokens.weight") == 0);
  auto g = plan_names(gguf_model(false), {});
  REQUIRE(g.ok());
  CHECK(g->entries.back().from_embedding);
}

TEST_CASE("names_multimodal_prefix_and_vision_tower") {
  auto f = open_safetensors(fixture("vl_f16.safetensors"));
  REQUIRE(f.ok());
  auto p = plan_names(**f, {});
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  std::vector<std::string> layer0(kExpectedEntries.begin(), kExpectedEntries.begin() + 7);
  layer0.push_back("lm_head");
  CHECK(entry_names(*p) == layer0);
  CHECK(skipped_reasons(*p).at("model.visual.patch_embed.proj.weight") == "vision tower");
  CHECK(skipped_reasons(*p).at("model.language_model.embed_tokens.weight") ==
        "embedding (the model has its own lm_head)");
  auto llava = plan_names({tensor("language_model.model.layers.3.mlp.up_proj.weight", {16, 64}),
                           tensor("language_model.lm_head.weight", {32, 64})}, {});
  REQUIRE(llava.ok());
  CHECK(entry_names(*llava) == std::vector<std::string>{"blk.3.ffn_up", "lm_head"});
}

TEST_CASE("names_glob_matches_and_captures") {
  std::vector<std::string> stars;
  CHECK(glob_match("blk.*.attn_q", "blk.12.attn_q", &stars));
  CHECK(stars == std::vector<std::string>{"12"});
  CHECK(glob_match("h.*.x.*", "h.3.x.y.z", &stars));
  CHECK(stars == std::vector<std::string>{"3", "y.z"});
  CHECK(glob_match("a?c", "abc"));
  CHECK(glob_match("*", ""));
  CHECK_FALSE(glob_match("a?c", "ac"));
  CHECK_FALSE(glob_match("blk.*.attn_q", "blk.1.attn_k"));
  CHECK(glob_match(std::string(60, '*') + "b", std::string(5000, 'a') + "b"));
  CHECK_FALSE(glob_match(std::string(30, '*') + "b", std::string(5000, 'a')));
}

TEST_CASE("names_name_map_overrides_and_adds_mappings") {
  auto rules = parse_name_map(
      "# a GPT-2-like naming\n"
      "  transformer.h.*.attn.q.weight = blk.*.attn_q   # per layer\n"
      "transformer.h.*.attn.k.weight=blk.*.attn_k\n"
      "\n"
      "wte.weight=lm_head\n"
      "model.layers.0.mlp.up_proj.weight=-\n",
      "map.txt");
  REQUIRE_MESSAGE(rules.ok(), rules.status().to_string());
  REQUIRE(rules->size() == 4);
  CHECK((*rules)[0].glob == "transformer.h.*.attn.q.weight");
  CHECK((*rules)[0].entry == "blk.*.attn_q");
  CHECK((*rules)[0].line == 2);
  NameOptions o;
  o.rules = *rules;
  auto p = plan_names({tensor("transformer.h.7.attn.q.weight", {64, 64}), tensor("transformer.h.7.attn.k.weight", {8, 64}),
                       tensor("wte.weight", {32, 64}), tensor("model.layers.0.mlp.up_proj.weight", {16, 64}),
                       tensor("model.layers.0.mlp.gate_proj.weight", {16, 64})},
                      o);
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(entry_names(*p) == std::vector<std::string>{"blk.0.ffn_gate", "blk.7.attn_q", "blk.7.attn_k", "lm_head"});
  CHECK(skipped_reasons(*p).at("model.layers.0.mlp.up_proj.weight") == "skipped by the name map (map.txt:6)");
  // From a file.
  testart::TempDir dir;
  testimport::write_text(dir.path + "/names.txt", "output.weight=-\n");
  auto loaded = load_name_map(dir.path + "/names.txt");
  REQUIRE(loaded.ok());
  CHECK(loaded->at(0).source == dir.path + "/names.txt");
  CHECK_FALSE(load_name_map(dir.path + "/nope.txt").ok());
}

TEST_CASE("names_name_map_bad_lines_quote_line_and_text") {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"# ok\nno equals sign here\n", {"map.txt:2", "'no equals sign here'", "no '='"}},
      {"=blk.0.attn_q\n", {"map.txt:1", "no source name"}},
      {"a=b=c\n", {"map.txt:1", "more than one '='"}},
      {"x.weight=blk.0.attn_x\n", {"map.txt:1", "entry 'blk.0.attn_x' is not blk.N.ROLE"}},
      {"x.weight=blk.0.attn_qkv\n", {"not blk.N.ROLE"}},
      {"x.weight=\n", {"entry '' is not"}},
      {"x.weight=blk.*.attn_q\n", {"the entry has 1 '*' but the source glob only 0"}},
  };
  for (const auto& [text, parts] : cases) {
    CAPTURE(text);
    auto r = parse_name_map(text, "map.txt");
    REQUIRE_FALSE(r.ok());
    expect_error(r.status(), parts);
  }
  // A '*' that captures something that is no layer number is caught when the plan applies it.
  NameOptions o;
  auto bad_star = parse_name_map("h.*.q=blk.*.attn_q\n", "map.txt");
  REQUIRE(bad_star.ok());
  o.rules = bad_star.value();
  expect_error(plan_error({tensor("h.x.q", {4, 4})}, o), {"map.txt:1", "'h.x.q' maps to 'blk.x.attn_q'"});
  // Rules built in code are checked when applied, not trusted.
  o.rules = {NameRule{"h.q", "x", 3, "code"}, NameRule{"*", "blk.*.*", 4, "code"}};
  expect_error(plan_error({tensor("h.q", {4, 4})}, o), {"code:3", "maps to 'x'"});
  expect_error(plan_error({tensor("g", {4, 4})}, o), {"code:4", "maps to 'blk.g.*'"});
}

TEST_CASE("names_shape_checks_name_both_tensors") {
  auto with = [](const std::string& name, std::vector<int64_t> dims, SourceType type = SourceType::f16) {
    auto ts = gguf_model(true);
    for (auto& t : ts) {
      if (t.name == name) t = tensor(name, std::move(dims), type);
    }
    return ts;
  };
  expect_error(plan_error(with("blk.0.attn_k.weight", {8, 32})),
               {"blk.0.attn_q", "blk.0.attn_k", "{N 8, K 32}", "share K"});
  expect_error(plan_error(with("blk.1.ffn_up.weight", {24, 64})), {"blk.1.ffn_gate", "blk.1.ffn_up", "one shape"});
  expect_error(plan_error(with("blk.0.ffn_down.weight", {64, 24})), {"ffn_down's K"});
  expect_error(plan_error(with("blk.0.attn_output.weight", {48, 64})), {"attn_o's N"});
  expect_error(plan_error(with("output.weight", {32, 48})), {"lm_head's K"});
  auto narrow = gguf_model(true);
  for (auto& t : narrow) {
    if (t.name.rfind("blk.1.attn_", 0) == 0 && t.dims.size() == 2) t.dims.back() = 48;
    if (t.name == "blk.1.attn_output.weight") t.dims = {48, 64};
  }
  expect_error(plan_error(narrow), {"blk.0.attn_q", "blk.1.attn_q", "one hidden size"});
  expect_error(plan_error(with("blk.0.attn_v.weight", {8, 64, 1})), {"'blk.0.attn_v.weight' (for blk.0.attn_v)", "[8, 64, 1]", "2-D"});
  expect_error(plan_error(with("blk.0.attn_v.weight", {512})), {"[512]"});
  expect_error(plan_error(with("blk.0.attn_v.weight", {8, 64}, SourceType::other)), {"is I64", "cannot import"});
  auto dup = gguf_model(true);
  dup.push_back(tensor("model.layers.0.self_attn.q_proj.weight", {64, 64}));
  expect_error(plan_error(dup), {"'blk.0.attn_q.weight' and 'model.layers.0.self_attn.q_proj.weight'", "blk.0.attn_q"});
  // Leading zeros are no layer number: the tensor is not a projection.
  auto p = plan_names({tensor("blk.01.attn_q.weight", {4, 4})}, {});
  REQUIRE(p.ok());
  CHECK(p->entries.empty());
  CHECK(p->skipped.at(0).reason == "not a projection twinbit holds");
}

}  // TEST_SUITE
