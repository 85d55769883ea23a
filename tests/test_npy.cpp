// The .npy reader/writer (artifacts/npy.h) and the row files built on it (float_rows_file.h):
// what NumPy writes is read, what we write is NumPy's own layout byte for byte, and hostile
// headers (bad magic and versions, other dtypes, malformed dicts, huge shapes, truncation) give a
// clean INVALID_ARGUMENT or DATA_LOSS naming what was wrong - never a crash.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "artifacts/float_rows_file.h"
#include "artifacts/npy.h"
#include "test_artifact_util.h"

using namespace twinbit;

namespace {

// A version-1.0 file around `dict` (no padding) followed by `payload_bytes` bytes of 0x3f.
std::vector<uint8_t> npy_file(const std::string& dict, size_t payload_bytes, int major = 1) {
  std::string f(npy::kNpyMagic, 6);
  f += static_cast<char>(major);
  f += '\0';
  const size_t len = dict.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) f += static_cast<char>((len >> (8 * i)) & 0xff);
  f += dict;
  f.append(payload_bytes, '\x3f');
  return std::vector<uint8_t>(f.begin(), f.end());
}

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

const std::string kDict23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";

}  // namespace

TEST_SUITE("npy") {

TEST_CASE("npy_header_is_numpys_own_layout_v1_padded_to_64_shape_2x3_and_5") {
  // np.save(f, np.zeros((2, 3), '<f4')) writes exactly these 128 bytes before the payload.
  std::string want(npy::kNpyMagic, 6);
  want += std::string("\x01\x00\x76\x00", 4) + "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  want.append(128 - want.size() - 1, ' ');
  want += '\n';
  CHECK(npy::header({2, 3}) == want);
  const std::string h1 = npy::header({5});
  CHECK(h1.size() % 64 == 0);
  CHECK(h1.find("'shape': (5,), }") != std::string::npos);
  CHECK(npy::shape_text({}) == "()");
}

TEST_CASE("npy_parse_roundtrip_v1_v2_v3_key_order_and_quotes") {
  std::vector<float> values = {1.5f, -0.0f, 3e-39f, 7.0f, -2.25f, 1e30f};
  std::string file = npy::header({2, 3});
  file.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  const std::vector<uint8_t> bytes = bytes_of(file);  // the parsed payload is a view into these
  auto a = npy::parse(bytes, "x.npy");
  REQUIRE(a.ok());
  CHECK(a->shape == std::vector<int64_t>{2, 3});
  REQUIRE(a->payload.size() == 24);
  CHECK(std::memcmp(a->payload.data(), values.data(), 24) == 0);

  for (int major : {2, 3}) {
    auto b = npy::parse(npy_file(kDict23, 24, major), "v.npy");
    REQUIRE(b.ok());
    CHECK(b->count() == 6);
  }
  auto c = npy::parse(npy_file("{\"shape\": (4,), \"fortran_order\": False, \"descr\": \"<f4\"}", 16), "c.npy");
  REQUIRE(c.ok());
  CHECK(c->shape == std::vector<int64_t>{4});
  auto scalar = npy::parse(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4), "s.npy");
  REQUIRE(scalar.ok());
  CHECK(scalar->shape.empty());
  auto empty = npy::parse(npy_file("{'descr':'<f4','fortran_order':False,'shape':(0, 3)}", 0), "e.npy");
  REQUIRE(empty.ok());
  CHECK(empty->count() == 0);
}

TEST_CASE("npy_hostile_headers_each_give_the_named_error") {
  struct Bad {
    const char* what;
    std::vector<uint8_t> bytes;
    tb_code code;
    const char* says;
  };
  std::string many = "(";
  for (int i = 0; i < 33; ++i) many += "1, ";
  many += ")";
  auto dict = [](const std::string& shape, const std::string& descr = "'<f4'", const std::string& fo = "False") {
    return "{'descr': " + descr + ", 'fortran_order': " + fo + ", 'shape': " + shape + ", }";
  };
  std::vector<uint8_t> v1_long = npy_file(kDict23, 24);
  v1_long[8] = 0xff;
  v1_long[9] = 0xff;
  std::vector<uint8_t> v2_long = npy_file(kDict23, 24, 2);
  for (int i = 8; i < 12; ++i) v2_long[i] = 0xff;
  std::vector<uint8_t> v4 = npy_file(kDict23, 24);
  v4[6] = 4;
  std::vector<uint8_t> v11 = npy_file(kDict23, 24);
  v11[7] = 1;
  std::vector<uint8_t> nul = npy_file(kDict23, 24);
  nul[20] = 0;
  const std::vector<Bad> cases = {
      {"empty", {}, TB_DATA_LOSS, "is empty"},
      {"magic only", bytes_of(std::string(npy::kNpyMagic, 4)), TB_DATA_LOSS, "preamble"},
      {"preamble cut", bytes_of(std::string(npy::kNpyMagic, 6) + "\x01"), TB_DATA_LOSS, "preamble"},
      {"a zip file", bytes_of("PK\x03\x04 not numpy"), TB_INVALID_ARGUMENT, "not a .npy file"},
      {"version 4.0", v4, TB_INVALID_ARGUMENT, "version 4.0"},
      {"version 1.1", v11, TB_INVALID_ARGUMENT, "version 1.1"},
      {"v1 header length past the end", v1_long, TB_DATA_LOSS, "65535 bytes long"},
      {"v2 header length 4 GiB", v2_long, TB_DATA_LOSS, "4294967295 bytes long"},
      {"float64", npy_file(dict("(2, 3)", "'<f8'"), 48), TB_INVALID_ARGUMENT, "dtype '<f8'"},
      {"big-endian float32", npy_file(dict("(2, 3)", "'>f4'"), 24), TB_INVALID_ARGUMENT, "dtype '>f4'"},
      {"float16", npy_file(dict("(2, 3)", "'<f2'"), 12), TB_INVALID_ARGUMENT, "dtype '<f2'"},
      {"structured dtype", npy_file(dict("(2,)", "[('a', '<f4')]"), 8), TB_INVALID_ARGUMENT, "a quoted dtype"},
      {"Fortran order", npy_file(dict("(2, 3)", "'<f4'", "True"), 24), TB_INVALID_ARGUMENT, "Fortran"},
      {"fortran_order 0", npy_file(dict("(2, 3)", "'<f4'", "0"), 24), TB_INVALID_ARGUMENT, "True or False"},
      {"no shape", npy_file("{'descr': '<f4', 'fortran_order': False}", 24), TB_INVALID_ARGUMENT, "no 'shape'"},
      {"no descr", npy_file("{'fortran_order': False, 'shape': (6,)}", 24), TB_INVALID_ARGUMENT, "no 'descr'"},
      {"descr twice", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 24), TB_INVALID_ARGUMENT, "'descr' twice"},
      {"unknown key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24), TB_INVALID_ARGUMENT, "key 'x'"},
      {"(5) is not a tuple", npy_file(dict("(6)"), 24), TB_INVALID_ARGUMENT, "(5,)"},
      {"negative dimension", npy_file(dict("(-1, 3)"), 24), TB_INVALID_ARGUMENT, "non-negative integer"},
      {"python 2 long", npy_file(dict("(2L, 3L)"), 24), TB_INVALID_ARGUMENT, "',' or ')'"},
      {"leading zero", npy_file(dict("(02, 3)"), 24), TB_INVALID_ARGUMENT, "leading zeros"},
      {"dimension past 2^24", npy_file(dict("(99999999999999999999999, 3)"), 24), TB_INVALID_ARGUMENT, "larger than 16777216"},
      {"33 dimensions", npy_file(dict(many), 4), TB_INVALID_ARGUMENT, "more than 32 dimensions"},
      {"2^96 elements", npy_file(dict("(16777216, 16777216, 16777216, 16777216)"), 24), TB_INVALID_ARGUMENT, "too many elements"},
      {"payload truncated", npy_file(kDict23, 20), TB_DATA_LOSS, "truncated"},
      {"payload too long", npy_file(kDict23, 28), TB_DATA_LOSS, "extra bytes"},
      {"dict never closed", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24), TB_INVALID_ARGUMENT, "the end of the header"},
      {"string never closed", npy_file("{'descr: <f4}", 24), TB_INVALID_ARGUMENT, "closing quote"},
      {"escape in a string", npy_file("{'des\\cr': '<f4'}", 24), TB_INVALID_ARGUMENT, "without escapes"},
      {"junk after the dict", npy_file(kDict23 + "x", 24), TB_INVALID_ARGUMENT, "after the dict"},
      {"NUL in the header", nul, TB_INVALID_ARGUMENT, "malformed"},
      {"not a dict", npy_file("['descr', '<f4']", 24), TB_INVALID_ARGUMENT, "'{'"},
  };
  for (const Bad& b : cases) {
    CAPTURE(b.what);
    auto r = npy::parse(b.bytes, "bad.npy");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == b.code);
    CHECK_MESSAGE(r.status().message().find(b.says) != std::string::npos, r.status().to_string());
    CHECK(r.status().message().find("bad.npy") != std::string::npos);
  }
}

TEST_CASE("npy_every_truncation_of_a_valid_file_is_data_loss") {
  std::string file = npy::header({3, 4});
  file.append(48, '\0');
  for (size_t n = 0; n < file.size(); ++n) {
    CAPTURE(n);
    auto r = npy::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(file.data()), n), "t.npy");
    REQUIRE_FALSE(r.ok());
    // The header's length is checked before its text is parsed, so a cut anywhere reads as short.
    CHECK(r.status().code() == TB_DATA_LOSS);
  }
}

TEST_CASE("float_rows_raw_f32_M_inferred_K4_M3_and_refusals") {
  const testart::TempDir dir;
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i) - 5.5f;
  const std::string raw = dir.path + "/x.f32";
  REQUIRE(artifact::write_float_rows(raw, artifact::FileFormat::automatic, 3, 4, v.data()).ok());
  CHECK(testart::read_file(raw).size() == 48);
  auto r = artifact::read_float_rows(raw, artifact::FileFormat::automatic, 4, 100);
  REQUIRE(r.ok());
  CHECK(r->rows == 3);
  CHECK(std::memcmp(r->values.data(), v.data(), 48) == 0);

  auto wrong_k = artifact::read_float_rows(raw, artifact::FileFormat::f32, 5, 100);
  CHECK(wrong_k.status().code() == TB_DATA_LOSS);
  CHECK(wrong_k.status().message().find("not a whole number of rows of K = 5") != std::string::npos);
  auto too_many = artifact::read_float_rows(raw, artifact::FileFormat::f32, 4, 2);
  CHECK(too_many.status().code() == TB_INVALID_ARGUMENT);
  CHECK(too_many.status().message().find("more than 2 rows") != std::string::npos);
  write_bytes(dir.path + "/empty.f32", {});
  CHECK(artifact::read_float_rows(dir.path + "/empty.f32", artifact::FileFormat::f32, 4, 100).status().code() == TB_INVALID_ARGUMENT);
  CHECK(artifact::read_float_rows(dir.path + "/none.f32", artifact::FileFormat::f32, 4, 100).status().code() == TB_UNAVAILABLE);
}

TEST_CASE("float_rows_npy_shapes_MxK_and_K_written_npy_reads_back_bit_equal") {
  const testart::TempDir dir;
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[i] = 1.0f / static_cast<float>(i + 1);
  const std::string p = dir.path + "/y.npy";
  REQUIRE(artifact::write_float_rows(p, artifact::FileFormat::automatic, 2, 4, v.data()).ok());
  const std::vector<uint8_t> b = testart::read_file(p);
  REQUIRE(b.size() == 128 + 32);
  CHECK(std::string(b.begin() + 10, b.begin() + 69) == "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }");
  auto r = artifact::read_float_rows(p, artifact::FileFormat::automatic, 4, 100);
  REQUIRE(r.ok());
  CHECK(r->rows == 2);
  CHECK(std::memcmp(r->values.data(), v.data(), 32) == 0);

  std::string one = npy::header({4});
  one.append(reinterpret_cast<const char*>(v.data()), 16);
  write_bytes(dir.path + "/row.npy", bytes_of(one));
  auto row = artifact::read_float_rows(dir.path + "/row.npy", artifact::FileFormat::automatic, 4, 1);
  REQUIRE(row.ok());
  CHECK(row->rows == 1);

  auto wrong_k = artifact::read_float_rows(p, artifact::FileFormat::npy, 8, 100);
  CHECK(wrong_k.status().code() == TB_INVALID_ARGUMENT);
  CHECK(wrong_k.status().message().find("shape (2, 4): rows of 4 values, but the projection's K is 8") != std::string::npos);
  std::string cube = npy::header({1, 2, 4});
  cube.append(32, '\0');
  write_bytes(dir.path + "/cube.npy", bytes_of(cube));
  CHECK(artifact::read_float_rows(dir.path + "/cube.npy", artifact::FileFormat::npy, 4, 100).status().message().find("expected (M, 4) or (4,)") != std::string::npos);
  std::string none = npy::header({0, 4});
  write_bytes(dir.path + "/none.npy", bytes_of(none));
  CHECK(artifact::read_float_rows(dir.path + "/none.npy", artifact::FileFormat::npy, 4, 100).status().message().find("no rows") != std::string::npos);
  // A .npy read as raw float32 is refused rather than taken as floats.
  auto as_raw = artifact::read_float_rows(p, artifact::FileFormat::f32, 4, 100);
  CHECK(as_raw.status().code() == TB_INVALID_ARGUMENT);
  CHECK(as_raw.status().message().find(".npy magic") != std::string::npos);
}

TEST_CASE("float_rows_file_format_names") {
  CHECK(artifact::parse_file_format("npy").value() == artifact::FileFormat::npy);
  CHECK(artifact::parse_file_format("f16").status().code() == TB_INVALID_ARGUMENT);
  CHECK(artifact::resolve_file_format(artifact::FileFormat::automatic, "a/b.npy") == artifact::FileFormat::npy);
  CHECK(artifact::resolve_file_format(artifact::FileFormat::automatic, "a/b.bin") == artifact::FileFormat::f32);
  CHECK(artifact::resolve_file_format(artifact::FileFormat::f32, "a/b.npy") == artifact::FileFormat::f32);
}

}  // TEST_SUITE
