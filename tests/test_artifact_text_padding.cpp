// The format's text rule (UTF-8 without control characters) and its padding rule (gaps, tail,
// strip padding columns and k hold zero), each checked by the reader (DATA_LOSS) and the writer
// (INVALID_ARGUMENT), with one bad byte at each place.
#include <doctest/doctest.h>

#include <xxhash.h>

#include <cstring>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "artifacts/quantize.h"
#include "artifacts/strip_padding.h"
#include "artifacts/text_rule.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "test_artifact_util.h"

using namespace twinbit;
using namespace twinbit::artifact;
using testart::get_u64;
using testart::put_u64;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<uint8_t> image_of(const Writer& w, const Provenance& p) {
  auto image = w.serialize(p);
  if (!image.ok()) throw std::runtime_error(image.status().to_string());
  return std::move(image).value();
}

// Recomputes the stored xxh64 of every payload, then the header checksum: a forger's file whose
// only fault is the one the test planted.
void reseal_all(std::vector<uint8_t>& b) {
  for (const testart::EntryFields& f : testart::walk(b)) {
    for (size_t pf : f.payload) {
      const uint64_t off = get_u64(b, pf), bytes = get_u64(b, pf + 8);
      put_u64(b, pf + 16, XXH64(b.data() + off, bytes, 0));
    }
  }
  testart::reseal(b);
}

// Parses (must succeed: the planted fault is in bytes open does not read) and verifies entry i.
Status verify_entry(const std::vector<uint8_t>& b, size_t i) {
  auto a = parse(b, "forged");
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  return (*a)->verify((*a)->entries()[i]);
}

// Where a byte of a strip payload lies, computed from the layout of twinbit/backend.h on its own.
struct Cell {
  int64_t column, k_low, k_high;  // q8: k_low == k_high
};
Cell code_cell(tb_prec prec, int64_t k, uint64_t o) {
  const int64_t ng = pad32(k) / 32, tile = prec == TB_PREC_Q4 ? 512 : 1024, run = tile / 32;
  const int64_t t = static_cast<int64_t>(o) / tile, in = static_cast<int64_t>(o) % tile;
  const int64_t column = (t / ng) * 32 + in / run, j = in % run, k0 = (t % ng) * 32;
  return prec == TB_PREC_Q4 ? Cell{column, k0 + j, k0 + j + 16} : Cell{column, k0 + j, k0 + j};
}

}  // namespace

TEST_SUITE("artifact") {

// ---- text ----------------------------------------------------------------------------------

TEST_CASE("text_rule_accepts_utf8_boundaries_and_refuses_overlong_surrogate_truncated_control") {
  const char* good[] = {"", "model-f32.gguf", "/home/é/modèle.gguf", "日本語", "\xc2\xa0",
                        "\xdf\xbf", "\xe0\xa0\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
                        "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xee\x80\x80", "~ a"};
  for (const char* g : good) {
    CAPTURE(g);
    CHECK(!check_text(g, kMaxTextBytes));
  }
  struct Bad {
    std::string text;
    const char* what;
    uint64_t offset;
  };
  const Bad bad[] = {
      {"ab\xc0\xaf", "overlong", 2},                 // '/' in two bytes
      {"\xc1\xbf", "overlong", 0},
      {"x\xe0\x80\xaf", "overlong", 1},               // '/' in three bytes
      {"\xe0\x9f\xbf", "overlong", 0},                // U+07FF in three bytes
      {"\xf0\x80\x80\xaf", "overlong", 0},            // '/' in four bytes
      {"\xf0\x8f\xbf\xbf", "overlong", 0},            // U+FFFF in four bytes
      {"\xed\xa0\x80", "surrogate", 0},               // U+D800
      {"ok\xed\xbf\xbf", "surrogate", 2},             // U+DFFF
      {"\xed\xa0\xbd\xed\xb8\x80", "surrogate", 0},   // CESU-8 pair
      {"\xf4\x90\x80\x80", "above U+10FFFF", 0},
      {"\xf5\x80\x80\x80", "0xf5..0xff", 0},
      {"\xff", "0xf5..0xff", 0},
      {"abc\xe2\x82", "truncated", 3},                // the end of the text cuts the sequence
      {"\xf0\x9f\x98", "truncated", 0},
      {"\xc3", "truncated", 0},
      {"\xe2\x28\xa1", "truncated", 0},               // second byte is not a continuation
      {"\xe2\x82\x28", "truncated", 0},               // third byte is not a continuation
      {"a\x80z", "continuation byte without a lead", 1},
      {std::string("a\0b", 3), "control", 1},
      {"tab\there", "control", 3},
      {"del\x7f", "control", 3},
      {"c1\xc2\x80", "control", 2},                  // U+0080
      {"c1\xc2\x9b[31m", "control", 2},              // U+009B, the one-byte CSI
  };
  for (const Bad& b : bad) {
    CAPTURE(b.text);
    const TextProblem p = check_text(b.text, kMaxTextBytes);
    REQUIRE(p);
    CHECK_MESSAGE(contains(p.what, b.what), p.what);
    CHECK(p.offset == b.offset);
  }
  CHECK(check_text(std::string(kMaxTextBytes, 'a'), kMaxTextBytes).what == nullptr);
  CHECK(check_text(std::string(kMaxTextBytes + 1, 'a'), kMaxTextBytes));
}

TEST_CASE("text_writer_refuses_invalid_utf8_provenance_and_source_names_with_invalid_argument") {
  const std::string bad[] = {"ab\xc0\xaf", "\xed\xa0\x80", "abc\xe2\x82"};  // overlong, surrogate, truncated
  for (const std::string& t : bad) {
    CAPTURE(t);
    Writer w;
    Status st = w.serialize({t, "p"}).status();
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(st.message(), "provenance source_file"), st.message());
    st = w.serialize({"s", t}).status();
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(st.message(), "provenance packer"), st.message());
    st = w.add_matrix("m", 1, 1, std::vector<float>{1.0f}, {"fine", t});
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(st.message(), "entry 'm': source tensor 1"), st.message());
  }
  Writer ok;
  CHECK(ok.add_matrix("m", 1, 1, std::vector<float>{1.0f}, {"blk.0.modèle.日本"}).ok());
  CHECK(ok.serialize({"/data/modèle.gguf", "twinbit"}).ok());
}

TEST_CASE("text_reader_refuses_forged_overlong_surrogate_truncated_text_naming_the_field") {
  // Text of 4 bytes in each text field, then replaced in place by invalid sequences of 4 bytes.
  Writer w;
  REQUIRE(w.add_matrix("m", 1, 2, std::vector<float>{1.0f, 2.0f}, {"SSSS"}).ok());
  const std::vector<uint8_t> image = image_of(w, {"FFFF", "PPPP"});
  auto find = [&](const char* s) {
    const auto it = std::search(image.begin(), image.end(), s, s + 4);
    REQUIRE(it != image.end());
    return static_cast<size_t>(it - image.begin());
  };
  struct Field {
    const char* marker;
    const char* name;
  };
  const Field fields[] = {{"FFFF", "provenance source_file"},
                          {"PPPP", "provenance packer"},
                          {"SSSS", "entry 'm' source tensor 0"}};
  const char* bad[][2] = {{"a\xc0\xaf" "b", "overlong"},
                          {"\xed\xa0\x80" "b", "surrogate"},
                          {"abc\xe2", "truncated"},
                          {"a\x1b[m", "control"}};
  for (const Field& f : fields) {
    for (const auto& b : bad) {
      CAPTURE(f.name);
      CAPTURE(b[1]);
      std::vector<uint8_t> forged = image;
      std::memcpy(&forged[find(f.marker)], b[0], 4);
      testart::reseal(forged);
      auto a = parse(forged, "forged");
      REQUIRE(!a.ok());
      CHECK(a.status().code() == TB_DATA_LOSS);
      CHECK_MESSAGE(contains(a.status().message(), std::string(f.name) + " is not valid text"),
                    a.status().message());
      CHECK_MESSAGE(contains(a.status().message(), b[1]), a.status().message());
    }
  }
}

// ---- padding -------------------------------------------------------------------------------

TEST_CASE("padding_every_byte_of_q8_and_q4_strips_is_checked_iff_it_is_padding") {
  // For each shape, set each code nibble / byte and each scale byte nonzero in turn: the rule
  // must flag exactly the padding cells, as located by the layout formula above.
  struct Shape {
    tb_prec prec;
    int64_t n, k;
  };
  const Shape shapes[] = {{TB_PREC_Q8, 33, 40}, {TB_PREC_Q8, 32, 32}, {TB_PREC_Q8, 1, 1},
                          {TB_PREC_Q4, 33, 40}, {TB_PREC_Q4, 40, 20}, {TB_PREC_Q4, 64, 47}};
  for (const Shape& sh : shapes) {
    CAPTURE(sh.prec);
    CAPTURE(sh.n);
    CAPTURE(sh.k);
    quant::PackedStrips s = testart::packed(sh.prec, sh.n, sh.k, 7);
    std::vector<uint8_t> scales(s.scales.size() * 2);
    std::memcpy(scales.data(), s.scales.data(), scales.size());  // little-endian host
    REQUIRE(!find_bad_padding(sh.prec, sh.n, sh.k, s.codes.data(), scales.data()));
    size_t wrong = 0, flagged = 0;
    const bool q4 = sh.prec == TB_PREC_Q4;
    for (uint64_t o = 0; o < s.codes.size(); ++o) {
      const Cell c = code_cell(sh.prec, sh.k, o);
      for (int half = 0; half < (q4 ? 2 : 1); ++half) {
        const uint8_t saved = s.codes[o];
        // q4: nibble 9 (code 1) in one half; q8: code 1.
        s.codes[o] = q4 ? static_cast<uint8_t>(half ? (saved & 0x0f) | 0x90 : (saved & 0xf0) | 0x09) : 1;
        if (s.codes[o] == saved) s.codes[o] ^= q4 ? (half ? 0x30 : 0x03) : 0x03;  // still a change
        const bool padding = c.column >= sh.n || (half ? c.k_high : c.k_low) >= sh.k;
        const PaddingProblem p = find_bad_padding(sh.prec, sh.n, sh.k, s.codes.data(), scales.data());
        wrong += static_cast<bool>(p) != padding;
        flagged += static_cast<bool>(p);
        if (p) CHECK(p.offset == o);
        s.codes[o] = saved;
      }
    }
    for (uint64_t o = 0; o < scales.size(); ++o) {
      const int64_t idx = static_cast<int64_t>(o / 2);
      const int64_t column = (idx / 32 / (pad32(sh.k) / 32)) * 32 + idx % 32;
      const uint8_t saved = scales[o];
      scales[o] ^= 0x01;
      const PaddingProblem p = find_bad_padding(sh.prec, sh.n, sh.k, s.codes.data(), scales.data());
      wrong += static_cast<bool>(p) != (column >= sh.n);
      flagged += static_cast<bool>(p);
      scales[o] = saved;
    }
    CHECK(wrong == 0);
    const bool has_padding = sh.n % 32 != 0 || sh.k % 32 != 0;
    CHECK((flagged > 0) == has_padding);
  }
}

TEST_CASE("padding_writer_refuses_strips_with_one_nonzero_padding_byte") {
  const quant::PackedStrips q8 = testart::packed(TB_PREC_Q8, 40, 70, 1);
  const quant::PackedStrips q4 = testart::packed(TB_PREC_Q4, 33, 20, 2);
  struct Case {
    const char* what;
    const quant::PackedStrips* s;
    bool in_scales;
    uint64_t offset;  // a padding byte
    const char* expect;
  };
  // q8 40 x 70: column 40 of strip 1, group 0 starts at tile (1 * 3 + 0) * 1024 + 8 * 32; k 70 is
  // byte 6 of group 2 of column 0. q4 33 x 20: column 33 is strip 1 column 1; byte 4 of column 0
  // has k 20 in its high nibble.
  const Case cases[] = {
      {"q8 padding column code", &q8, false, 3 * 1024 + 8 * 32 + 5, "codes byte 3333 is padding (column 40, k 5)"},
      {"q8 padding k code", &q8, false, 2 * 1024 + 6, "codes byte 2054 is padding (column 0, k 70)"},
      {"q8 padding column scale", &q8, true, ((1 * 3 + 2) * 32 + 9) * 2 + 1, "scales byte 339 is padding (column 41)"},
      {"q4 padding column code", &q4, false, 512 + 16 + 3, "codes byte 531 is padding (column 33, k 3)"},
      {"q4 padding k high nibble", &q4, false, 4, "codes byte 4 is padding (column 0, k 20)"},
      {"q4 padding column scale", &q4, true, (32 + 1) * 2, "scales byte 66 is padding (column 33)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    std::vector<uint8_t> codes = c.s->codes;
    std::vector<uint16_t> scales = c.s->scales;
    if (c.in_scales) {
      reinterpret_cast<uint8_t*>(scales.data())[c.offset] ^= 0x40;
    } else {
      codes[c.offset] ^= 0x40;
    }
    Writer w;
    const Status st = w.add_strips("e", c.s->prec, c.s->n, c.s->k, codes, scales);
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(st.message(), c.expect), st.message());
    Writer clean;
    CHECK(clean.add_strips("e", c.s->prec, c.s->n, c.s->k, c.s->codes, c.s->scales).ok());
  }
}

TEST_CASE("padding_reader_verify_refuses_one_nonzero_byte_in_strip_padding_gaps_and_open_the_tail") {
  // make_small: entry 0 q8 40 x 70 (padding columns 40..63, k 70..95), entry 1 q4 33 x 32
  // (padding columns 33..63), entry 2 a 3 x 5 matrix. Every gap holds zeros and the file ends
  // with the last payload.
  const testart::Small s = testart::make_small();
  const std::vector<uint8_t> image = image_of(s.writer, s.provenance);
  const auto f = testart::walk(image);
  const uint64_t manifest_end = kHeaderBytes + get_u64(image, kOffManifestBytes);
  const uint64_t q8_codes = get_u64(image, f[0].payload[0]), q8_scales = get_u64(image, f[0].payload[1]);
  const uint64_t q4_codes = get_u64(image, f[1].payload[0]), q4_scales = get_u64(image, f[1].payload[1]);
  const uint64_t matrix = get_u64(image, f[2].payload[0]);
  const uint64_t q8_codes_end = q8_codes + get_u64(image, f[0].payload[0] + 8);
  const uint64_t q4_scales_end = q4_scales + get_u64(image, f[1].payload[1] + 8);
  REQUIRE(q8_codes_end < q8_scales);    // there are gaps to plant bytes in
  REQUIRE(q4_scales_end < matrix);
  REQUIRE(manifest_end < q8_codes);
  struct Case {
    const char* what;
    uint64_t offset;
    size_t entry;
    const char* expect;
  };
  const Case cases[] = {
      {"gap after the manifest", manifest_end, 0, "gap before its codes payload"},
      {"gap before a payload, last byte", q8_codes - 1, 0, "gap before its codes payload"},
      {"gap between codes and scales", q8_codes_end, 0, "gap before its scales payload"},
      {"gap between entries", q4_scales_end + 7, 2, "gap before its data payload"},
      {"q8 padding column code", q8_codes + 3 * 1024 + 8 * 32 + 5, 0, "codes byte 3333 is padding (column 40, k 5)"},
      {"q8 padding k code", q8_codes + 2 * 1024 + 6, 0, "codes byte 2054 is padding (column 0, k 70)"},
      {"q8 padding column scale", q8_scales + ((1 * 3 + 2) * 32 + 9) * 2, 0, "scales byte 338 is padding (column 41)"},
      {"q4 padding column code", q4_codes + 512 + 16 + 3, 1, "codes byte 531 is padding (column 33, k 3)"},
      {"q4 padding column scale", q4_scales + (32 + 31) * 2 + 1, 1, "scales byte 127 is padding (column 63)"},
  };
  CHECK(verify_entry(image, 0).ok());
  for (const Case& c : cases) {
    CAPTURE(c.what);
    std::vector<uint8_t> b = image;
    b[c.offset] ^= 0x21;
    reseal_all(b);  // payload checksums match: only the padding rule can refuse it
    const Status st = verify_entry(b, c.entry);
    CHECK(st.code() == TB_DATA_LOSS);
    CHECK_MESSAGE(contains(st.message(), c.expect), st.message());
    for (size_t i = 0; i < 3; ++i) {
      if (i != c.entry) CHECK(verify_entry(b, i).ok());
    }
  }
  // A tail after the last payload, zero or not, with file_bytes and the checksum forged: refused
  // at open.
  for (uint8_t v : {uint8_t{0}, uint8_t{0x5a}}) {
    std::vector<uint8_t> b = image;
    b.push_back(v);
    put_u64(b, kOffFileBytes, b.size());
    testart::reseal(b);
    auto a = parse(b, "tail");
    REQUIRE(!a.ok());
    CHECK(a.status().code() == TB_DATA_LOSS);
    CHECK_MESSAGE(contains(a.status().message(), "1 bytes of tail"), a.status().message());
  }
  // A payload moved one alignment step later (its old place left as a zero gap): refused at
  // open, since a gap of a whole alignment unit is not canonical.
  std::vector<uint8_t> moved = image;
  put_u64(moved, f[2].payload[0], matrix + kPayloadAlign);
  moved.insert(moved.begin() + static_cast<long>(matrix), kPayloadAlign, 0);
  put_u64(moved, kOffFileBytes, moved.size());
  testart::reseal(moved);
  auto a = parse(moved, "moved");
  REQUIRE(!a.ok());
  CHECK_MESSAGE(contains(a.status().message(), "leaves a gap"), a.status().message());
}

}  // TEST_SUITE
