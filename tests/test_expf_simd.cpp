// The vectorised tb_expf (tb_expf_generic over xsimd batches, backends/cpu/cpu_expf_simd.h)
// against the scalar tb_expf, bit for bit, on every runnable instruction-set tag:
//   unit: special values and 2^24 inputs spread over all 2^32 bit patterns;
//   slow_expf_simd: all 2^32 inputs, per tag (ctest entry "slow").
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

#include <tbb/parallel_for.h>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_kernels.h"
#include "core/tb_expf.h"

namespace twinbit::test {
namespace {

// Compares the tag's expf kernel with the scalar one on bit patterns [lo, hi) stepping by step;
// returns the number of differing inputs and the first one.
uint64_t count_differences(const cpu::KernelTable& kt, uint64_t lo, uint64_t hi, uint64_t step,
                           uint32_t* first_bad) {
  constexpr int64_t kChunk = 1 << 16;
  std::atomic<uint64_t> bad{0};
  std::atomic<uint32_t> first{0};
  const uint64_t count = (hi - lo + step - 1) / step;
  tbb::parallel_for(uint64_t{0}, (count + kChunk - 1) / kChunk, [&](uint64_t chunk) {
    std::vector<float> in(kChunk), out(kChunk);
    const uint64_t i0 = chunk * kChunk;
    const int64_t n = static_cast<int64_t>(std::min<uint64_t>(kChunk, count - i0));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(lo + (i0 + i) * step);
      std::memcpy(&in[i], &bits, 4);
    }
    kt.expf(in.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = tb_expf(in[i]);
      if (std::memcmp(&want, &out[i], 4) != 0) {
        if (bad.fetch_add(1) == 0) {
          uint32_t b;
          std::memcpy(&b, &in[i], 4);
          first.store(b);
        }
      }
    }
  });
  *first_bad = first.load();
  return bad.load();
}

std::string hex_bits(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

TEST_CASE("tb_expf simd equals scalar tb_expf bitwise: specials and 2^24 spread inputs, every isa") {
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.73f, 89.0f, 100.0f, -87.0f,
                            -103.9f, -104.0f, -200.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(), 1e-30f, -1e-30f,
                            0.34657359f, -0.34657359f, 2.0f, 3.0f};
  constexpr int kN = sizeof(specials) / sizeof(specials[0]);
  for (cpu::Isa isa : cpu::runnable_isas()) {
    const cpu::KernelTable& kt = cpu::kernel_table(isa);
    float out[kN];
    kt.expf(specials, out, kN);
    for (int i = 0; i < kN; ++i) {
      const float want = tb_expf(specials[i]);
      INFO("isa " << std::string(cpu::isa_name(isa)) << " x = " << specials[i]);
      CHECK(std::memcmp(&want, &out[i], 4) == 0);
    }
    uint32_t first = 0;
    const uint64_t bad = count_differences(kt, 0, uint64_t{1} << 32, 256 + 1, &first);
    INFO("isa " << std::string(cpu::isa_name(isa)) << " first differing input bits " << hex_bits(first));
    CHECK(bad == 0);
  }
}

TEST_SUITE("slow_expf_simd") {
TEST_CASE("tb_expf simd equals scalar tb_expf bitwise on all 2^32 inputs, every isa") {
  for (cpu::Isa isa : cpu::runnable_isas()) {
    uint32_t first = 0;
    const uint64_t bad = count_differences(cpu::kernel_table(isa), 0, uint64_t{1} << 32, 1, &first);
    INFO("isa " << std::string(cpu::isa_name(isa)) << " first differing input bits " << hex_bits(first));
    CHECK(bad == 0);
    MESSAGE(std::string(cpu::isa_name(isa)) << ": " << bad << " of 2^32 inputs differ from scalar tb_expf");
  }
}
}

}  // namespace twinbit::test
