// The precision table and the strip layout accessor: the rows agree with the layout documented in
// twinbit/backend.h (sizes, where each code and scale lives), and unknown precisions are refused with
// a message that names them.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/block_quantizers.h"
#include "core/op_checks.h"
#include "core/precision.h"
#include "core/strip_layout.h"

using namespace twinbit;

namespace {

// The layout as twinbit/backend.h's comment writes it, independently of StripLayout:
//   q8: codes[((n/32) * (kp/32) + g) * 1024 + (n%32) * 32 + kk]
//   q4: byte  ((n/32) * (kp/32) + g) * 512 + (n%32) * 16 + kk%16, low nibble kk < 16, code + 8
//   scales[((n/32) * (kp/32) + g) * 32 + n%32]
int documented_code(tb_prec prec, const uint8_t* codes, int64_t kp, int64_t n, int64_t k) {
  const int64_t tile = (n / 32) * (kp / 32) + k / 32, kk = k % 32;
  if (prec == TB_PREC_Q8) return static_cast<int8_t>(codes[tile * 1024 + (n % 32) * 32 + kk]);
  const uint8_t b = codes[tile * 512 + (n % 32) * 16 + kk % 16];
  return (kk < 16 ? (b & 0x0f) : (b >> 4)) - 8;
}
int64_t documented_scale_index(int64_t kp, int64_t n, int64_t g) {
  return ((n / 32) * (kp / 32) + g) * 32 + n % 32;
}

}  // namespace

TEST_SUITE("core") {

TEST_CASE("precision table: one row per tb_prec, named, sized and packed consistently") {
  REQUIRE(kPrecisionCount == 2);
  const PrecisionTraits& q8 = precision_traits(TB_PREC_Q8);
  const PrecisionTraits& q4 = precision_traits(TB_PREC_Q4);
  CHECK(std::string(q8.name) == "q8");
  CHECK(std::string(q4.name) == "q4");
  CHECK(q8.bits_per_code == 8);
  CHECK(q4.bits_per_code == 4);
  CHECK(q8.code_min == -127);
  CHECK(q8.code_max == 127);
  CHECK(q4.code_min == -8);
  CHECK(q4.code_max == 7);
  CHECK(q8.padding_byte == 0x00);
  CHECK(q4.padding_byte == 0x88);
  for (int i = 0; i < kPrecisionCount; ++i) {
    const PrecisionTraits& t = precision_traits(static_cast<tb_prec>(i));
    CHECK(static_cast<int>(t.prec) == i);
    CHECK(t.group == TB_GROUP);
    CHECK(t.group_code_bytes * 8 == t.group * t.bits_per_code);
    CHECK(std::string(prec_name(t.prec)) == t.name);
    // A run of padding bytes decodes to code 0 everywhere, and each code round-trips.
    std::vector<uint8_t> run(static_cast<size_t>(t.group_code_bytes), t.padding_byte);
    for (int kk = 0; kk < t.group; ++kk) CHECK(t.load_code(run.data(), kk) == 0);
    for (int code = t.code_min; code <= t.code_max; ++code) {
      for (int kk = 0; kk < t.group; kk += 5) {
        t.store_code(run.data(), kk, code);
        CHECK(t.load_code(run.data(), kk) == code);
        CHECK(t.code_byte(kk) < t.group_code_bytes);
      }
    }
    CHECK(t.dequantize(-3, 0.5f) == -1.5f);
    Result<const PrecisionTraits*> found = find_precision(t.name);
    REQUIRE(found.ok());
    CHECK((*found)->prec == t.prec);
  }
}

TEST_CASE("precision table: the row's quantiser is the block quantiser of its GGUF type") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int trial = 0; trial < 50; ++trial) {
    float x[32];
    for (float& v : x) v = u(rng);
    int8_t q8[32];
    uint8_t q4[16], run8[32], run4[16];
    uint16_t d8 = 0, d4 = 0, t8 = 1, t4 = 1;
    quantize_block_q8_0(x, q8, &d8);
    quantize_block_q4_0(x, q4, &d4);
    precision_traits(TB_PREC_Q8).quantize_group(x, run8, &t8);
    precision_traits(TB_PREC_Q4).quantize_group(x, run4, &t4);
    CHECK(std::memcmp(q8, run8, 32) == 0);
    CHECK(std::memcmp(q4, run4, 16) == 0);
    CHECK(d8 == t8);
    CHECK(d4 == t4);
  }
}

TEST_CASE("unknown precisions are refused with their name or value and the valid ones") {
  const Result<const PrecisionTraits*> q5 = find_precision("q5");
  REQUIRE_FALSE(q5.ok());
  CHECK(q5.status().code() == TB_INVALID_ARGUMENT);
  CHECK(q5.status().message().find("'q5'") != std::string::npos);
  CHECK(q5.status().message().find("q8, q4") != std::string::npos);
  CHECK_FALSE(find_precision("").ok());
  CHECK_FALSE(find_precision("Q8").ok());

  const Status bad = check_precision(static_cast<tb_prec>(7));
  CHECK(bad.code() == TB_INVALID_ARGUMENT);
  CHECK(bad.message().find("precision 7") != std::string::npos);
  CHECK(bad.message().find("0 = q8, 1 = q4") != std::string::npos);
  CHECK_FALSE(check_precision(static_cast<tb_prec>(-1)).ok());
  CHECK(check_precision(TB_PREC_Q4).ok());

  // check_strips goes through the same check.
  const StripLayout l{TB_PREC_Q8, 32, 32};
  std::vector<uint8_t> codes(l.codes_bytes());
  std::vector<uint16_t> scales(l.scales_bytes() / 2);
  tb_strips w = l.view(codes.data(), scales.data());
  CHECK(check_strips(w).ok());
  w.prec = static_cast<tb_prec>(2);
  CHECK(check_strips(w).message().find("precision 2 is unknown") != std::string::npos);
}

TEST_CASE("strip layout: sizes agree with the table for random shapes") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 5000), k = 1 + static_cast<int64_t>(rng() % 5000);
    for (int i = 0; i < kPrecisionCount; ++i) {
      const tb_prec prec = static_cast<tb_prec>(i);
      const StripLayout l{prec, n, k};
      const int64_t np = (n + 31) / 32 * 32, kp = (k + 31) / 32 * 32;
      CHECK(l.np() == np);
      CHECK(l.kp() == kp);
      CHECK(l.codes_bytes() == static_cast<uint64_t>(np * kp * precision_traits(prec).bits_per_code / 8));
      CHECK(l.scales_bytes() == static_cast<uint64_t>(np * (kp / 32) * 2));
      CHECK(l.codes_bytes() == strip_codes_bytes(prec, n, k));
      CHECK(l.scales_bytes() == strip_scales_bytes(n, k));
      CHECK(l.strips() * l.strip_code_bytes() == static_cast<int64_t>(l.codes_bytes()));
      CHECK(l.strips() * l.strip_scales() * 2 == static_cast<int64_t>(l.scales_bytes()));
      const tb_strips v = l.view(&rng, reinterpret_cast<const uint16_t*>(&rng));
      CHECK(v.prec == prec);
      CHECK(v.n == n);
      CHECK(v.k == k);
      CHECK(v.np == np);
      CHECK(v.kp == kp);
      CHECK(v.codes_bytes == l.codes_bytes());
      CHECK(v.scales_bytes == l.scales_bytes());
      CHECK(check_strips(v).ok());
    }
  }
}

TEST_CASE("strip layout: codes and scales written by the accessor sit where twinbit/backend.h says") {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 150), k = 1 + static_cast<int64_t>(rng() % 200);
    for (int i = 0; i < kPrecisionCount; ++i) {
      const tb_prec prec = static_cast<tb_prec>(i);
      const StripLayout l{prec, n, k};
      const PrecisionTraits& t = l.traits();
      std::vector<uint8_t> codes(l.codes_bytes(), t.padding_byte);
      std::vector<uint16_t> scales(l.scales_bytes() / 2, 0);
      std::vector<int> want(static_cast<size_t>(n * k));
      std::vector<uint16_t> want_scale(static_cast<size_t>(n * l.groups()));
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t kk = 0; kk < k; ++kk) {
          const int code = t.code_min + static_cast<int>(rng() % (t.code_max - t.code_min + 1));
          want[col * k + kk] = code;
          l.set_code(codes.data(), col, kk, code);
        }
        for (int64_t g = 0; g < l.groups(); ++g) {
          const auto h = static_cast<uint16_t>(rng());
          want_scale[col * l.groups() + g] = h;
          scales[l.scale_index(col, g)] = h;
        }
      }
      bool codes_ok = true, scales_ok = true, padding_ok = true;
      for (int64_t col = 0; col < l.np(); ++col) {
        for (int64_t kk = 0; kk < l.kp(); ++kk) {
          const int got = documented_code(prec, codes.data(), l.kp(), col, kk);
          if (col < n && kk < k) {
            codes_ok &= got == want[col * k + kk];
            codes_ok &= l.code(codes.data(), col, kk) == got;
          } else {
            padding_ok &= got == 0;
          }
        }
        for (int64_t g = 0; g < l.groups(); ++g) {
          const uint16_t got = scales[documented_scale_index(l.kp(), col, g)];
          if (col < n) scales_ok &= got == want_scale[col * l.groups() + g];
          else padding_ok &= got == 0;
        }
      }
      CHECK(codes_ok);
      CHECK(scales_ok);
      CHECK(padding_ok);
    }
  }
}

}  // TEST_SUITE
