// The safetensors reader on files the `safetensors` package wrote (tests/fixtures/import): every
// tensor's name, dtype, dims and bytes read back exactly, single files and a shard folder.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "artifacts/import/safetensors_file.h"
#include "test_import_util.h"

using namespace twinbit;
using namespace twinbit::import;
using testimport::expected_value;
using testimport::fixture;

namespace {

// The shapes make_safetensors_fixtures.py gives each name (hidden 64, kv 8, ffn 16, vocab 32).
std::vector<int64_t> expected_dims(const std::string& name) {
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  if (ends("norm.weight") || ends("layernorm.weight")) return {64};
  if (ends("embed_tokens.weight") || name == "lm_head.weight") return {32, 64};
  if (ends("q_proj.weight") || ends("o_proj.weight")) return {64, 64};
  if (ends("k_proj.weight") || ends("v_proj.weight")) return {8, 64};
  if (ends("gate_proj.weight") || ends("up_proj.weight")) return {16, 64};
  if (ends("down_proj.weight")) return {64, 16};
  if (name == "model.visual.patch_embed.proj.weight") return {8, 8};
  return {-1};
}

// Compares every element of every tensor with the value the script stored, as the dtype's bits.
void check_values(const TensorFile& f, SourceType type) {
  for (const SourceTensor& t : f.tensors()) {
    CAPTURE(t.name);
    CHECK(t.type == type);
    REQUIRE(t.dims == expected_dims(t.name));
    int64_t count = 1;
    for (int64_t d : t.dims) count *= d;
    const size_t elem = type == SourceType::f32 ? 4 : 2;
    REQUIRE(t.bytes == static_cast<uint64_t>(count) * elem);
    const auto bytes = f.bytes(t);
    REQUIRE(bytes.size() == t.bytes);
    int64_t wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
      const float v = expected_value(t.name, i);
      uint32_t want = 0, got = 0;
      if (type == SourceType::f32) want = testimport::f32_bits(v);
      if (type == SourceType::f16) want = testimport::f16_bits(v);
      if (type == SourceType::bf16) want = testimport::bf16_bits(v);
      std::memcpy(&got, bytes.data() + i * elem, elem);  // little-endian host
      wrong += got != want;
    }
    CHECK(wrong == 0);
  }
}

size_t count_with(const TensorFile& f, const std::string& part) {
  size_t n = 0;
  for (const auto& t : f.tensors()) n += t.name.find(part) != std::string::npos;
  return n;
}

}  // namespace

TEST_SUITE("import") {

TEST_CASE("safetensors_fixtures_read_back_bit_exact_in_f32_f16_bf16") {
  // The fixtures' values are exact in every dtype; the converters below assume it, so check.
  for (int64_t i = 0; i < 253; ++i) {
    const float v = expected_value("x", i);
    REQUIRE((testimport::f32_bits(v) & 0xffff) == 0);
  }
  const std::pair<const char*, SourceType> files[] = {{"hf_f32.safetensors", SourceType::f32},
                                                     {"hf_f16.safetensors", SourceType::f16},
                                                     {"hf_bf16.safetensors", SourceType::bf16}};
  for (const auto& [name, type] : files) {
    CAPTURE(name);
    auto f = open_safetensors(fixture(name));
    REQUIRE_MESSAGE(f.ok(), f.status().to_string());
    const TensorFile& file = **f;
    CHECK(file.files() == std::vector<std::string>{fixture(name)});
    CHECK(file.tensors().size() == 21);  // embed, norm, lm_head, 2 x (7 projections + 2 norms)
    CHECK(count_with(file, "q_proj") == 2);
    CHECK(count_with(file, "lm_head") == 1);
    check_values(file, type);
    // File order: each tensor starts where the previous ended.
    for (size_t i = 1; i < file.tensors().size(); ++i) {
      CHECK(file.tensors()[i].offset == file.tensors()[i - 1].offset + file.tensors()[i - 1].bytes);
    }
    const auto meta = file.metadata();
    CHECK(std::find(meta.begin(), meta.end(), std::make_pair(std::string("format"), std::string("pt"))) !=
          meta.end());
  }
}

TEST_CASE("safetensors_shard_folder_reads_the_same_bytes_as_the_single_file") {
  auto single = open_safetensors(fixture("hf_f16.safetensors"));
  REQUIRE(single.ok());
  std::map<std::string, const SourceTensor*> by_name;
  for (const auto& t : (*single)->tensors()) by_name[t.name] = &t;
  for (const std::string& path : std::vector<std::string>{fixture("sharded"), fixture("sharded/"),
                                 fixture("sharded/model.safetensors.index.json")}) {
    CAPTURE(path);
    auto f = open_safetensors(path);
    REQUIRE_MESSAGE(f.ok(), f.status().to_string());
    const TensorFile& file = **f;
    REQUIRE(file.files().size() == 2);
    CHECK(file.files()[0].find("model-00001-of-00002.safetensors") != std::string::npos);
    REQUIRE(file.tensors().size() == by_name.size());
    for (const SourceTensor& t : file.tensors()) {
      CAPTURE(t.name);
      REQUIRE(by_name.count(t.name));
      const SourceTensor& s = *by_name[t.name];
      CHECK(t.dims == s.dims);
      CHECK(t.file == (t.name.find(".layers.0.") != std::string::npos ||
                       t.name.find("embed_tokens") != std::string::npos ? 0u : 1u));
      const auto a = file.bytes(t), b = (*single)->bytes(s);
      REQUIRE(a.size() == b.size());
      CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0);
    }
    const auto meta = file.metadata();
    CHECK(std::find_if(meta.begin(), meta.end(), [](const auto& kv) { return kv.first == "total_size"; }) !=
          meta.end());
  }
}

TEST_CASE("safetensors_tied_and_multimodal_fixtures_open") {
  auto tied = open_safetensors(fixture("tied_bf16.safetensors"));
  REQUIRE_MESSAGE(tied.ok(), tied.status().to_string());
  CHECK((*tied)->tensors().size() == 20);
  CHECK(count_with(**tied, "lm_head") == 0);
  check_values(**tied, SourceType::bf16);
  auto vl = open_safetensors(fixture("vl_f16.safetensors"));
  REQUIRE_MESSAGE(vl.ok(), vl.status().to_string());
  CHECK(count_with(**vl, "model.language_model.layers.0.") == 9);
  check_values(**vl, SourceType::f16);
}

TEST_CASE("safetensors_bytes_of_a_foreign_tensor_are_empty_not_out_of_bounds") {
  auto f = open_safetensors(fixture("hf_bf16.safetensors"));
  REQUIRE(f.ok());
  SourceTensor t = (*f)->tensors()[0];
  t.file = 5;
  CHECK((*f)->bytes(t).empty());
  t.file = 0;
  t.offset = ~0ull - 4;
  CHECK((*f)->bytes(t).empty());
}

}  // TEST_SUITE
