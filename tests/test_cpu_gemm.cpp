// The CPU backend's gemm beyond the conformance sweep (which runs on every instruction-set tag as
// the ctest instances conformance_cpu_<tag>, docs/CONFORMANCE.md): batch invariance at an M past
// the row tiles, the avx512vnni decode paths on edge activations at every prefetch distance, and
// the backend's configuration errors.
#include <doctest/doctest.h>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/op_checks.h"
#include "core/reference.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {

TEST_CASE("cpu gemm batch invariance: row m of an M=37 call equals that row computed alone, q8 q4 x f32 i8, every isa") {
  const int64_t n = 300, k = 640, m = 37;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    OwnedStrips w = random_strips(prec, n, k, 99 + prec);
    std::vector<float> x = random_activations(m * k, 5);
    std::vector<int8_t> xq(static_cast<size_t>(m * k));
    std::vector<float> xd(static_cast<size_t>(m * k / 32));
    ref::quantize_activations(m, k, x.data(), k, xq.data(), k, xd.data(), k / 32);
    for (cpu::Isa isa : cpu::runnable_isas()) {
      auto be = cpu_backend_for(isa);
      REQUIRE(be.ok());
      tb_weights_view view{};
      view.kind = TB_WEIGHTS_STRIPS;
      view.strips = w.view;
      auto bound = be->bind(view);
      REQUIRE(bound.ok());
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        std::vector<float> all(static_cast<size_t>(m * n)), one(static_cast<size_t>(n));
        tb_gemm_args a{mode, m, x.data(), k, xq.data(), k, xd.data(), k / 32, all.data(), n};
        REQUIRE(be->gemm(bound.value(), a).ok());
        for (int64_t r = 0; r < m; ++r) {
          tb_gemm_args a1{mode, 1, x.data() + r * k, k, xq.data() + r * k, k,
                          xd.data() + r * (k / 32), k / 32, one.data(), n};
          REQUIRE(be->gemm(bound.value(), a1).ok());
          INFO("isa " << std::string(cpu::isa_name(isa)) << " " << std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode)) << " row " << r);
          CHECK(same_bits(one.data(), all.data() + r * n, static_cast<size_t>(n)));
        }
      }
    }
  }
}

// The avx512vnni row kernel's F32 decode (cpu_kernels_x86.hpp, the spread path): it scales x by
// 2^-24 and falls back to the tile path for groups where that is not exact,
// so the activations here mix groups of plain values with groups holding each edge: subnormals,
// tiny normals below 2^-102 (x * 2^-24 inexact), 2^-102 itself (exact), huge values, infinities,
// signed zeros. (No NaN inputs: which of two NaN operands an fma returns depends on the operand
// order the compiler picks - it differs between the reference's -O2 and -O3 builds - and the
// contract does not fix NaN payloads. The infinities still make the default NaN.)
std::vector<float> edge_activations(int64_t count, uint64_t seed) {
  std::vector<float> x = random_activations(count, seed);
  const float edges[] = {1e-35f, -3e-33f, 0x1p-102f, -0x1p-102f, 0x1.8p-103f, 3e38f, -1e37f,
                         INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f};
  std::mt19937_64 rng(seed);
  const int64_t groups = count / 32;
  for (int64_t g = 0; g < groups; ++g) {
    if (rng() % 3 != 0) continue;  // two groups in three keep only the random values
    x[static_cast<size_t>(g * 32 + static_cast<int64_t>(rng() % 32))] = edges[rng() % (sizeof edges / sizeof edges[0])];
  }
  return x;
}

TEST_CASE("cpu gemm mode f32 decode (spread path, tile fallback on inexact x * 2^-24) x prefetch distances 0 / 2 KiB / 64 KiB equal ref::gemm_f32 bitwise, q8 q4, M 1..3, N 1/33/257/1000, K 32..2048, edge activations, avx512vnni") {
  if (!cpu::isa_runnable(cpu::Isa::kAvx512vnni)) {
    MESSAGE("avx512vnni is not runnable here: only the tile path exists on the other tags");
    return;
  }
  auto be = cpu_backend_for(cpu::Isa::kAvx512vnni);
  REQUIRE_MESSAGE(be.ok(), be.status().to_string());
  int64_t calls = 0;
  for (int64_t bytes : {0, 2048, 65536}) {
    REQUIRE(be->set_switch("cpu.set_prefetch_bytes", bytes).ok());
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      for (int64_t n : {1, 33, 257, 1000}) {
        for (int64_t k : {32, 64, 96, 100, 2048}) {
          OwnedStrips w = random_strips(prec, n, k, 7 * n + k + prec);
          const int64_t m = 3;
          std::vector<float> x = edge_activations(m * k, static_cast<uint64_t>(n * k + prec));
          std::vector<float> ref(static_cast<size_t>(m * n));
          ref::gemm_f32(w.view, m, x.data(), k, ref.data(), n);
          tb_weights_view view{};
          view.kind = TB_WEIGHTS_STRIPS;
          view.strips = w.view;
          auto bound = be->bind(view);
          REQUIRE(bound.ok());
          for (int64_t mm = 1; mm <= m; ++mm) {
            std::vector<float> y(static_cast<size_t>(mm * n));
            tb_gemm_args a{TB_ACT_F32, mm, x.data(), k, nullptr, 0, nullptr, 0, y.data(), n};
            Status st = be->gemm(bound.value(), a);
            REQUIRE_MESSAGE(st.ok(), st.to_string());
            const int64_t diff = first_difference(y.data(), ref.data(), static_cast<size_t>(mm * n));
            INFO("prefetch " << bytes << " B " << std::string(prec_name(prec)) << " N=" << n << " K=" << k << " M=" << mm);
            CHECK_MESSAGE(diff < 0, "first difference at flat index " << diff << ": " << (diff < 0 ? 0.0f : y[diff])
                                    << " vs reference " << (diff < 0 ? 0.0f : ref[diff]));
            ++calls;
          }
        }
      }
    }
  }
  MESSAGE(calls << " gemm calls memcmp-equal to the reference");
}

TEST_CASE("cpu gemm mode i8 prefetch distances 0 (no software prefetch) / 2 KiB / 64 KiB equal ref::gemm_i8 bitwise, q8 q4, M 1 and 5, N 33/1000, K 96/2048, avx512vnni") {
  if (!cpu::isa_runnable(cpu::Isa::kAvx512vnni)) {
    MESSAGE("avx512vnni is not runnable here: the other tags prefetch one way");
    return;
  }
  auto be = cpu_backend_for(cpu::Isa::kAvx512vnni);
  REQUIRE_MESSAGE(be.ok(), be.status().to_string());
  int64_t calls = 0;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (int64_t n : {33, 1000}) {
      for (int64_t k : {96, 2048}) {
        OwnedStrips w = random_strips(prec, n, k, 11 * n + k + prec);
        const int64_t m = 5, ng = k / 32;
        std::vector<float> x = edge_activations(m * k, static_cast<uint64_t>(n + k));
        std::vector<int8_t> xq(static_cast<size_t>(m * k));
        std::vector<float> xd(static_cast<size_t>(m * ng)), ref(static_cast<size_t>(m * n));
        ref::quantize_activations(m, k, x.data(), k, xq.data(), k, xd.data(), ng);
        ref::gemm_i8(w.view, m, xq.data(), k, xd.data(), ng, ref.data(), n);
        tb_weights_view view{};
        view.kind = TB_WEIGHTS_STRIPS;
        view.strips = w.view;
        auto bound = be->bind(view);
        REQUIRE(bound.ok());
        for (int64_t bytes : {0, 2048, 65536}) {
          REQUIRE(be->set_switch("cpu.set_prefetch_bytes", bytes).ok());
          for (int64_t mm : {int64_t{1}, m}) {
            std::vector<float> y(static_cast<size_t>(mm * n));
            tb_gemm_args a{TB_ACT_I8, mm, nullptr, 0, xq.data(), k, xd.data(), ng, y.data(), n};
            const Status st = be->gemm(bound.value(), a);
            REQUIRE_MESSAGE(st.ok(), st.to_string());
            INFO(bytes << " B " << std::string(prec_name(prec)) << " N=" << n << " K=" << k << " M=" << mm);
            CHECK(first_difference(y.data(), ref.data(), static_cast<size_t>(mm * n)) < 0);
            ++calls;
          }
        }
      }
    }
  }
  MESSAGE(calls << " gemm calls memcmp-equal to the reference");
}

TEST_CASE("cpu backend: prefetch_bytes bad values are INVALID_ARGUMENT naming it; the cpu.set_prefetch_bytes switch checks its value") {
  for (const char* bad : {"-1", "65537", "4k", "", "+8"}) {
    auto c = create_cpu_backend({{"prefetch_bytes", bad}});
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == TB_INVALID_ARGUMENT);
    CHECK(c.status().message().find(std::string("prefetch_bytes=") + bad) != std::string::npos);
  }
  for (const char* good : {"0", "4096", "65536"}) {
    CHECK(create_cpu_backend({{"prefetch_bytes", good}}).ok());
  }
  auto ok = create_cpu_backend();
  REQUIRE(ok.ok());
  CHECK(ok->set_switch("cpu.set_prefetch_bytes", 0).ok());
  const Status big = ok->set_switch("cpu.set_prefetch_bytes", 70000);
  CHECK(big.code() == TB_INVALID_ARGUMENT);
  CHECK(big.message().find("70000") != std::string::npos);
  CHECK(ok->set_switch("cpu.set_prefetch_bytes", -1).code() == TB_INVALID_ARGUMENT);
  CHECK(ok->set_switch("cpu.no_such_switch", 1).code() == TB_UNIMPLEMENTED);
}

TEST_CASE("cpu backend: reads no environment variable (TWINBIT_CPU_* are CLI defaults; the removed measurement switches are gone)") {
  // Values the backend would reject as parameters: creation ignores the variables altogether.
  for (const char* var : {"TWINBIT_CPU_ARCH", "TWINBIT_CPU_THREADS", "TWINBIT_CPU_PREFETCH_BYTES",
                          "TWINBIT_CPU_F32_DECODE", "TWINBIT_CPU_I8_PREFETCH",
                          "TWINBIT_CPU_PREFETCH_LEVEL"}) {
    ::setenv(var, "no-such-variant", 1);
    auto b = create_cpu_backend();
    ::unsetenv(var);
    CHECK_MESSAGE(b.ok(), var << ": " << b.status().to_string());
  }
}

TEST_CASE("cpu backend: isa unknown value is INVALID_ARGUMENT listing the valid tags") {
  auto b = create_cpu_backend({{"isa", "avx512"}});
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("isa=avx512") != std::string::npos);
  CHECK(b.status().code() == TB_INVALID_ARGUMENT);
#if defined(__aarch64__)
  CHECK(b.status().message().find("neon_dotprod, neon") != std::string::npos);
#else
  CHECK(b.status().message().find("avx512vnni, avx512bw, fma3_avx2, sse2") != std::string::npos);
#endif
}

TEST_CASE("cpu backend: describe names the CPU model, the thread count and the chosen isa") {
  for (cpu::Isa isa : cpu::runnable_isas()) {
    auto b = cpu_backend_for(isa);
    REQUIRE(b.ok());
    // Asked through the C entry (the C++ wrapper's cached copy is not what is under test).
    tb_backend_info info{};
    tb_error err{};
    REQUIRE(b->raw().iface->describe(b->raw().ctx, &info, &err) == TB_OK);
    const std::string device = info.device;
    INFO(device);
    CHECK(device.find(std::string(", ") + cpu::isa_name(isa) + ")") != std::string::npos);
    CHECK(device.find(" threads, ") != std::string::npos);
    CHECK(device.find(cpu::cpu_model_name()) == 0);
  }
}

// The thread's floating-point control register: MXCSR on x86-64, FPCR on aarch64, and the bits
// that flush subnormals (x86-64: FTZ, DAZ; aarch64: FZ, FZ16).
#if defined(__aarch64__)
using FpControl = uint64_t;
FpControl get_fp_control() { uint64_t v; __asm__ volatile("mrs %0, fpcr" : "=r"(v)); return v; }
void set_fp_control(FpControl v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
constexpr FpControl kFlushBits[] = {1u << 24, 1u << 19};
#else
using FpControl = unsigned;
FpControl get_fp_control() { return _mm_getcsr(); }
void set_fp_control(FpControl v) { _mm_setcsr(v); }
constexpr FpControl kFlushBits[] = {0x8000u, 0x0040u};
#endif

TEST_CASE("cpu backend: MXCSR (FTZ, DAZ) or FPCR (FZ, FZ16) flushing subnormals is FAILED_PRECONDITION at creation and in gemm") {
  auto b = create_cpu_backend();
  REQUIRE(b.ok());
  OwnedStrips w = random_strips(TB_PREC_Q8, 64, 64, 1);
  tb_weights_view view{};
  view.kind = TB_WEIGHTS_STRIPS;
  view.strips = w.view;
  auto bound = b->bind(view);
  REQUIRE(bound.ok());
  std::vector<float> x(64, 1.0f), y(64);
  tb_gemm_args a{TB_ACT_F32, 1, x.data(), 64, nullptr, 0, nullptr, 0, y.data(), 64};
  const FpControl saved = get_fp_control();
  for (FpControl bit : kFlushBits) {
    set_fp_control(saved | bit);
    if ((get_fp_control() & bit) == 0) {
      // The bit is not writable here: FPCR.FZ16 exists only with half-precision arithmetic
      // (FEAT_FP16, Armv8.2), so e.g. a Cortex-A53 keeps it 0 and cannot flush that way.
      MESSAGE("FP control bit " << bit << " does not exist on this CPU");
      continue;
    }
    auto c = create_cpu_backend();
    Status s = b->gemm(bound.value(), a);
    set_fp_control(saved);
    CHECK_FALSE(c.ok());
    if (!c.ok()) CHECK(c.status().code() == TB_FAILED_PRECONDITION);
    CHECK(s.code() == TB_FAILED_PRECONDITION);
  }
  CHECK(b->gemm(bound.value(), a).ok());
}

}  // namespace twinbit::test
