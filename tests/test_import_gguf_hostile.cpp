// Hostile GGUF files: every one gets a clean error naming the field and the offending value - no
// crash, no read outside the file, no allocation sized by an unchecked count.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "artifacts/import/gguf_file.h"
#include "test_import_gguf_util.h"

using namespace twinbit;
using namespace twinbit::import;
using twinbit::testing::GgufBytes;
using twinbit::testing::import_fixture;
using twinbit::testing::read_bytes;

namespace {

constexpr uint32_t kF32 = 0, kQ4K = 12;

Status parse(const std::vector<uint8_t>& b) { return parse_gguf(b, "hostile.gguf").status(); }

void expect_error(const GgufBytes& g, tb_code code, const std::string& words) {
  const Status s = parse(g.b);
  INFO(s.to_string());
  CHECK(s.code() == code);
  CHECK(s.message().find(words) != std::string::npos);
  CHECK(s.message().rfind("hostile.gguf: ", 0) == 0);
}

// A valid file: one KV, one 2 x 32 F32 tensor.
GgufBytes valid(uint32_t alignment = 32) {
  GgufBytes g;
  g.header(1, 1).kv_u32("general.alignment", alignment).tensor("w", {32, 2}, kF32, 0);
  const bool power_of_two = alignment != 0 && (alignment & (alignment - 1)) == 0;
  return g.pad_and_data(power_of_two ? alignment : 32, 256);
}

// One tensor info after the header (no KVs), then `data` bytes of data.
GgufBytes one_tensor(std::vector<uint64_t> ne, uint32_t type, uint64_t offset = 0,
                     uint64_t data = 256) {
  GgufBytes g;
  g.header(1, 0).tensor("blk.0.attn_q.weight", std::move(ne), type, offset);
  return g.pad_and_data(32, data);
}

}  // namespace

TEST_CASE("gguf_hostile_the_valid_base_file_parses") {
  auto f = parse_gguf(valid().b, "valid.gguf");
  REQUIRE(f.ok());
  REQUIRE(f.value()->tensors().size() == 1);
  CHECK(f.value()->tensors()[0].dims == std::vector<int64_t>{2, 32});
  CHECK(f.value()->tensors()[0].offset % 32 == 0);
}

TEST_CASE("gguf_hostile_a_fixture_truncated_at_every_byte_is_refused_naming_what_was_cut") {
  const std::vector<uint8_t> whole = read_bytes(import_fixture("all_types.gguf"));
  REQUIRE(whole.size() > 1000);
  for (size_t len = 0; len < whole.size(); ++len) {
    const Status s = parse({whole.begin(), whole.begin() + static_cast<ptrdiff_t>(len)});
    INFO("length ", len, ": ", s.to_string());
    REQUIRE(s.code() == TB_DATA_LOSS);
    const bool named = s.message().find("ends inside") != std::string::npos ||
                       s.message().find("cannot fit") != std::string::npos ||
                       s.message().find("too short") != std::string::npos ||
                       s.message().find("runs past the end") != std::string::npos ||
                       s.message().find("past the end of the file") != std::string::npos;
    CHECK(named);
  }
  CHECK(parse(whole).ok());
  // The header fields by name.
  CHECK(parse({whole.begin(), whole.begin() + 6}).message().find("version") != std::string::npos);
  CHECK(parse({whole.begin(), whole.begin() + 12}).message().find("tensor_count") !=
        std::string::npos);
  CHECK(parse({whole.begin(), whole.begin() + 20}).message().find("kv_count") !=
        std::string::npos);
}

TEST_CASE("gguf_hostile_magic_and_version") {
  GgufBytes g = valid();
  g.b[0] = 'X';
  expect_error(g, TB_INVALID_ARGUMENT, "magic is 58 47 55 46");
  for (uint32_t v : {1u, 4u, 0xffffffffu}) {
    GgufBytes h;
    h.header(0, 0, v);
    expect_error(h, TB_INVALID_ARGUMENT, "GGUF version " + std::to_string(v));
  }
  GgufBytes big_endian;
  big_endian.header(0, 0, 0x03000000);
  expect_error(big_endian, TB_INVALID_ARGUMENT, "a big-endian GGUF file (version 3 byte-swapped)");
  GgufBytes v2;
  v2.header(0, 0, 2);
  CHECK(parse(v2.b).ok());
}

TEST_CASE("gguf_hostile_huge_counts_are_refused_before_anything_is_sized_by_them") {
  GgufBytes t;
  t.header(uint64_t{1} << 60, 0);
  expect_error(t, TB_DATA_LOSS, "tensor_count 1152921504606846976 cannot fit");
  GgufBytes k;
  k.header(0, ~uint64_t{0});
  expect_error(k, TB_DATA_LOSS, "kv_count 18446744073709551615 cannot fit");
  GgufBytes a;  // an array of 2^61 u64
  a.header(0, 1).str("big").u32(9).u32(10).u64(uint64_t{1} << 61);
  expect_error(a, TB_DATA_LOSS, "KV 0 'big' array of 2305843009213693952 u64 cannot fit");
  GgufBytes s;  // an array of 2^40 strings, each at least 8 bytes
  s.header(0, 1).str("tokens").u32(9).u32(8).u64(uint64_t{1} << 40);
  expect_error(s, TB_DATA_LOSS, "array of 1099511627776 string cannot fit");
}

TEST_CASE("gguf_hostile_string_lengths_past_the_end") {
  GgufBytes k;
  k.header(0, 1).u64(1000).str("abc");
  expect_error(k, TB_DATA_LOSS, "KV 0: the file ends inside key (needs 1000 bytes");
  GgufBytes v;
  v.header(0, 1).str("general.name").u32(8).u64(uint64_t{1} << 63);
  expect_error(v, TB_DATA_LOSS, "KV 0 'general.name': the file ends inside string value");
  GgufBytes n;
  n.header(1, 0).u64(200).str(std::string(40, 'x'));
  expect_error(n, TB_DATA_LOSS, "tensor 0: the file ends inside name");
  GgufBytes long_name;
  long_name.header(1, 0).str(std::string(300, 'a'));
  expect_error(long_name, TB_DATA_LOSS, "name length is 300 bytes (expected at most 256)");
}

TEST_CASE("gguf_hostile_value_types_nesting_bools_keys") {
  GgufBytes t;
  t.header(0, 1).str("k").u32(13).u32(0);
  expect_error(t, TB_DATA_LOSS, "KV 0 'k' value type 13 is not a GGUF type");
  GgufBytes e;
  e.header(0, 1).str("k").u32(9).u32(77).u64(1);
  expect_error(e, TB_DATA_LOSS, "array element type 77");
  GgufBytes deep;
  deep.header(0, 1).str("k").u32(9);
  for (int i = 0; i < 9; ++i) deep.u32(9).u64(1);
  deep.u32(0).u64(0);
  expect_error(deep, TB_DATA_LOSS, "arrays nest more than 8 deep");
  GgufBytes b;
  b.header(0, 1).str("flag").u32(7).u8(2);
  expect_error(b, TB_DATA_LOSS, "'flag' bool value is 2");
  GgufBytes dup;
  dup.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
  expect_error(dup, TB_DATA_LOSS, "KV 1 'a.b' key appears twice");
  GgufBytes empty;
  empty.header(0, 1).str("").u32(0).u8(0).u8(0);
  expect_error(empty, TB_DATA_LOSS, "KV 0 key is empty");
}

TEST_CASE("gguf_hostile_keys_and_names_must_be_printable_text_string_values_are_escaped") {
  GgufBytes key;
  key.header(0, 1).kv_u32("general.\x1b[31mname", 1);
  expect_error(key, TB_DATA_LOSS, "KV 0 key is not valid text: ");
  CHECK(parse(key.b).message().find('\x1b') == std::string::npos);
  GgufBytes name;
  name.header(1, 0).tensor("blk.0\n", {32}, kF32, 0).pad_and_data(32, 128);
  expect_error(name, TB_DATA_LOSS, "tensor 0 name is not valid text: ");
  GgufBytes bad_utf8;
  bad_utf8.header(1, 0).tensor("w\xc0\xaf", {32}, kF32, 0).pad_and_data(32, 128);
  expect_error(bad_utf8, TB_DATA_LOSS, "tensor 0 name is not valid text: ");
  GgufBytes value;
  value.header(0, 2).str("a").u32(8).str("line 1\n\x1b[2J\\").str("b").u32(8).str("caf\xc3\xa9");
  auto f = parse_gguf(value.b, "value.gguf");
  REQUIRE(f.ok());
  const auto kv = f.value()->metadata();
  CHECK(kv[0].second == "line 1\\x0a\\x1b[2J\\x5c");
  CHECK(kv[1].second == "caf\xc3\xa9");  // valid text stays as it is
}

TEST_CASE("gguf_hostile_alignment") {
  for (uint32_t a : {0u, 3u, 48u}) {
    expect_error(valid(a), TB_DATA_LOSS, "'general.alignment' is " + std::to_string(a) +
                 " (expected a nonzero power of two)");
  }
  GgufBytes wrong_type;
  wrong_type.header(0, 1).str("general.alignment").u32(10).u64(32);
  expect_error(wrong_type, TB_DATA_LOSS, "has value type 10 (expected 4, u32)");
  expect_error(one_tensor({32}, kF32, 16), TB_DATA_LOSS,
               "tensor 0 'blk.0.attn_q.weight' offset 16 is not a multiple of the alignment 32");
  auto big = parse_gguf(valid(4096).b, "aligned.gguf");
  REQUIRE(big.ok());
  CHECK(big.value()->tensors()[0].offset == 4096);
}

TEST_CASE("gguf_hostile_dims_n_dims_overflow_types") {
  expect_error(one_tensor({}, kF32), TB_DATA_LOSS, "n_dims is 0 (expected 1 .. 4)");
  expect_error(one_tensor({1, 1, 1, 1, 1, 1, 1, 1, 1}, kF32), TB_DATA_LOSS, "n_dims is 9");
  expect_error(one_tensor({32, 0}, kF32), TB_DATA_LOSS, "ne[1] is 0");
  expect_error(one_tensor({uint64_t{1} << 63}, kF32), TB_DATA_LOSS, "ne[0] is 9223372036854775808");
  expect_error(one_tensor({uint64_t{1} << 40, uint64_t{1} << 30}, kF32), TB_DATA_LOSS,
               "element count overflows at ne[1] = 1073741824");
  expect_error(one_tensor({uint64_t{1} << 61, 2}, kF32), TB_DATA_LOSS,
               "more than 2^62 bytes");
  expect_error(one_tensor({32}, 99), TB_DATA_LOSS, "type 99 is not a GGML type");
  expect_error(one_tensor({32}, 4), TB_DATA_LOSS, "type 4 is not a GGML type");
  expect_error(one_tensor({100, 2}, kQ4K), TB_DATA_LOSS,
               "ne[0] = 100 is not a whole number of Q4_K blocks (256 elements)");
}

TEST_CASE("gguf_hostile_tensor_offsets_past_the_end_overlapping_and_duplicate_names") {
  expect_error(one_tensor({32, 2}, kF32, 0, 255), TB_DATA_LOSS,
               "tensor 0 'blk.0.attn_q.weight': offset 0 + 256 bytes runs past the end of the data "
               "section (255 bytes from file offset 96; file 351 bytes)");
  expect_error(one_tensor({32}, kF32, uint64_t{1} << 63), TB_DATA_LOSS, "runs past the end");
  expect_error(one_tensor({32}, kF32, ~uint64_t{31}), TB_DATA_LOSS, "runs past the end");
  GgufBytes overlap;
  overlap.header(2, 0).tensor("a", {64}, kF32, 0).tensor("b", {32}, kF32, 128);
  overlap.pad_and_data(32, 512);
  expect_error(overlap, TB_DATA_LOSS, "tensor 0 'a' (file bytes");
  expect_error(overlap, TB_DATA_LOSS, "overlaps tensor 1 'b'");
  GgufBytes dup;
  dup.header(2, 0).tensor("w", {32}, kF32, 0).tensor("w", {32}, kF32, 128);
  dup.pad_and_data(32, 512);
  expect_error(dup, TB_DATA_LOSS, "tensor 1 'w' name appears twice");
  GgufBytes no_data;  // the header ends; no data section at all
  no_data.header(1, 0).tensor("w", {32}, kF32, 0);
  expect_error(no_data, TB_DATA_LOSS, "past the end of the file");
}

TEST_CASE("gguf_hostile_open_gguf_paths_and_a_header_longer_than_the_first_read") {
  CHECK(open_gguf("/nonexistent/model.gguf").status().code() == TB_INVALID_ARGUMENT);
  CHECK(open_gguf(std::filesystem::temp_directory_path().string()).status().code() ==
        TB_INVALID_ARGUMENT);
  // A 3 MiB string KV: the header is parsed again from a longer copy of the file's start.
  GgufBytes g;
  g.header(1, 1).str("tokenizer.chat_template").u32(8).str(std::string(3 << 20, 'x'));
  g.tensor("w", {32}, kF32, 0);
  const size_t header_end = g.b.size();
  g.pad_and_data(32, 128);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("twinbit_gguf_long_header_" + std::to_string(::getpid()) + ".gguf"))
                               .string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(g.b.data()),
                                              static_cast<std::streamsize>(g.b.size()));
  auto f = open_gguf(path);
  INFO(f.status().to_string());
  REQUIRE(f.ok());
  CHECK(f.value()->tensors()[0].name == "w");
  CHECK(f.value()->metadata()[0].second.size() == size_t{3} << 20);
  // Cut inside the tensor infos, past the first read: still the field's name.
  std::filesystem::resize_file(path, header_end - 5);
  const Status s = open_gguf(path).status();
  CHECK(s.message().find("tensor 0 'w': the file ends inside") != std::string::npos);
  std::remove(path.c_str());
}
