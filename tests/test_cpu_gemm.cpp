// The CPU backend's gemm against the scalar reference, bit for bit (memcmp), for EVERY
// instruction-set tag this CPU can run, on the sweep of the CPU backend issue:
//   M in {1..9, 16, 31, 32, 33, 64} x N in {1, 3, 31, 32, 33, 255, 256, 257, 1000}
//   x K in {32, 64, 96, 2048, 6144}, plus K % 32 != 0 cases; q8 and q4; modes F32 and I8.
// Each reference is computed once (for the largest M of the shape) and reused for every tag and
// every M: row m of the reference does not depend on the other rows, so comparing an M-row call
// with the first M reference rows also checks batch invariance. Shapes with N*K > 2^19 use
// M <= 9 only (the scalar reference is slow), which still covers the row kernel and the 4-row
// groups with every tail.
#include <doctest/doctest.h>

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <cstdio>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {
namespace {

const std::vector<int64_t> kSweepM = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 32, 33, 64};

std::vector<int64_t> ms_for(int64_t n, int64_t k) {
  std::vector<int64_t> out;
  const int64_t max_m = n * k > (int64_t{1} << 19) ? 9 : 64;
  for (int64_t m : kSweepM) {
    if (m <= max_m) out.push_back(m);
  }
  return out;
}

struct Shape {
  int64_t n, k;
};

// Runs one (prec, mode) over the shapes on every runnable tag; counts the compared calls.
void check_sweep(tb_prec prec, tb_act_mode mode, const std::vector<Shape>& shapes) {
  const auto isas = cpu::runnable_isas();
  REQUIRE(!isas.empty());
  std::vector<Backend> backends;
  for (cpu::Isa isa : isas) {
    auto b = cpu_backend_for(isa);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    backends.push_back(std::move(b.value()));
  }
  int64_t calls = 0;
  for (const Shape& sh : shapes) {
    const auto ms = ms_for(sh.n, sh.k);
    const int64_t max_m = ms.back();
    const uint64_t seed = static_cast<uint64_t>(sh.n * 7919 + sh.k * 31 + prec * 3 + mode);
    OwnedStrips w = random_strips(prec, sh.n, sh.k, seed);
    const int64_t ldx = sh.k + 3;  // a leading dimension larger than K
    std::vector<float> x = random_activations(max_m * ldx, seed + 1);
    const int64_t kp = w.view.kp, ng = kp / 32;
    std::vector<int8_t> xq(static_cast<size_t>(max_m * kp));
    std::vector<float> xd(static_cast<size_t>(max_m * ng));
    std::vector<float> ref(static_cast<size_t>(max_m * sh.n));
    if (mode == TB_ACT_F32) {
      ref::gemm_f32(w.view, max_m, x.data(), ldx, ref.data(), sh.n);
    } else {
      ref::quantize_activations(max_m, sh.k, x.data(), ldx, xq.data(), kp, xd.data(), ng);
      ref::gemm_i8(w.view, max_m, xq.data(), kp, xd.data(), ng, ref.data(), sh.n);
    }
    for (size_t bi = 0; bi < backends.size(); ++bi) {
      const Backend& be = backends[bi];
      tb_weights_view view{};
      view.kind = TB_WEIGHTS_STRIPS;
      view.strips = w.view;
      auto bound = be.bind(view);
      REQUIRE_MESSAGE(bound.ok(), bound.status().to_string());
      for (int64_t m : ms) {
        const int64_t ldy = sh.n + 1;
        std::vector<float> y(static_cast<size_t>(m * ldy), -12345.0f);
        tb_gemm_args a{};
        a.mode = mode;
        a.m = m;
        a.x = x.data();
        a.ldx = ldx;
        a.xq = xq.data();
        a.ldxq = kp;
        a.xd = xd.data();
        a.ldxd = ng;
        a.y = y.data();
        a.ldy = ldy;
        Status s = be.gemm(bound.value(), a);
        REQUIRE_MESSAGE(s.ok(), s.to_string());
        for (int64_t r = 0; r < m; ++r) {
          const int64_t diff = first_difference(y.data() + r * ldy, ref.data() + r * sh.n,
                                                static_cast<size_t>(sh.n));
          if (diff >= 0) {
            FAIL("isa " << std::string(cpu::isa_name(cpu::runnable_isas()[bi])) << " " << std::string(prec_name(prec))
                        << " " << std::string(act_mode_name(mode)) << " N=" << sh.n << " K=" << sh.k
                        << " M=" << m << ": row " << r << " column " << diff << " differs ("
                        << y[r * ldy + diff] << " vs reference " << ref[r * sh.n + diff] << ")");
          }
          // The column past N (ldy padding) is never written.
          CHECK(y[r * ldy + sh.n] == -12345.0f);
        }
        ++calls;
      }
    }
  }
  MESSAGE(std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode)) << ": " << calls
          << " gemm calls memcmp-equal to the reference over " << backends.size() << " isa tags");
}

std::vector<Shape> sweep_shapes() {
  std::vector<Shape> out;
  for (int64_t n : {1, 3, 31, 32, 33, 255, 256, 257, 1000}) {
    for (int64_t k : {32, 64, 96, 2048, 6144}) out.push_back({n, k});
  }
  return out;
}

std::vector<Shape> ragged_k_shapes() {  // K % 32 != 0: padded groups and odd slice counts
  std::vector<Shape> out;
  for (int64_t n : {1, 33, 257}) {
    for (int64_t k : {1, 17, 31, 33, 100, 1000, 2047}) out.push_back({n, k});
  }
  return out;
}

}  // namespace

TEST_CASE("cpu gemm q8 mode f32 equals ref::gemm_f32 bitwise, M 1..64 x N 1..1000 x K 32..6144, every isa") {
  check_sweep(TB_PREC_Q8, TB_ACT_F32, sweep_shapes());
}
TEST_CASE("cpu gemm q4 mode f32 equals ref::gemm_f32 bitwise, M 1..64 x N 1..1000 x K 32..6144, every isa") {
  check_sweep(TB_PREC_Q4, TB_ACT_F32, sweep_shapes());
}
TEST_CASE("cpu gemm q8 mode i8 equals ref::gemm_i8 bitwise, M 1..64 x N 1..1000 x K 32..6144, every isa") {
  check_sweep(TB_PREC_Q8, TB_ACT_I8, sweep_shapes());
}
TEST_CASE("cpu gemm q4 mode i8 equals ref::gemm_i8 bitwise, M 1..64 x N 1..1000 x K 32..6144, every isa") {
  check_sweep(TB_PREC_Q4, TB_ACT_I8, sweep_shapes());
}
TEST_CASE("cpu gemm q8 and q4, modes f32 and i8, K % 32 != 0 (K 1..2047), N 1/33/257, every isa") {
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) check_sweep(prec, mode, ragged_k_shapes());
  }
}

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
  for (const char* bytes : {"0", "2048", "65536"}) {
    tb_error err{};
    REQUIRE(cpu::set_prefetch_bytes(be->raw(), bytes, &err) == TB_OK);
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
        for (const char* bytes : {"0", "2048", "65536"}) {
          tb_error err{};
          REQUIRE(cpu::set_prefetch_bytes(be->raw(), bytes, &err) == TB_OK);
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

TEST_CASE("cpu backend: prefetch_bytes bad values are INVALID_ARGUMENT naming it; set_prefetch_bytes checks its arguments") {
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
  tb_error err{};
  CHECK(cpu::set_prefetch_bytes(ok->raw(), "0", &err) == TB_OK);
  CHECK(cpu::set_prefetch_bytes(ok->raw(), "70000", &err) == TB_INVALID_ARGUMENT);
  CHECK(cpu::set_prefetch_bytes(ok->raw(), nullptr, &err) == TB_INVALID_ARGUMENT);
  tb_backend other{};
  CHECK(cpu::set_prefetch_bytes(other, "4096", &err) == TB_INVALID_ARGUMENT);
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
  CHECK(b.status().message().find("avx512vnni, avx512bw, fma3_avx2, sse2") != std::string::npos);
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

TEST_CASE("cpu backend: MXCSR with FTZ or DAZ set is FAILED_PRECONDITION at creation and in gemm") {
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
  const unsigned saved = _mm_getcsr();
  for (unsigned bit : {0x8000u, 0x0040u}) {
    _mm_setcsr(saved | bit);
    auto c = create_cpu_backend();
    Status s = b->gemm(bound.value(), a);
    _mm_setcsr(saved);
    CHECK_FALSE(c.ok());
    if (!c.ok()) CHECK(c.status().code() == TB_FAILED_PRECONDITION);
    CHECK(s.code() == TB_FAILED_PRECONDITION);
  }
  CHECK(b->gemm(bound.value(), a).ok());
}

}  // namespace twinbit::test
