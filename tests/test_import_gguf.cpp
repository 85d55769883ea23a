// The GGUF reader and the dequantisers against files written by llama.cpp's own Python package
// (tests/fixtures/import/make_gguf_fixtures.py): names, types and dims as the script wrote them;
// every type's dequantised values equal gguf-py's bit for bit; Q8_0 / Q4_0 tensors re-tiled into
// strips keep those values exactly; twinbit's quantisation of the float tensors equals gguf-py's.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "artifacts/import/dequantize.h"
#include "artifacts/import/gguf_file.h"
#include "artifacts/quantize.h"
#include "core/reference.h"
#include "test_import_gguf_util.h"

using namespace twinbit;
using namespace twinbit::import;
using twinbit::testing::import_fixture;
using twinbit::testing::read_bytes;

namespace {

std::unique_ptr<TensorFile> open_fixture(const std::string& name) {
  auto f = open_gguf(import_fixture(name).string());
  INFO(f.status().to_string());
  REQUIRE(f.ok());
  return std::move(f).value();
}

int64_t elements(const SourceTensor& t) {
  int64_t e = 1;
  for (int64_t d : t.dims) e *= d;
  return e;
}

std::vector<float> dequantised(const TensorFile& f, const SourceTensor& t) {
  std::vector<float> out(static_cast<size_t>(elements(t)));
  const Status s = to_float_rows(t, f.bytes(t), 0, source_rows(t), out.data());
  INFO(t.name, ": ", s.to_string());
  REQUIRE(s.ok());
  return out;
}

// The package's values for the tensors `wanted` picks, in file order.
void check_against_reference(const std::string& gguf, const std::string& reference,
                             bool (*wanted)(const SourceTensor&)) {
  const auto f = open_fixture(gguf);
  const std::vector<uint8_t> ref = read_bytes(import_fixture(reference));
  size_t at = 0, checked = 0;
  for (const SourceTensor& t : f->tensors()) {
    if (!wanted(t)) continue;
    const std::vector<float> got = dequantised(*f, t);
    const size_t bytes = got.size() * sizeof(float);
    REQUIRE(at + bytes <= ref.size());
    INFO(t.name, " (", t.type_name, ")");
    CHECK(std::memcmp(got.data(), ref.data() + at, bytes) == 0);
    at += bytes;
    ++checked;
  }
  CHECK(at == ref.size());  // every reference value was compared
  CHECK(checked > 0);
}

bool is_block_type(const SourceTensor& t) {
  return t.type != SourceType::f32 && t.type != SourceType::f16 && t.type != SourceType::bf16 &&
         t.type != SourceType::other;
}

}  // namespace

TEST_CASE("gguf_fixtures_open_with_the_names_types_and_dims_the_script_wrote") {
  for (const char* name : {"tiny_llama", "all_types"}) {
    const auto f = open_fixture(std::string(name) + ".gguf");
    std::istringstream manifest(
        [&] { auto b = read_bytes(import_fixture(std::string(name) + ".manifest.txt"));
              return std::string(b.begin(), b.end()); }());
    size_t i = 0;
    for (std::string line; std::getline(manifest, line); ++i) {
      REQUIRE(i < f->tensors().size());
      const SourceTensor& t = f->tensors()[i];
      std::istringstream fields(line);
      std::string tname, type;
      fields >> tname >> type;
      std::vector<int64_t> dims;
      for (int64_t d; fields >> d;) dims.push_back(d);
      INFO(name, ": ", line);
      CHECK(t.name == tname);
      CHECK(t.type_name == type);
      CHECK(t.dims == dims);
      CHECK(t.file == 0);
      CHECK(f->bytes(t).size() == t.bytes);
      const SourceTypeTraits& tr = source_type_traits(t.type);
      if (t.type != SourceType::other) {
        CHECK(std::string(tr.name) == type);
        CHECK(t.bytes == uint64_t(elements(t) / tr.block_elems * tr.block_bytes));
      }
    }
    CHECK(i == f->tensors().size());
  }
  const auto all = open_fixture("all_types.gguf");
  CHECK(all->tensors()[13].type == SourceType::other);  // IQ4_NL: listed, not converted
  for (const SourceTensor& t : all->tensors()) CHECK(t.offset % 64 == 0);  // general.alignment
  const auto tiny = open_fixture("tiny_llama.gguf");
  const auto metadata = tiny->metadata();  // returned by value
  std::map<std::string, std::string> kv(metadata.begin(), metadata.end());
  CHECK(kv["general.architecture"] == "llama");
  CHECK(kv["llama.block_count"] == "2");
  CHECK(kv["general.name"] == "tiny llama fixture");
  CHECK(kv["tokenizer.ggml.tokens"] == "[32 x string]");
}

TEST_CASE("gguf_every_type_dequantises_to_the_gguf_package_values_bit_for_bit") {
  // all_types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K .. Q6_K, a 3-D F32.
  check_against_reference("all_types.gguf", "all_types.dequant.f32",
                          [](const SourceTensor& t) { return t.type != SourceType::other; });
  check_against_reference("tiny_llama.gguf", "tiny_llama.dequant.f32", is_block_type);
}

TEST_CASE("gguf_to_float_rows_decodes_any_row_range_and_refuses_bad_requests") {
  const auto f = open_fixture("all_types.gguf");
  for (const SourceTensor& t : f->tensors()) {
    if (t.type == SourceType::other) {
      float x;
      CHECK(to_float_rows(t, f->bytes(t), 0, 1, &x).code() == TB_INVALID_ARGUMENT);
      continue;
    }
    const std::vector<float> all = dequantised(*f, t);
    const int64_t rows = source_rows(t), width = t.dims.back();
    std::vector<float> part(static_cast<size_t>(width * 2));
    REQUIRE(to_float_rows(t, f->bytes(t), rows - 2, 2, part.data()).ok());
    CHECK(std::memcmp(part.data(), all.data() + (rows - 2) * width, part.size() * 4) == 0);
    CHECK(to_float_rows(t, f->bytes(t), rows - 1, 2, part.data()).code() == TB_INVALID_ARGUMENT);
    CHECK(to_float_rows(t, f->bytes(t), -1, 1, part.data()).code() == TB_INVALID_ARGUMENT);
    CHECK(to_float_rows(t, f->bytes(t).first(t.bytes - 1), 0, 1, part.data()).code() ==
          TB_INVALID_ARGUMENT);
  }
  SourceTensor ragged = f->tensors()[10];  // Q4_K: a row of 128 is half a block
  ragged.dims = {8, 128};
  float x[256];
  const Status s = to_float_rows(ragged, f->bytes(f->tensors()[10]), 0, 1, x);
  CHECK(s.code() == TB_INVALID_ARGUMENT);
  CHECK(s.message().find("not whole Q4_K blocks") != std::string::npos);
}

TEST_CASE("gguf_q8_0_and_q4_0_retiled_into_strips_keep_every_dequantised_value") {
  const auto f = open_fixture("tiny_llama.gguf");
  int retiled = 0;
  for (const SourceTensor& t : f->tensors()) {
    if (t.type != SourceType::q8_0 && t.type != SourceType::q4_0) continue;
    const tb_prec prec = t.type == SourceType::q8_0 ? TB_PREC_Q8 : TB_PREC_Q4;
    const int64_t n = t.dims[0], k = t.dims[1];
    auto strips = quant::retile_gguf(f->bytes(t), n, k, prec);
    REQUIRE(strips.ok());
    const tb_strips w = strips->view();
    const std::vector<float> expect = dequantised(*f, t);
    std::vector<float> got(expect.size());
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t kk = 0; kk < k; ++kk) {
        got[r * k + kk] = ref::weight_scale(w, r, kk / 32) * float(ref::weight_code(w, r, kk));
      }
    }
    INFO(t.name);
    CHECK(std::memcmp(got.data(), expect.data(), got.size() * 4) == 0);
    ++retiled;
  }
  CHECK(retiled == 7);
}

TEST_CASE("gguf_float_tensors_quantised_by_twinbit_equal_the_gguf_package_quantisation") {
  // tiny_llama.quant.bin: for each 2-D F32 / F16 / BF16 tensor, gguf-py's Q8_0 then Q4_0 blocks.
  const auto f = open_fixture("tiny_llama.gguf");
  const std::vector<uint8_t> ref = read_bytes(import_fixture("tiny_llama.quant.bin"));
  size_t at = 0;
  int tensors = 0;
  for (const SourceTensor& t : f->tensors()) {
    const bool is_float = t.type == SourceType::f32 || t.type == SourceType::f16 ||
                          t.type == SourceType::bf16;
    if (!is_float || t.dims.size() != 2) continue;
    const std::vector<float> w = dequantised(*f, t);
    const int64_t n = t.dims[0], k = t.dims[1], blocks = n * k / 32;
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      const int64_t bb = prec == TB_PREC_Q8 ? 34 : 18;
      std::vector<uint8_t> mine(static_cast<size_t>(blocks * bb));
      for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* blk = &mine[b * bb];
        uint16_t d = 0;
        if (prec == TB_PREC_Q8) {
          quant::quantize_block_q8_0(&w[b * 32], reinterpret_cast<int8_t*>(blk + 2), &d);
        } else {
          quant::quantize_block_q4_0(&w[b * 32], blk + 2, &d);
        }
        blk[0] = uint8_t(d);
        blk[1] = uint8_t(d >> 8);
      }
      REQUIRE(at + mine.size() <= ref.size());
      INFO(t.name, prec == TB_PREC_Q8 ? " q8_0" : " q4_0");
      CHECK(std::memcmp(mine.data(), ref.data() + at, mine.size()) == 0);
      // And the strip cache's packer holds the same codes as the package's blocks re-tiled.
      auto from_package = quant::retile_gguf({ref.data() + at, mine.size()}, n, k, prec);
      REQUIRE(from_package.ok());
      const quant::PackedStrips packed = quant::pack_strips(w.data(), n, k, prec);
      CHECK(packed.codes == from_package->codes);
      CHECK(packed.scales == from_package->scales);
      at += mine.size();
    }
    ++tensors;
  }
  CHECK(tensors == 5);
  CHECK(at == ref.size());
}

TEST_CASE("gguf_release_drops_pages_but_the_bytes_read_back_unchanged") {
  const auto f = open_fixture("tiny_llama.gguf");
  for (const SourceTensor& t : f->tensors()) {
    const auto before = f->bytes(t);
    const std::vector<uint8_t> copy(before.begin(), before.end());
    f->release(t);
    const auto after = f->bytes(t);
    CHECK(after.data() == before.data());
    REQUIRE(after.size() == copy.size());
    CHECK(std::memcmp(after.data(), copy.data(), copy.size()) == 0);
  }
  const std::vector<float> again = dequantised(*f, f->tensors()[9]);  // Q4_K, after its release
  CHECK(again.size() == 32 * 256);
}
