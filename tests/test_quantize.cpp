// The weight quantisers and the canonical tiling: fp16 conversion (all 65536 halves, every
// rounding boundary), the q8_0/q4_0 block quantisers against gguf-py's output on a committed
// fixture, and pack_strips / retile_gguf / concat_strips against the block quantisers read back
// through the reference's weight_code / weight_scale.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "artifacts/quantize.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"

using namespace twinbit;

namespace {

bool is_nan_half(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Deterministic test data (std::mt19937_64 is fully specified; no distributions used).
struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  float uniform(float scale) {  // [-scale, scale)
    return (static_cast<float>(static_cast<int32_t>(g() >> 40) - (1 << 23)) * 0x1p-23f) * scale;
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(g() % static_cast<uint64_t>(n)); }
};

}  // namespace

TEST_SUITE("quantize") {

TEST_CASE("fp16_roundtrip_all_65536_halves_through_fp16_to_float") {
  int checked = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    const uint16_t back = quant::float_to_fp16(fp16_to_float(half));
    if (is_nan_half(half)) {
      CHECK(is_nan_half(back));
      CHECK((back & 0x8000u) == (half & 0x8000u));
    } else {
      CHECK_MESSAGE(back == half, "half 0x" << std::hex << h);
    }
    ++checked;
  }
  CHECK(checked == 65536);
}

TEST_CASE("fp16_rounding_every_midpoint_ties_to_even_and_neighbours_round_to_nearest") {
  // For each pair of adjacent finite halves (a, b), a < b, of the same sign: the exact float
  // midpoint rounds to the one with an even mantissa; one float ulp below goes to a, above to b.
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t m = 0; m < 0x7bff; ++m) {
      const uint16_t a = static_cast<uint16_t>(sign | m), b = static_cast<uint16_t>(sign | (m + 1));
      const float fa = fp16_to_float(a), fb = fp16_to_float(b);
      const float mid = (fa + fb) / 2;  // exact: halves have 11 significant bits
      const uint16_t even = (m & 1u) ? b : a;
      REQUIRE_MESSAGE(quant::float_to_fp16(mid) == even, "midpoint of 0x" << std::hex << a);
      const float below = std::nextafter(mid, fa), above = std::nextafter(mid, fb);
      REQUIRE(quant::float_to_fp16(below) == a);
      REQUIRE(quant::float_to_fp16(above) == b);
    }
  }
  // Overflow: 65520 is the midpoint between 65504 and 2^16, ties to even (inf).
  CHECK(quant::float_to_fp16(65504.0f) == 0x7bff);
  CHECK(quant::float_to_fp16(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(quant::float_to_fp16(65520.0f) == 0x7c00);
  CHECK(quant::float_to_fp16(-65520.0f) == 0xfc00);
  CHECK(quant::float_to_fp16(3.0e38f) == 0x7c00);
  CHECK(quant::float_to_fp16(INFINITY) == 0x7c00);
  CHECK(quant::float_to_fp16(-INFINITY) == 0xfc00);
  CHECK(is_nan_half(quant::float_to_fp16(NAN)));
  // Underflow: 2^-25 ties to +0 (even), just above goes to the smallest subnormal; signs kept.
  CHECK(quant::float_to_fp16(0x1p-25f) == 0x0000);
  CHECK(quant::float_to_fp16(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(quant::float_to_fp16(-0x1p-25f) == 0x8000);
  CHECK(quant::float_to_fp16(1e-45f) == 0x0000);
  CHECK(quant::float_to_fp16(-0.0f) == 0x8000);
  CHECK(quant::float_to_fp16(0x1.8p-24f) == 0x0002);  // 1.5 units: tie, to even (2)
  CHECK(quant::float_to_fp16(0x1.4p-24f) == 0x0001);
}

TEST_CASE("quantize_blocks_q8_0_and_q4_0_match_gguf_py_fixture_bit_for_bit") {
  // tests/fixtures/gen_quant_fixture.py wrote the expected bytes with the gguf Python package.
  const auto path = std::filesystem::path(__FILE__).parent_path() / "fixtures" / "quant_blocks.txt";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing fixture " << path.string());
  std::string line;
  int blocks = 0, fma_sensitive = 0, zero_sign = 0;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string tag;
    s >> tag;
    REQUIRE(tag == "X");
    float x[32];
    for (float& v : x) {
      uint32_t u;
      s >> std::hex >> u;
      v = std::bit_cast<float>(u);
    }
    uint32_t d8, d4, code, flag;
    s >> tag >> std::hex >> d8;
    REQUIRE(tag == "Q8");
    int8_t want8[32];
    for (int8_t& c : want8) {
      s >> std::hex >> code;
      c = static_cast<int8_t>(static_cast<uint8_t>(code));
    }
    s >> tag >> std::hex >> d4;
    REQUIRE(tag == "Q4");
    uint8_t want4[16];
    for (uint8_t& b : want4) {
      s >> std::hex >> code;
      b = static_cast<uint8_t>(code);
    }
    uint32_t gguf_d4 = 0;
    s >> tag >> flag;
    REQUIRE(tag == "F");
    s >> tag >> std::hex >> gguf_d4;
    REQUIRE(tag == "G");
    REQUIRE(!s.fail());
    fma_sensitive += static_cast<int>(flag);
    zero_sign += gguf_d4 != d4 ? 1 : 0;

    int8_t got8[32];
    uint8_t got4[16];
    uint16_t gd8 = 0, gd4 = 0;
    quant::quantize_block_q8_0(x, got8, &gd8);
    quant::quantize_block_q4_0(x, got4, &gd4);
    CHECK_MESSAGE(gd8 == d8, "block " << blocks);
    CHECK_MESSAGE(std::memcmp(got8, want8, 32) == 0, "block " << blocks);
    CHECK_MESSAGE(gd4 == d4, "block " << blocks);
    CHECK_MESSAGE(std::memcmp(got4, want4, 16) == 0, "block " << blocks);
    ++blocks;
  }
  CHECK(blocks == 153);
  CHECK(fma_sensitive == 6);  // the q4_0 tie cases an FMA-contracted C build would change
  // All-zero blocks starting with -0.0: gguf-py's q4_0 d is +0, llama.cpp's C reference (and
  // twinbit) -0. Everything else in the file is gguf-py's output unchanged.
  CHECK(zero_sign == 2);
}

TEST_CASE("quantize_block_q8_0_ties_round_away_from_zero") {
  float x[32] = {};
  x[0] = 127.0f;  // d = 1, id = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  x[4] = -0.0f;
  int8_t c[32];
  uint16_t d;
  quant::quantize_block_q8_0(x, c, &d);
  CHECK(d == 0x3c00);
  CHECK(c[0] == 127);
  CHECK(c[1] == 3);
  CHECK(c[2] == -3);
  CHECK(c[3] == 1);
  CHECK(c[4] == 0);
}

TEST_CASE("pack_strips_q8_codes_stay_in_-127_127_and_blocks_whose_1_over_d_overflows_get_code_0_q8_nibble_0_q4") {
  // Block maxima over the whole small range: every power of two from 2^-149 to 2^-100 and its
  // neighbours, plus the edges of the overflow ranges (q8: 1/d = inf for 64 units of 2^-149 up
  // to 0x02fe0003; q4: up to 0x01000002). There llama.cpp's cast is undefined; twinbit writes 0
  // as gguf-py does (the fixture holds such blocks), never -128 and never a nibble that leaks.
  std::vector<float> maxima;
  for (int e = -149; e <= -100; ++e) {
    const float p = std::ldexp(1.0f, e);
    for (float a : {std::nextafter(p, 0.0f), p, std::nextafter(p, 1.0f)}) maxima.push_back(a);
  }
  for (uint32_t b : {0x3fu, 0x40u, 0x02fe0003u, 0x02fe0004u, 0x01000002u, 0x01000003u}) {
    maxima.push_back(std::bit_cast<float>(b));
  }
  const int64_t n = static_cast<int64_t>(maxima.size()), k = 64;
  std::vector<float> w(static_cast<size_t>(n * k));
  Rng rng(31);
  for (int64_t r = 0; r < n; ++r) {
    const float a = maxima[static_cast<size_t>(r)];
    for (int64_t j = 0; j < k; ++j) w[r * k + j] = rng.uniform(a);
    w[r * k + 3] = a;
    w[r * k + 40] = -a;  // each block holds -amax: where codes wrap, that is where -128 came from
  }
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    CAPTURE(static_cast<int>(prec));
    const quant::PackedStrips p = quant::pack_strips(w.data(), n, k, prec);
    const tb_strips v = p.view();
    int64_t out_of_range = 0, overflow_blocks = 0, overflow_nonzero = 0;
    for (int64_t r = 0; r < n; ++r) {
      const float a = maxima[static_cast<size_t>(r)];
      const float d = prec == TB_PREC_Q8 ? a / 127.0f : a / 8.0f;  // |d| of either block
      const bool overflows = d != 0.0f && std::isinf(1.0f / d);
      for (int64_t g = 0; g < 2; ++g) {
        overflow_blocks += overflows;
        for (int64_t j = 0; j < 32; ++j) {
          const int c = ref::weight_code(v, r, g * 32 + j);
          const PrecisionTraits& t = precision_traits(prec);
          out_of_range += c < t.code_min || c > t.code_max;
          overflow_nonzero += overflows && c != (prec == TB_PREC_Q8 ? 0 : -8);  // nibble 0 is -8
        }
      }
    }
    CHECK(out_of_range == 0);
    CHECK(overflow_blocks >= 2 * 20);
    CHECK(overflow_nonzero == 0);
  }
}

TEST_CASE("pack_strips_q8_q4_then_weight_code_and_scale_give_the_block_quantiser_output") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},   {31, 33}, {32, 32}, {33, 31},
                                                {65, 100}, {7, 64},  {96, 17}, {130, 257}};
  Rng rng(12345);
  for (const auto& [n, k] : shapes) {
    std::vector<float> w(static_cast<size_t>(n * k));
    for (float& v : w) v = rng.uniform(0.1f);
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(static_cast<int>(prec));
      const quant::PackedStrips p = quant::pack_strips(w.data(), n, k, prec);
      const tb_strips v = p.view();
      REQUIRE(check_strips(v).ok());
      bool all_equal = true;
      for (int64_t col = 0; col < pad32(n); ++col) {
        for (int64_t g = 0; g < pad32(k) / 32; ++g) {
          float block[32] = {};
          int want[32] = {};
          uint16_t want_d = 0;
          if (col < n) {
            for (int64_t j = 0; j < 32 && g * 32 + j < k; ++j) block[j] = w[col * k + g * 32 + j];
            if (prec == TB_PREC_Q8) {
              int8_t c[32];
              quant::quantize_block_q8_0(block, c, &want_d);
              for (int j = 0; j < 32; ++j) want[j] = c[j];
            } else {
              uint8_t qs[16];
              quant::quantize_block_q4_0(block, qs, &want_d);
              for (int j = 0; j < 16; ++j) {
                want[j] = (qs[j] & 15) - 8;
                want[j + 16] = (qs[j] >> 4) - 8;
              }
            }
          }
          const float got_scale = ref::weight_scale(v, col, g);
          all_equal &= std::bit_cast<uint32_t>(got_scale) ==
                       std::bit_cast<uint32_t>(fp16_to_float(want_d));
          for (int j = 0; j < 32; ++j) {
            const int64_t kk = g * 32 + j;
            // Padding k of a real column is quantised as 0 and must read back as 0.
            const int want_code = (col < n && kk < k) ? want[j] : 0;
            all_equal &= ref::weight_code(v, col, kk) == want_code;
          }
        }
      }
      CHECK(all_equal);
    }
  }
}

TEST_CASE("retile_gguf_q8_q4_equals_pack_strips_for_K_multiple_of_32_and_rejects_bad_sizes") {
  const int64_t n = 45, k = 96, groups = k / 32;
  Rng rng(99);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& v : w) v = rng.uniform(2.0f);
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    const int64_t bb = 2 + precision_traits(prec).group_code_bytes;  // fp16 d, then the codes
    std::vector<uint8_t> gguf(static_cast<size_t>(n * groups * bb));
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t g = 0; g < groups; ++g) {
        uint8_t* blk = &gguf[(r * groups + g) * bb];
        uint16_t d;
        if (prec == TB_PREC_Q8) {
          quant::quantize_block_q8_0(&w[r * k + g * 32], reinterpret_cast<int8_t*>(blk + 2), &d);
        } else {
          quant::quantize_block_q4_0(&w[r * k + g * 32], blk + 2, &d);
        }
        blk[0] = static_cast<uint8_t>(d);
        blk[1] = static_cast<uint8_t>(d >> 8);
      }
    }
    auto re = quant::retile_gguf(gguf, n, k, prec);
    REQUIRE(re.ok());
    const quant::PackedStrips packed = quant::pack_strips(w.data(), n, k, prec);
    CHECK(re->codes == packed.codes);
    CHECK(re->scales == packed.scales);
    CHECK(quant::retile_gguf({gguf.data(), gguf.size() - 1}, n, k, prec).status().code() ==
          TB_INVALID_ARGUMENT);
    CHECK(quant::retile_gguf(gguf, n, k + 1, prec).status().code() == TB_INVALID_ARGUMENT);
    CHECK(quant::retile_gguf(gguf, 0, k, prec).status().code() == TB_INVALID_ARGUMENT);
  }
}

TEST_CASE("concat_strips_q8_q4_parts_33_64_7_keep_every_code_and_scale_column_for_column") {
  const int64_t k = 70;
  const int64_t ns[] = {33, 64, 7};
  Rng rng(5);
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    std::vector<quant::PackedStrips> parts;
    for (int64_t n : ns) {
      std::vector<float> w(static_cast<size_t>(n * k));
      for (float& v : w) v = rng.uniform(1.0f);
      parts.push_back(quant::pack_strips(w.data(), n, k, prec));
    }
    std::vector<const quant::PackedStrips*> ptrs = {&parts[0], &parts[1], &parts[2]};
    auto fused = quant::concat_strips(ptrs);
    REQUIRE(fused.ok());
    const tb_strips fv = fused->view();
    REQUIRE(check_strips(fv).ok());
    CHECK(fv.n == 104);
    bool same = true;
    int64_t at = 0;
    for (const quant::PackedStrips& p : parts) {
      const tb_strips pv = p.view();
      for (int64_t c = 0; c < p.n; ++c) {
        for (int64_t kk = 0; kk < pad32(k); ++kk) {
          same &= ref::weight_code(fv, at + c, kk) == ref::weight_code(pv, c, kk);
        }
        for (int64_t g = 0; g < pad32(k) / 32; ++g) {
          same &= std::bit_cast<uint32_t>(ref::weight_scale(fv, at + c, g)) ==
                  std::bit_cast<uint32_t>(ref::weight_scale(pv, c, g));
        }
      }
      at += p.n;
    }
    for (int64_t c = 104; c < 128; ++c) {  // fused padding columns
      for (int64_t kk = 0; kk < pad32(k); ++kk) same &= ref::weight_code(fv, c, kk) == 0;
      for (int64_t g = 0; g < pad32(k) / 32; ++g) same &= ref::weight_scale(fv, c, g) == 0.0f;
    }
    CHECK(same);
  }
  // Mismatched K or precision is refused.
  std::vector<float> w(64 * 64, 0.5f);
  const quant::PackedStrips a = quant::pack_strips(w.data(), 64, 64, TB_PREC_Q8);
  const quant::PackedStrips b = quant::pack_strips(w.data(), 32, 128, TB_PREC_Q8);
  const quant::PackedStrips c = quant::pack_strips(w.data(), 64, 64, TB_PREC_Q4);
  const quant::PackedStrips* ab[] = {&a, &b};
  const quant::PackedStrips* ac[] = {&a, &c};
  CHECK(quant::concat_strips(ab).status().code() == TB_INVALID_ARGUMENT);
  CHECK(quant::concat_strips(ac).status().code() == TB_INVALID_ARGUMENT);
  CHECK(quant::concat_strips({}).status().code() == TB_INVALID_ARGUMENT);
}

}  // TEST_SUITE
