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

// Per tag: how many inputs differ from the scalar tb_expf, and the first one found.
struct Differences {
  uint64_t count = 0;
  uint32_t first = 0;
};

// Compares every tag's expf kernel with the scalar one on bit patterns [lo, hi) stepping by step.
// The scalar result of a chunk is computed once for all tags (it costs more than a tag's kernel).
std::vector<Differences> count_differences(const std::vector<cpu::Isa>& isas, uint64_t lo, uint64_t hi,
                                           uint64_t step) {
  constexpr int64_t kChunk = 1 << 16;
  const size_t tags = isas.size();
  std::vector<std::atomic<uint64_t>> bad(tags);
  std::vector<std::atomic<uint32_t>> first(tags);
  const uint64_t count = (hi - lo + step - 1) / step;
  tbb::parallel_for(uint64_t{0}, (count + kChunk - 1) / kChunk, [&](uint64_t chunk) {
    std::vector<float> in(kChunk), want(kChunk), out(kChunk);
    const uint64_t i0 = chunk * kChunk;
    const int64_t n = static_cast<int64_t>(std::min<uint64_t>(kChunk, count - i0));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(lo + (i0 + i) * step);
      std::memcpy(&in[i], &bits, 4);
      want[i] = tb_expf(in[i]);
    }
    for (size_t t = 0; t < tags; ++t) {
      cpu::kernel_table(isas[t]).expf(in.data(), out.data(), n);
      if (std::memcmp(want.data(), out.data(), static_cast<size_t>(n) * 4) == 0) continue;
      for (int64_t i = 0; i < n; ++i) {
        if (std::memcmp(&want[i], &out[i], 4) != 0 && bad[t].fetch_add(1) == 0) {
          uint32_t b;
          std::memcpy(&b, &in[i], 4);
          first[t].store(b);
        }
      }
    }
  });
  std::vector<Differences> d(tags);
  for (size_t t = 0; t < tags; ++t) d[t] = {bad[t].load(), first[t].load()};
  return d;
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
  }
  const std::vector<cpu::Isa> isas = cpu::runnable_isas();
  const std::vector<Differences> d = count_differences(isas, 0, uint64_t{1} << 32, 256 + 1);
  for (size_t t = 0; t < isas.size(); ++t) {
    INFO("isa " << std::string(cpu::isa_name(isas[t])) << " first differing input bits " << hex_bits(d[t].first));
    CHECK(d[t].count == 0);
  }
}

TEST_SUITE("slow_expf_simd") {
TEST_CASE("tb_expf simd equals scalar tb_expf bitwise on all 2^32 inputs, every isa") {
  const std::vector<cpu::Isa> isas = cpu::runnable_isas();
  const std::vector<Differences> d = count_differences(isas, 0, uint64_t{1} << 32, 1);
  for (size_t t = 0; t < isas.size(); ++t) {
    INFO("isa " << std::string(cpu::isa_name(isas[t])) << " first differing input bits " << hex_bits(d[t].first));
    CHECK(d[t].count == 0);
    MESSAGE(std::string(cpu::isa_name(isas[t])) << ": " << d[t].count << " of 2^32 inputs differ from scalar tb_expf");
  }
}
}

}  // namespace twinbit::test
