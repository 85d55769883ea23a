// The synthetic model on a shrunken shape: deterministic from the seed, fused entries equal to
// their parts column for column, every entry present, progress reported, and the generator's
// value distribution as promised (range, signed zeros, tiny values).
#include <doctest/doctest.h>

#include <xxhash.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/synthetic.h"
#include "core/reference.h"
#include "test_artifact_util.h"

using namespace twinbit;

namespace {

synthetic::Options tiny_options(uint64_t seed) {
  synthetic::Options o;
  o.seed = seed;
  o.shape.hidden = 64;
  o.shape.intermediate = 96;
  o.shape.heads = 2;
  o.shape.kv_heads = 1;
  o.shape.head_dim = 32;
  o.shape.vocab = 100;  // not a multiple of 32: lm_head has padding columns
  o.shape.gdn_value_heads = 4;
  o.shape.gdn_key_heads = 2;
  o.shape.gdn_dim = 32;
  o.shape.gemv_cols = 40;
  return o;
}

uint64_t file_hash(const std::string& path) {
  const std::vector<uint8_t> b = testart::read_file(path);
  return XXH64(b.data(), b.size(), 0);
}

}  // namespace

TEST_SUITE("artifact") {

TEST_CASE("synthetic_tiny_shape_seed_42_twice_same_bytes_seed_43_different") {
  const testart::TempDir dir;
  REQUIRE(synthetic::write_model(dir.path + "/a.tbc", tiny_options(42)).ok());
  REQUIRE(synthetic::write_model(dir.path + "/b.tbc", tiny_options(42)).ok());
  REQUIRE(synthetic::write_model(dir.path + "/c.tbc", tiny_options(43)).ok());
  CHECK(file_hash(dir.path + "/a.tbc") == file_hash(dir.path + "/b.tbc"));
  CHECK(file_hash(dir.path + "/a.tbc") != file_hash(dir.path + "/c.tbc"));
  // Different seeds give different weights, not only a different provenance string.
  auto a = artifact::Artifact::open(dir.path + "/a.tbc");
  auto c = artifact::Artifact::open(dir.path + "/c.tbc");
  REQUIRE(a.ok());
  REQUIRE(c.ok());
  CHECK((*a)->find("attn_q.q8")->payloads[0].xxh64 != (*c)->find("attn_q.q8")->payloads[0].xxh64);
  CHECK((*a)->provenance().source_file == "synthetic:seed=42");
}

TEST_CASE("synthetic_tiny_shape_has_every_entry_verified_and_fused_equal_to_parts") {
  const testart::TempDir dir;
  synthetic::Options o = tiny_options(7);
  std::vector<std::string> lines;
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  REQUIRE(synthetic::write_model(dir.path + "/m.tbc", o).ok());
  CHECK(lines.size() >= 10);
  CHECK(lines.front().find("packing attn_q") == 0);
  auto opened = artifact::Artifact::open(dir.path + "/m.tbc");
  REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
  const artifact::Artifact& art = **opened;
  const auto projs = synthetic::projections(o.shape, true);
  REQUIRE(projs.size() == 10);
  CHECK(art.entries().size() == projs.size() * 2 + 8);
  for (const auto& p : projs) {
    for (const char* prec : {"q8", "q4"}) {
      const artifact::Entry* e = art.find(std::string(p.name) + "." + prec);
      REQUIRE_MESSAGE(e != nullptr, p.name);
      CHECK(e->n == p.n);
      CHECK(e->k == p.k);
    }
  }
  for (const char* m : {"ssm_beta", "ssm_a", "gdn.state", "gdn.q", "gdn.k", "gdn.v", "gdn.g", "gdn.beta"}) {
    CHECK_MESSAGE(art.find(m) != nullptr, m);
  }
  CHECK(art.find("gdn.state")->n == 4 * 32);
  CHECK(art.find("ssm_a")->k == 40);
  for (const artifact::Entry& e : art.entries()) CHECK(art.verify(e).ok());

  // attn_qkv = attn_q | attn_k | attn_v and ffn_gate_up = ffn_gate | ffn_up, code for code.
  const std::pair<const char*, std::vector<const char*>> fused[] = {
      {"attn_qkv", {"attn_q", "attn_k", "attn_v"}}, {"ffn_gate_up", {"ffn_gate", "ffn_up"}}};
  for (const auto& [name, parts] : fused) {
    for (const char* prec : {"q8", "q4"}) {
      const artifact::Entry* fe = art.find(std::string(name) + "." + prec);
      REQUIRE(fe != nullptr);
      REQUIRE(fe->ranges.size() == parts.size());
      const tb_strips fv = art.view(*fe).strips;
      bool same = true;
      for (size_t i = 0; i < parts.size(); ++i) {
        const artifact::Entry* pe = art.find(std::string(parts[i]) + "." + prec);
        REQUIRE(pe != nullptr);
        CHECK(fe->ranges[i].name == parts[i]);
        CHECK(fe->ranges[i].end - fe->ranges[i].begin == pe->n);
        const tb_strips pv = art.view(*pe).strips;
        for (int64_t c = 0; c < pe->n; ++c) {
          for (int64_t kk = 0; kk < pv.kp; ++kk) {
            same &= ref::weight_code(fv, fe->ranges[i].begin + c, kk) == ref::weight_code(pv, c, kk);
          }
          for (int64_t g = 0; g < pv.kp / 32; ++g) {
            same &= std::bit_cast<uint32_t>(ref::weight_scale(fv, fe->ranges[i].begin + c, g)) ==
                    std::bit_cast<uint32_t>(ref::weight_scale(pv, c, g));
          }
        }
      }
      CHECK_MESSAGE(same, name << "." << prec);
    }
  }
}

TEST_CASE("synthetic_rejects_bad_options_cleanly") {
  const testart::TempDir dir;
  synthetic::Options o = tiny_options(1);
  o.precisions = {};
  CHECK(synthetic::write_model(dir.path + "/x.tbc", o).code() == TB_INVALID_ARGUMENT);
  o = tiny_options(1);
  o.precisions = {TB_PREC_Q8, TB_PREC_Q8};
  CHECK(synthetic::write_model(dir.path + "/x.tbc", o).code() == TB_INVALID_ARGUMENT);
  o = tiny_options(1);
  o.shape.hidden = 0;
  CHECK(synthetic::write_model(dir.path + "/x.tbc", o).code() == TB_INVALID_ARGUMENT);
  o = tiny_options(1);
  o.shape.gdn_key_heads = 3;
  CHECK(synthetic::write_model(dir.path + "/x.tbc", o).code() == TB_INVALID_ARGUMENT);
  CHECK(testart::list_dir(dir.path).empty());
}

TEST_CASE("fill_uniform_1M_values_in_range_with_signed_zeros_and_tiny_values_deterministic") {
  const int64_t n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  synthetic::fill_uniform(a.data(), n, 42, 0.05f);
  synthetic::fill_uniform(b.data(), n, 42, 0.05f);
  synthetic::fill_uniform(c.data(), n, 43, 0.05f);
  CHECK(std::memcmp(a.data(), b.data(), n * 4) == 0);
  CHECK(std::memcmp(a.data(), c.data(), n * 4) != 0);
  int64_t pos_zero = 0, neg_zero = 0, tiny = 0, out_of_range = 0, neg = 0;
  for (float v : a) {
    if (v == 0.0f) (std::signbit(v) ? neg_zero : pos_zero)++;
    else if (std::fabs(v) < 1e-30f) ++tiny;
    if (!(v >= -0.05f && v < 0.05f)) ++out_of_range;
    if (v < 0) ++neg;
  }
  CHECK(out_of_range == 0);
  CHECK(pos_zero > n / 512);
  CHECK(neg_zero > n / 512);
  CHECK(tiny > n / 512);
  CHECK(neg > n / 3);
  CHECK(neg < 2 * n / 3);
}

}  // TEST_SUITE
