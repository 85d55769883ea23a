// Hostile safetensors files and indexes: each gives a clean error naming the file, the tensor and
// the field, never a crash, a hang or an allocation sized by the file.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "artifacts/import/safetensors_file.h"
#include "test_artifact_util.h"
#include "test_import_util.h"

using namespace twinbit;
using namespace twinbit::import;
using testimport::st_bytes;

namespace {

Status parse(const std::vector<uint8_t>& bytes) {
  auto h = parse_safetensors(bytes, bytes.size(), "bad.safetensors");
  return h.ok() ? Status() : h.status();
}

Status parse(const std::string& header, size_t data_bytes) { return parse(st_bytes(header, data_bytes)); }

void expect_error(const Status& s, tb_code code, const std::vector<std::string>& parts) {
  CAPTURE(s.to_string());
  CHECK(s.code() == code);
  for (const auto& p : parts) CHECK_MESSAGE(s.message().find(p) != std::string::npos, p);
}

const char* const kGood =
    R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
    R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}})";

}  // namespace

TEST_SUITE("import") {

TEST_CASE("safetensors_good_header_parses_with_offsets_from_the_file_start") {
  const std::string header = kGood;
  auto h = parse_safetensors(st_bytes(header, 22), 8 + header.size() + 22, "good");
  REQUIRE_MESSAGE(h.ok(), h.status().to_string());
  REQUIRE(h->tensors.size() == 2);
  CHECK(h->tensors[0].name == "a");
  CHECK(h->tensors[0].offset == 8 + header.size());
  CHECK(h->tensors[1].type == SourceType::bf16);
  CHECK(h->tensors[1].offset == 8 + header.size() + 16);
  CHECK(h->tensors[1].bytes == 6);
  // A dtype twinbit does not import is listed, with its name, and still size-checked.
  auto other = parse_safetensors(st_bytes(R"({"ids":{"dtype":"I64","shape":[3],"data_offsets":[0,24]}})", 24),
                                 8 + 57 + 24, "ints");
  REQUIRE_MESSAGE(other.ok(), other.status().to_string());
  CHECK(other->tensors[0].type == SourceType::other);
  CHECK(other->tensors[0].type_name == "I64");
  // Trailing spaces pad the header, as the reference writer does; an empty model is a model.
  CHECK(parse(std::string(kGood) + "      ", 22).ok());
  CHECK(parse("{}", 0).ok());
}

TEST_CASE("safetensors_hostile_size_prefix") {
  expect_error(parse(std::vector<uint8_t>{1, 2, 3}), TB_DATA_LOSS, {"bad.safetensors", "8-byte header size"});
  auto huge = st_bytes("{}", 0);
  huge[5] = 1;  // 2^40 + 2
  expect_error(parse(huge), TB_INVALID_ARGUMENT, {"header size 1099511627778", "limit"});
  auto past = st_bytes("{}", 0);
  past[0] = 200;
  expect_error(parse(past), TB_DATA_LOSS, {"header size 200", "past the end of the file (10 bytes)"});
  // Every truncation of a good file is an error, never a crash.
  const auto good = st_bytes(kGood, 22);
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    CHECK_FALSE(parse(cut).ok());
  }
}

TEST_CASE("safetensors_hostile_json") {
  expect_error(parse("{\"a\": ", 0), TB_INVALID_ARGUMENT, {"bad.safetensors", "not valid JSON at byte"});
  expect_error(parse("[1, 2]", 0), TB_INVALID_ARGUMENT, {"not an object"});
  expect_error(parse(std::string(100000, '[') + std::string(100000, ']'), 0), TB_INVALID_ARGUMENT,
               {"nests deeper than 3"});
  std::string zeros = R"({"w":{"dtype":"F32","shape":[0)";
  for (int i = 0; i < 100000; ++i) zeros += ",0";
  expect_error(parse(zeros + R"(],"data_offsets":[0,0]}})", 0), TB_INVALID_ARGUMENT,
               {"array longer than 16 elements"});
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
               TB_INVALID_ARGUMENT, {"key 'a' twice"});
  expect_error(parse(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4),
               TB_INVALID_ARGUMENT, {"key 'dtype' twice"});
  expect_error(parse(R"({"__metadata__":{"k":5}})", 0), TB_INVALID_ARGUMENT, {"__metadata__['k']", "not a string"});
  expect_error(parse(R"({"__metadata__":[]})", 0), TB_INVALID_ARGUMENT, {"__metadata__ is"});
}

TEST_CASE("safetensors_hostile_tensor_fields_name_the_tensor_and_field") {
  struct Case {
    const char* header;
    size_t data;
    tb_code code;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {R"({"w":5})", 0, TB_INVALID_ARGUMENT, {"tensor 'w'", "expected an object"}},
      {R"({"w":{"dtype":"F32","shape":[1]}})", 0, TB_INVALID_ARGUMENT, {"tensor 'w'", "no data_offsets"}},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4, TB_INVALID_ARGUMENT,
       {"tensor 'w'", "unknown field 'x'"}},
      {R"({"w":{"dtype":"Q4_0","shape":[1],"data_offsets":[0,4]}})", 4, TB_INVALID_ARGUMENT,
       {"tensor 'w'", "dtype '\"Q4_0\"'"}},
      {R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 4, TB_INVALID_ARGUMENT, {"dtype '7'"}},
      {R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, TB_INVALID_ARGUMENT,
       {"tensor 'w'", "shape[0] = '-1'"}},
      {R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8, TB_INVALID_ARGUMENT, {"shape[0] = '2.0'"}},
      {R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", 8, TB_INVALID_ARGUMENT, {"shape '\"2\"'"}},
      {R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8, TB_INVALID_ARGUMENT,
       {"tensor 'w'", "63 bits"}},
      {R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4,
       TB_INVALID_ARGUMENT, {"array longer than 16 elements"}},
      {R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2, TB_INVALID_ARGUMENT, {"whole number of bytes"}},
      {R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})", 12, TB_INVALID_ARGUMENT,
       {"tensor 'w'", "data_offsets [0, 12] hold 12 bytes", "needs 16"}},
      {R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8, TB_DATA_LOSS,
       {"tensor 'w'", "past the data section (8 bytes)"}},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8, TB_INVALID_ARGUMENT, {"begin <= end"}},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 8, TB_INVALID_ARGUMENT, {"data_offsets '[0]'"}},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, TB_INVALID_ARGUMENT, {"tensor 'v'", "overlap tensor 'w'"}},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
       8, TB_INVALID_ARGUMENT, {"overlap"}},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, TB_INVALID_ARGUMENT,
       {"bytes [0, 4)", "gap before tensor 'w'"}},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 9, TB_INVALID_ARGUMENT,
       {"bytes [4, 9) at the end of the data section"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.header);
    expect_error(parse(c.header, c.data), c.code, c.parts);
  }
  // A zero-size tensor overlaps nothing.
  CHECK(parse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"F16","shape":[0,5],"data_offsets":[4,4]}})", 8)
            .ok());
}

TEST_CASE("safetensors_hostile_files_and_indexes") {
  using testimport::write_bytes;
  using testimport::write_text;
  testart::TempDir dir;
  const std::string d = dir.path + "/";
  auto err = [](const std::string& path) {
    auto f = open_safetensors(path);
    return f.ok() ? Status() : f.status();
  };
  expect_error(err(d + "missing.safetensors"), TB_INVALID_ARGUMENT, {"missing.safetensors"});
  expect_error(err(dir.path), TB_INVALID_ARGUMENT, {"neither model.safetensors.index.json nor model.safetensors"});
  write_bytes(d + "empty.safetensors", {});
  expect_error(err(d + "empty.safetensors"), TB_DATA_LOSS, {"empty.safetensors", "0 bytes"});

  // A folder with model.safetensors alone opens it.
  write_bytes(d + "model.safetensors", st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
  REQUIRE(open_safetensors(dir.path).ok());
  write_bytes(d + "s1.safetensors", st_bytes(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));

  struct Case {
    const char* index;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {R"({"weight_map":{"a":"model.safetensors","b":"gone.safetensors"}})", {"names shard gone.safetensors", "cannot open"}},
      {R"({"weight_map":{"a":"model.safetensors","c":"s1.safetensors"}})", {"tensor 'c' in s1.safetensors", "does not hold it"}},
      {R"({"weight_map":{"a":"model.safetensors"}})", {}},  // a good index: checked below
      {R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}})", {"tensor 'a' in s1.safetensors"}},
      {R"({"weight_map":{"a":"../model.safetensors"}})", {"'../model.safetensors' is not a file name"}},
      {R"({"weight_map":{"a":7}})", {"weight_map['a'] is '7'"}},
      {R"({"metadata":{}})", {"no weight_map"}},
      {R"({"weight_map":{}})", {"names no tensor"}},
      {R"({"weight_map":{"a":"model.safetensors","a":"s1.safetensors"}})", {"key 'a' twice"}},
      {R"({"weight_map":)", {"not valid JSON at byte"}},
      {R"({"metadata":[],"weight_map":{"a":"model.safetensors"}})", {"metadata is"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.index);
    write_text(d + "model.safetensors.index.json", c.index);
    const Status s = err(dir.path);
    if (c.parts.empty()) {
      CHECK_MESSAGE(s.ok(), s.to_string());
      continue;
    }
    expect_error(s, TB_INVALID_ARGUMENT, c.parts);
    CHECK(s.message().find("model.safetensors.index.json") != std::string::npos);
  }
  // A shard holding a tensor the index does not name; the same tensor in two shards.
  write_text(d + "model.safetensors.index.json", R"({"weight_map":{"b":"s1.safetensors"}})");
  write_bytes(d + "s1.safetensors", st_bytes(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                             R"("z":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8));
  expect_error(err(dir.path), TB_INVALID_ARGUMENT, {"s1.safetensors holds tensor 'z'", "does not name"});
  write_bytes(d + "s2.safetensors", st_bytes(R"({"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
  write_text(d + "model.safetensors.index.json", R"({"weight_map":{"b":"s1.safetensors","z":"s2.safetensors"}})");
  expect_error(err(dir.path), TB_INVALID_ARGUMENT, {"tensor 'z' is in two shards", "s1.safetensors", "s2.safetensors"});
}

}  // TEST_SUITE
