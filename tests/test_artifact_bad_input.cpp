// The reader against damaged and hostile files: every truncation, every bit flip of the header
// and manifest, and forged files whose checksum was recomputed (so only the structural checks
// stand between them and an out-of-bounds read). Each must give a clean DATA_LOSS naming the
// field. A corrupted payload must be caught by verify / view_verified.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "core/op_checks.h"
#include "test_artifact_util.h"

using namespace twinbit;
using namespace twinbit::artifact;
using testart::put_u32;
using testart::put_u64;
using testart::reseal;

namespace {

std::vector<uint8_t> small_image() {
  const testart::Small s = testart::make_small();
  auto image = s.writer.serialize(s.provenance);
  if (!image.ok()) throw std::runtime_error(image.status().to_string());
  return std::move(image).value();
}

// Parses; returns the error message (empty if it parsed).
std::string parse_error(const std::vector<uint8_t>& b, tb_code* code = nullptr) {
  auto a = parse(b, "forged");
  if (code) *code = a.status().code();
  return a.ok() ? std::string() : a.status().message();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("artifact") {

TEST_CASE("bad_input_every_truncation_length_of_small_artifact_is_data_loss") {
  const std::vector<uint8_t> image = small_image();
  size_t refused = 0;
  for (size_t len = 0; len < image.size(); ++len) {
    auto a = parse({image.data(), len}, "truncated");
    refused += (!a.ok() && a.status().code() == TB_DATA_LOSS) ? 1 : 0;
  }
  CHECK(refused == image.size());
}

TEST_CASE("bad_input_every_truncation_with_header_file_bytes_forged_and_resealed_is_data_loss") {
  // A forger who shortens the file and fixes file_bytes and the checksum: what is left must still
  // be refused, by the manifest bounds (cut inside the manifest) or the payload bounds.
  const std::vector<uint8_t> image = small_image();
  const size_t last_payload_end = image.size();
  size_t refused = 0, tried = 0;
  for (size_t len = kHeaderBytes; len < last_payload_end; ++len) {
    std::vector<uint8_t> b(image.begin(), image.begin() + static_cast<long>(len));
    put_u64(b, kOffFileBytes, len);
    const uint64_t mbytes = testart::get_u64(b, kOffManifestBytes);
    if (kHeaderBytes + mbytes > len) {  // the manifest no longer fits: shrink it too
      put_u64(b, kOffManifestBytes, len - kHeaderBytes);
    }
    if (len > kHeaderBytes) reseal(b);
    tb_code code = TB_OK;
    const std::string err = parse_error(b, &code);
    ++tried;
    refused += (!err.empty() && code == TB_DATA_LOSS) ? 1 : 0;
  }
  CHECK(refused == tried);
}

TEST_CASE("bad_input_flip_of_every_bit_of_header_and_manifest_is_data_loss") {
  const std::vector<uint8_t> image = small_image();
  const uint64_t covered = kHeaderBytes + testart::get_u64(image, kOffManifestBytes);
  std::vector<uint8_t> b = image;
  size_t refused = 0;
  for (size_t bit = 0; bit < covered * 8; ++bit) {
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    tb_code code = TB_OK;
    const std::string err = parse_error(b, &code);
    refused += (!err.empty() && code == TB_DATA_LOSS) ? 1 : 0;
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
  CHECK(refused == covered * 8);
  CHECK(parse_error(b).empty());  // restored
}

TEST_CASE("bad_input_wrong_magic_names_expected_magic") {
  std::vector<uint8_t> b = small_image();
  std::memcpy(b.data(), "GGUF\3\0\0\0", 8);
  const std::string err = parse_error(b);
  CHECK(contains(err, "invalid magic"));
  CHECK(contains(err, "expected 'TWINBIT\\0'"));
}

TEST_CASE("bad_input_format_version_3_and_0_name_the_version") {
  std::vector<uint8_t> b = small_image();
  put_u32(b, kOffVersion, 3);
  reseal(b);
  tb_code code = TB_OK;
  std::string err = parse_error(b, &code);
  CHECK(code == TB_DATA_LOSS);
  CHECK(contains(err, "file is format version 3, this reader supports 1 up to 1"));
  put_u32(b, kOffVersion, 0);
  reseal(b);
  CHECK(contains(parse_error(b), "format version 0"));
}

TEST_CASE("bad_input_forged_header_fields_resealed_are_refused_by_field") {
  const std::vector<uint8_t> image = small_image();
  struct Case {
    uint64_t off;
    int width;
    uint64_t value;
    const char* expect;
  };
  const Case cases[] = {
      {kOffHeaderBytes, 4, 128, "header_bytes"},
      {kOffManifestOff, 8, 4096, "manifest_offset"},
      {kOffManifestBytes, 8, ~uint64_t{0}, "manifest_bytes"},
      {kOffManifestBytes, 8, kMaxManifestBytes + 1, "manifest_bytes"},
      {kOffEntryCount, 4, kMaxEntries + 1, "entry_count"},
      {kOffEntryCount, 4, 100000, "entry_count"},
      {kOffEntryCount, 4, 4, "manifest ends inside entry 3"},
      {kOffEntryCount, 4, 2, "trailing bytes"},
      {kOffFlags, 4, 1, "flags"},
      {kOffReserved, 8, 5, "reserved"},
      {kOffFileBytes, 8, 1u << 30, "header says the file is"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> b = image;
    if (c.width == 4) put_u32(b, c.off, static_cast<uint32_t>(c.value));
    else put_u64(b, c.off, c.value);
    // A manifest size that cannot be hashed is refused before the checksum is computed.
    if (c.off != kOffManifestBytes) reseal(b);
    tb_code code = TB_OK;
    const std::string err = parse_error(b, &code);
    CAPTURE(c.expect);
    CHECK(code == TB_DATA_LOSS);
    CHECK_MESSAGE(contains(err, c.expect), err);
  }
}

TEST_CASE("bad_input_forged_manifest_fields_resealed_are_refused_by_field") {
  const std::vector<uint8_t> image = small_image();
  const auto f = testart::walk(image);
  REQUIRE(f.size() == 3);
  const uint64_t q8_codes_off = testart::get_u64(image, f[0].payload[0]);
  struct Forge {
    const char* what;
    std::function<void(std::vector<uint8_t>&)> edit;
    const char* expect;
  };
  const Forge forges[] = {
      {"absurd_n_2^40", [&](auto& b) { put_u64(b, f[0].n, uint64_t{1} << 40); }, "N = 1099511627776 is out of range"},
      {"negative_k", [&](auto& b) { put_u64(b, f[0].k, ~uint64_t{0}); }, "K = -1 is out of range"},
      {"zero_rows", [&](auto& b) { put_u64(b, f[2].n, 0); }, "rows = 0 is out of range"},
      {"np_not_padded", [&](auto& b) { put_u64(b, f[0].np, 40); }, "padded sizes"},
      {"kind_7", [&](auto& b) { put_u32(b, f[0].kind, 7); }, "kind = 7"},
      {"prec_2", [&](auto& b) { put_u32(b, f[0].prec, 2); }, "prec = 2"},
      {"matrix_prec_1", [&](auto& b) { put_u32(b, f[2].prec, 1); }, "prec = 1"},
      {"n_changed_so_payload_size_wrong", [&](auto& b) { put_u64(b, f[1].n, 65); put_u64(b, f[1].np, 96); }, "codes is 1024 bytes (expected 1536"},
      {"codes_bytes_lie", [&](auto& b) { put_u64(b, f[0].payload[0] + 8, 1); }, "codes is 1 bytes"},
      {"misaligned_payload", [&](auto& b) { put_u64(b, f[0].payload[0], q8_codes_off + 64); }, "not a multiple of 4096"},
      {"payload_past_eof", [&](auto& b) { put_u64(b, f[2].payload[0], uint64_t{1} << 40); }, "runs past the end"},
      {"payload_offset_wraps", [&](auto& b) { put_u64(b, f[2].payload[0], ~uint64_t{0} - 4095); }, "runs past the end"},
      {"overlapping_payloads", [&](auto& b) { put_u64(b, f[1].payload[1], testart::get_u64(b, f[1].payload[0])); }, "overlaps"},
      {"payload_over_manifest", [&](auto& b) { put_u64(b, f[0].payload[0], 0); }, "overlaps the manifest"},
      {"range_past_n", [&](auto& b) { put_u64(b, f[0].range_begin[2] + 8, 41); }, "range 'v' = [30, 41)"},
      {"ranges_overlap", [&](auto& b) { put_u64(b, f[0].range_begin[1], 19); }, "range 'k' = [19, 30)"},
      {"range_empty", [&](auto& b) { put_u64(b, f[0].range_begin[0] + 8, 0); }, "range 'q' = [0, 0)"},
      {"range_count_huge", [&](auto& b) { put_u32(b, f[0].range_count, 1000); }, "range_count = 1000"},
      {"matrix_with_range", [&](auto& b) { put_u32(b, f[2].range_count, 1); }, "range_count = 1"},
      {"duplicate_name", [&](auto& b) {
         // "blk.0.ffn_down" -> "blk.0.attn_qkv" is the same length: a duplicate of entry 0.
         std::memcpy(&b[f[1].name], "blk.0.attn_qkv", 14); }, "is a duplicate"},
      {"name_with_space", [&](auto& b) { b[f[1].name + 3] = ' '; }, "entry 1 name"},
      {"name_length_huge", [&](auto& b) { put_u32(b, f[1].name_len, 70000); }, "entry 1 name length is 70000"},
      {"name_runs_off_manifest", [&](auto& b) { put_u32(b, f[2].name_len, 200); }, "manifest ends inside"},
  };
  for (const Forge& fg : forges) {
    std::vector<uint8_t> b = image;
    fg.edit(b);
    reseal(b);
    tb_code code = TB_OK;
    const std::string err = parse_error(b, &code);
    CAPTURE(fg.what);
    CHECK(code == TB_DATA_LOSS);
    CHECK_MESSAGE(contains(err, fg.expect), err);
  }
}

TEST_CASE("bad_input_corrupted_payload_byte_caught_by_verify_and_view_verified") {
  std::vector<uint8_t> b = small_image();
  const auto f = testart::walk(b);
  const uint64_t scales_off = testart::get_u64(b, f[1].payload[1]);
  b[scales_off + 3] ^= 0x10;
  auto a = parse(b, "corrupt");
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());  // payloads are not read at open
  const Artifact& art = **a;
  const Entry& e = art.entries()[1];
  const Status st = art.verify(e);
  CHECK(st.code() == TB_DATA_LOSS);
  CHECK(contains(st.message(), "entry 'blk.0.ffn_down' scales payload checksum mismatch"));
  CHECK(art.view_verified(e).status().code() == TB_DATA_LOSS);
  CHECK(art.view_verified(e).status().code() == TB_DATA_LOSS);  // never cached as good
  CHECK(art.verify(art.entries()[0]).ok());
  CHECK(art.verify(art.entries()[2]).ok());
}

}  // TEST_SUITE
