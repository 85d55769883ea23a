// The shape-only parts of the contract: split plan, slice bounds, fp16 decoding, and the
// compiler guard (no contraction of a*b+c into an fma).
#include <doctest/doctest.h>

#include <cmath>

#include "core/numerics.h"
#include "tests/test_support.h"

using namespace twinbit;
using twinbit::testing::bits;

TEST_SUITE("core") {

TEST_CASE("split_plan follows the v1 rule (slices of at least 4 groups) for the Qwen3-VL-2B shapes") {
  CHECK(split_plan(2048, 2048) == 16);     // q/o: B = 2, want 256, cap 64 / 4 = 16
  CHECK(split_plan(1024, 2048) == 16);     // k/v: B = 1
  CHECK(split_plan(12288, 2048) == 16);    // gate_up: B = 12, want 43, cap 16
  CHECK(split_plan(2048, 6144) == 48);     // down: 192 groups, cap 48
  CHECK(split_plan(151936, 2048) == 4);    // lm_head: B = 149, want ceil(512/149) = 4 (as the draft)
  CHECK(split_plan(11300, 6144) == 43);    // B = 12: want 43 < cap 48, uneven (192 = 43 * 4 + 20)
  CHECK(split_plan(1, 32) == 1);           // one group: never split
  CHECK(split_plan(1, 224) == 1);          // 7 groups: cap 1
  CHECK(split_plan(1, 256) == 2);          // 8 groups: two slices of 4
  CHECK(split_plan(1000, 6144) == 48);
  CHECK(split_plan(524288, 2048) == 1);    // B = 512: no split
  CHECK(split_plan(33, 100) == 1);         // K % 32 != 0: ngroups = 4, cap 1
  CHECK(split_plan(33, 1000) == 8);        // 32 groups (the last one partial), cap 8
  for (int64_t n : {1, 33, 1000, 12288, 151936}) {
    for (int64_t k : {32, 100, 256, 2048, 2080, 6144, 9000}) {
      const int64_t ns = split_plan(n, k);
      CHECK(ns >= 1);
      CHECK((ns == 1 || ngroups_of(k) / ns >= kMinSliceGroups));  // every slice >= 4 groups
    }
  }
}

TEST_CASE("split_plan is 1 exactly when ngroups < 8 (K <= 224) or Np > 523264; otherwise every slice holds >= 4 groups (NUMERICS.md)") {
  const int64_t ns_n[] = {1, 32, 33, 1000, 151936, 523264, 523265, 524288, int64_t{1} << 24};
  for (int64_t n : ns_n) {
    for (int64_t k = 1; k <= 1200; ++k) {
      const int64_t ng = ngroups_of(k), ns = split_plan(n, k);
      const bool one = ng < 8 || pad32(n) > 523264;
      REQUIRE_MESSAGE((ns == 1) == one, "N " << n << " K " << k << " nsplit " << ns);
      for (int64_t z = 0; z < ns && !one; ++z) {
        REQUIRE(slice_end(ng, ns, z) - slice_begin(ng, ns, z) >= 4);
      }
      // nsplit = 1 leaves one slice of all groups: fewer than 4 exactly when K <= 96
      if (one) REQUIRE((ng < 4) == (k <= 96));
    }
  }
}

TEST_CASE("slices partition the groups, remainder first") {
  // ngroups 10 into 3: [0,4) [4,7) [7,10)
  CHECK(slice_begin(10, 3, 0) == 0);
  CHECK(slice_end(10, 3, 0) == 4);
  CHECK(slice_begin(10, 3, 1) == 4);
  CHECK(slice_end(10, 3, 1) == 7);
  CHECK(slice_begin(10, 3, 2) == 7);
  CHECK(slice_end(10, 3, 2) == 10);
  for (int64_t ng : {1, 2, 5, 64, 192, 4801}) {
    for (int64_t ns = 1; ns <= ng && ns <= 300; ns += 7) {
      int64_t next = 0;
      for (int64_t z = 0; z < ns; ++z) {
        CHECK(slice_begin(ng, ns, z) == next);
        CHECK(slice_end(ng, ns, z) > slice_begin(ng, ns, z));
        next = slice_end(ng, ns, z);
      }
      CHECK(next == ng);
    }
  }
}

TEST_CASE("fp16_to_float is exact for normals, subnormals, zeros, inf and NaN") {
  CHECK(bits(fp16_to_float(0x0000)) == 0x00000000u);
  CHECK(bits(fp16_to_float(0x8000)) == 0x80000000u);             // -0 stays -0
  CHECK(fp16_to_float(0x3c00) == 1.0f);
  CHECK(fp16_to_float(0x3800) == 0.5f);
  CHECK(fp16_to_float(0xc000) == -2.0f);
  CHECK(fp16_to_float(0x7bff) == 65504.0f);                      // largest half
  CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));         // smallest subnormal half
  CHECK(fp16_to_float(0x03ff) == std::ldexp(1023.0f, -24));      // largest subnormal half
  CHECK(fp16_to_float(0x0400) == std::ldexp(1.0f, -14));         // smallest normal half
  CHECK(std::isinf(fp16_to_float(0x7c00)));
  CHECK(fp16_to_float(0xfc00) < 0);
  CHECK(std::isnan(fp16_to_float(0x7e00)));
  // Every finite half equals its value computed independently in double.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) continue;
    double v = e == 0 ? std::ldexp(static_cast<double>(m), -24)
                      : std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
    if (h & 0x8000) v = -v;
    REQUIRE(static_cast<double>(fp16_to_float(static_cast<uint16_t>(h))) == v);
  }
}

// Compiled for an FMA-capable target on purpose: if -ffp-contract=off were lost, GCC would be
// free to fuse this multiply-add into one fma here. (Every aarch64 target has FMADD, and GCC
// there contracts by default: the canary needs no attribute.)
#if defined(__x86_64__)
#define TWINBIT_FMA_TARGET __attribute__((target("fma"), noinline))
#else
#define TWINBIT_FMA_TARGET __attribute__((noinline))
#endif
TWINBIT_FMA_TARGET static float mul_then_add(float a, float b, float c) {
  return a * b + c;
}

TEST_CASE("canary: a*b+c is not contracted into an fma") {
  // a*b = 1 - 2^-46 exactly, which rounds to 1.0f; + (-1) gives 0. A fused fma gives -2^-46.
  volatile float a = 1.0f + std::ldexp(1.0f, -23);
  volatile float b = 1.0f - std::ldexp(1.0f, -23);
  volatile float c = -1.0f;
  CHECK(mul_then_add(a, b, c) == 0.0f);
  CHECK(std::fma(a, b, c) == -std::ldexp(1.0f, -46));  // and the explicit fma is a real fma
}

}  // TEST_SUITE
