// `pack MODEL` end to end on the committed fixtures (tests/fixtures/import/): open_model (the
// reader, the name planner, the jobs) and the import pipeline with dequantize.h's decoder, as the
// CLI runs them. Q8_0 tensors packed at q8 and Q4_0 tensors at q4 are lossless (the artifact's
// values equal the gguf package's dequantisation, which the fixture holds, bit for bit); float
// tensors packed equal the package's Q8_0 / Q4_0 quantisation of them, re-tiled, bit for bit.
// The safetensors reader's release() leaves the bytes it hands out unchanged.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include "artifacts/import/dequantize.h"
#include "artifacts/import/open_model.h"
#include "artifacts/import/safetensors_file.h"
#include "artifacts/quantize.h"
#include "core/numerics.h"
#include "core/strip_layout.h"
#include "test_artifact_util.h"
#include "test_import_gguf_util.h"

using namespace twinbit;
using namespace twinbit::import;
using twinbit::testing::import_fixture;
using twinbit::testing::read_bytes;

namespace {

struct Packed {
  OpenedModel model;
  ImportSummary summary;
  std::unique_ptr<artifact::Artifact> art;
};

Packed pack(const testart::TempDir& dir, const std::string& fixture, ModelKind kind, tb_prec prec,
            bool fuse) {
  Packed p;
  OpenModelOptions mo;
  mo.fuse_qkv = mo.fuse_gate_up = fuse;
  auto m = open_model(import_fixture(fixture).string(), kind, mo);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  p.model = std::move(m).value();
  const std::string path = dir.path + "/out.tbsc";
  auto out = artifact::OutputFile::open(path);
  REQUIRE(out.ok());
  ImportOptions io;
  io.prec = prec;
  io.decode = to_float_rows;
  io.source_path = fixture;
  auto s = import_model(*p.model.file, p.model.jobs, p.model.skipped, *out, io);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  p.summary = std::move(s).value();
  auto a = artifact::Artifact::open(path);
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  p.art = std::move(a).value();
  for (const artifact::Entry& e : p.art->entries()) REQUIRE(p.art->verify(e).ok());
  return p;
}

std::pair<std::vector<uint8_t>, std::vector<uint16_t>> payloads(const artifact::Artifact& a,
                                                                const std::string& name) {
  const artifact::Entry* e = a.find(name);
  REQUIRE_MESSAGE(e != nullptr, name);
  const tb_weights_view v = a.view(*e);
  const auto* c = static_cast<const uint8_t*>(v.strips.codes);
  std::vector<uint16_t> s(v.strips.scales_bytes / 2);
  std::memcpy(s.data(), v.strips.scales, v.strips.scales_bytes);
  return {std::vector<uint8_t>(c, c + v.strips.codes_bytes), s};
}

// The entry a GGUF tensor name becomes ("blk.0.attn_output.weight" -> "blk.0.attn_o.q8").
std::string entry_of(std::string name, tb_prec prec) {
  name = name.substr(0, name.size() - std::string(".weight").size());
  if (name == "output") name = "lm_head";
  const auto o = name.find("attn_output");
  if (o != std::string::npos) name.replace(o, 11, "attn_o");
  return name + (prec == TB_PREC_Q8 ? ".q8" : ".q4");
}

}  // namespace

TEST_SUITE("import") {

TEST_CASE("pack_tiny_llama_lossless_blocks_and_float_tensors_equal_the_gguf_package") {
  const std::vector<uint8_t> dequant = read_bytes(import_fixture("tiny_llama.dequant.f32"));
  const std::vector<uint8_t> quant = read_bytes(import_fixture("tiny_llama.quant.bin"));
  REQUIRE(!dequant.empty());
  REQUIRE(!quant.empty());
  for (bool fuse : {false, true}) {
    const testart::TempDir dir;
    // q8 first, then q4: tiny_llama.quant.bin holds each float tensor's Q8_0 then Q4_0 blocks.
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      INFO("fuse ", fuse, " prec ", prec == TB_PREC_Q8 ? "q8" : "q4");
      const Packed p = pack(dir, "tiny_llama.gguf", ModelKind::gguf, prec, fuse);
      // 2 layers x 7 projections + lm_head, and with --fuse 2 x (qkv, gate_up) as well.
      CHECK(p.summary.entries == (fuse ? 19u : 15u));
      const artifact::Entry* fused =
          p.art->find(prec == TB_PREC_Q8 ? "blk.1.attn_qkv.q8" : "blk.1.ffn_gate_up.q4");
      CHECK((fused != nullptr) == fuse);
      size_t at_dequant = 0, at_quant = 0;
      int lossless = 0, floats = 0;
      const SourceType exact = prec == TB_PREC_Q8 ? SourceType::q8_0 : SourceType::q4_0;
      for (const SourceTensor& t : p.model.file->tensors()) {
        const bool is_float = t.type == SourceType::f32 || t.type == SourceType::f16 ||
                              t.type == SourceType::bf16;
        const int64_t elems = t.dims.size() == 2 ? t.dims[0] * t.dims[1] : 0;
        if (!is_float && t.type != SourceType::other) {  // a block type: in the dequant reference
          if (t.type == exact) {
            INFO(t.name, " re-tiled: its values");
            const auto [codes, scales] = payloads(*p.art, entry_of(t.name, prec));
            const int64_t n = t.dims[0], k = t.dims[1];
            const StripLayout layout{prec, n, k};
            std::vector<float> got(static_cast<size_t>(elems));
            for (int64_t c = 0; c < n; ++c) {
              for (int64_t i = 0; i < k; ++i) {
                const float d = fp16_to_float(scales[layout.scale_index(c, i / 32)]);
                got[c * k + i] = static_cast<float>(layout.code(codes.data(), c, i)) * d;
              }
            }
            REQUIRE(at_dequant + got.size() * 4 <= dequant.size());
            CHECK(std::memcmp(got.data(), dequant.data() + at_dequant, got.size() * 4) == 0);
            ++lossless;
          }
          at_dequant += static_cast<size_t>(elems) * 4;
        }
        if (is_float && t.dims.size() == 2) {
          const auto q8 = static_cast<size_t>(elems / 32 * 34);
          const auto q4 = static_cast<size_t>(elems / 32 * 18);
          const size_t at = at_quant + (prec == TB_PREC_Q8 ? 0 : q8);
          const size_t len = prec == TB_PREC_Q8 ? q8 : q4;
          at_quant += q8 + q4;
          if (t.name == "token_embd.weight") continue;  // skipped: the model has an lm_head
          INFO(t.name, " quantised: its blocks");
          REQUIRE(at + len <= quant.size());
          auto want = quant::retile_gguf({quant.data() + at, len}, t.dims[0], t.dims[1], prec);
          REQUIRE(want.ok());
          const auto [codes, scales] = payloads(*p.art, entry_of(t.name, prec));
          CHECK(codes == want->codes);
          CHECK(scales == want->scales);
          ++floats;
        }
      }
      CHECK(at_dequant == dequant.size());
      CHECK(at_quant == quant.size());
      CHECK(lossless == (prec == TB_PREC_Q8 ? 4 : 3));  // Q8_0: attn_q, ffn_up, attn_k, output
      CHECK(floats == 4);
      // The summary says which tensors were left out.
      std::map<std::string, std::string> skipped;
      for (const SkipNote& k : p.summary.skipped) skipped[k.tensor] = k.why;
      CHECK(skipped.count("token_embd.weight") == 1);
      CHECK(skipped.count("blk.0.attn_norm.weight") == 1);
      CHECK(skipped.count("output_norm.weight") == 1);
    }
  }
}

TEST_CASE("pack_safetensors_fixtures_float_tensors_equal_pack_strips_of_their_values") {
  struct Case { const char* fixture; ModelKind kind; };
  for (const Case c : {Case{"hf_f32.safetensors", ModelKind::safetensors_file},
                       Case{"hf_f16.safetensors", ModelKind::safetensors_file},
                       Case{"hf_bf16.safetensors", ModelKind::safetensors_file},
                       Case{"tied_bf16.safetensors", ModelKind::safetensors_file},
                       Case{"vl_f16.safetensors", ModelKind::safetensors_file},
                       Case{"sharded", ModelKind::safetensors_folder}}) {
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      INFO(std::string(c.fixture), prec == TB_PREC_Q8 ? " q8" : " q4");
      const testart::TempDir dir;
      const Packed p = pack(dir, c.fixture, c.kind, prec, true);
      CHECK(p.art->find(prec == TB_PREC_Q8 ? "lm_head.q8" : "lm_head.q4") != nullptr);
      CHECK(p.art->find(prec == TB_PREC_Q8 ? "blk.0.attn_qkv.q8" : "blk.0.attn_qkv.q4") != nullptr);
      // Every unfused entry: pack_strips of its tensor's decoded values (the quantisers are the
      // package's, checked against it on tiny_llama above).
      for (const ImportJob& job : p.model.jobs) {
        if (job.tensors.size() != 1) continue;
        const SourceTensor& t = p.model.file->tensors().at(job.tensors[0]);
        std::vector<float> w(static_cast<size_t>(t.dims[0] * t.dims[1]));
        REQUIRE(to_float_rows(t, p.model.file->bytes(t), 0, t.dims[0], w.data()).ok());
        const quant::PackedStrips want = quant::pack_strips(w.data(), t.dims[0], t.dims[1], prec);
        const std::string entry = job.entry + (prec == TB_PREC_Q8 ? ".q8" : ".q4");
        const auto [codes, scales] = payloads(*p.art, entry);
        INFO(job.entry);
        CHECK(codes == want.codes);
        CHECK(scales == want.scales);
      }
    }
  }
}

TEST_CASE("safetensors_release_drops_pages_but_the_bytes_read_back_unchanged") {
  for (const char* fixture : {"hf_f32.safetensors", "sharded"}) {
    auto f = open_safetensors(import_fixture(fixture).string());
    REQUIRE_MESSAGE(f.ok(), f.status().to_string());
    int decoded = 0;
    for (const SourceTensor& t : (*f)->tensors()) {
      INFO(std::string(fixture), " ", t.name);
      const auto before = (*f)->bytes(t);
      const std::vector<uint8_t> copy(before.begin(), before.end());
      (*f)->release(t);
      const auto after = (*f)->bytes(t);
      CHECK(after.data() == before.data());
      REQUIRE(after.size() == copy.size());
      CHECK(std::memcmp(after.data(), copy.data(), copy.size()) == 0);
      if (t.dims.size() == 2) {  // decoded from the pages read again
        std::vector<float> w(static_cast<size_t>(t.dims[0] * t.dims[1]));
        CHECK(to_float_rows(t, after, 0, t.dims[0], w.data()).ok());
        ++decoded;
      }
    }
    CHECK(decoded > 0);
  }
}

}  // TEST_SUITE
