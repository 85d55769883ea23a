// The amx tag's I8 gemm (backends/cpu/cpu_amx.h) against ref::gemm_i8, by memcmp:
// - its schedule with the tile instructions emulated, on every CPU with avx512vnni (the packing,
//   strides, chunking, slice folds and ragged edges are the real kernel's; only TDPBSSD and the
//   tile loads/stores are plain code);
// - the real tiles through the backend (cpu,isa=amx), in the doctest suite "amx": the ctest entry
//   "amx" runs it with --requires-amx, which prints SKIPPED and exits 77 on a CPU without AMX.
// Shapes: M = 16..64 and ragged beyond, N ragged (not a multiple of 32, fewer than a strip),
// K ragged and past 8192 (several chunks and slices), q8 and q4, activations with signed zeros,
// subnormals, large values and infinities (NaN results: the default NaN on both sides).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/cpu_amx.h"
#include "backends/cpu/cpu_kernels.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {
namespace {

struct I8Case {
  OwnedStrips w;
  int64_t m, kp, ng;
  std::vector<int8_t> xq;
  std::vector<float> xd, ref;
};

I8Case make_case(tb_prec prec, int64_t m, int64_t n, int64_t k, uint64_t seed) {
  I8Case c{random_strips(prec, n, k, seed), m, pad32(k), ngroups_of(k), {}, {}, {}};
  std::vector<float> x = random_activations(m * k, seed + 1);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 3; ++i) x[static_cast<size_t>(rng() % x.size())] = (i & 1) ? -INFINITY : INFINITY;
  c.xq.assign(static_cast<size_t>(m * c.kp), 0);
  c.xd.assign(static_cast<size_t>(m * c.ng), 0.0f);
  c.ref.assign(static_cast<size_t>(m * n), 0.0f);
  ref::quantize_activations(m, k, x.data(), k, c.xq.data(), c.kp, c.xd.data(), c.ng);
  ref::gemm_i8(c.w.view, m, c.xq.data(), c.kp, c.xd.data(), c.ng, c.ref.data(), n);
  return c;
}

// The backend's gemm() setup, single-threaded, on the given table; with row_split > 0 the rows
// go in two calls, [0, row_split) and [row_split, M) (a split off the 16-row blocks included).
std::vector<float> run_table(const cpu::KernelTable& t, const I8Case& c, int schedule = 0, int64_t row_split = 0,
                             int tuning = cpu::kAmxTuningQ4) {
  const tb_strips& w = c.w.view;
  cpu::GemmParams p{};
  p.prec = w.prec;
  p.n = w.n;
  p.k = w.k;
  p.np = w.np;
  p.kp = w.kp;
  p.ngroups = c.ng;
  p.tile_bytes = StripLayout::of(w).tile_code_bytes();
  p.nsplit = fold_plan(w);
  p.codes = static_cast<const uint8_t*>(w.codes);
  p.scales = w.scales;
  p.xq = c.xq.data();
  p.ldxq = c.kp;
  p.xd = c.xd.data();
  p.ldxd = c.ng;
  std::vector<float> y(static_cast<size_t>(c.m * w.n), 0.0f);
  p.y = y.data();
  p.ldy = w.n;
  p.amx_schedule = schedule;
  p.amx_tuning = tuning;
  std::vector<uint8_t> pack(static_cast<size_t>(t.i8_pack_bytes(c.m, c.ng)));
  t.i8_pack(p, c.m, pack.data());
  p.xpack = pack.data();
  if (row_split > 0) {
    t.gemm_i8(p, 0, w.np / 32, 0, row_split);
    t.gemm_i8(p, 0, w.np / 32, row_split, c.m);
  } else {
    t.gemm_i8(p, 0, w.np / 32, 0, c.m);
  }
  return y;
}

void check_same(const std::vector<float>& y, const std::vector<float>& ref, const char* what) {
  const int64_t diff = first_difference(y.data(), ref.data(), y.size());
  CHECK_MESSAGE(diff < 0, what << ": first difference at flat index " << diff << ": "
                                << (diff < 0 ? 0.0f : y[static_cast<size_t>(diff)]) << " vs reference "
                                << (diff < 0 ? 0.0f : ref[static_cast<size_t>(diff)]));
}

}  // namespace

TEST_CASE("cpu amx schedule with emulated tiles equals ref::gemm_i8 bitwise: q8 q4, M 16..80, N 1..300, K 32..8224") {
  if (!cpu::isa_runnable(cpu::Isa::kAvx512vnni)) {
    MESSAGE("SKIPPED: the amx schedule's host part needs avx512vnni, which this CPU lacks");
    return;
  }
  const cpu::KernelTable t = cpu::make_amx_emulated_kernel_table();
  struct Shape { int64_t m, n, k; };
  const Shape shapes[] = {{16, 32, 32},   {17, 1, 96},    {31, 33, 640},  {32, 300, 2048},
                          {33, 64, 100},  {48, 45, 1024}, {64, 96, 544},  {65, 31, 256},
                          {80, 70, 3000}, {16, 40, 8224}, {40, 33, 8224}};
  int64_t calls = 0;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (const Shape& s : shapes) {
      const I8Case c = make_case(prec, s.m, s.n, s.k, static_cast<uint64_t>(s.m * 131 + s.n * 7 + s.k + prec));
      for (int schedule : {0, 1}) {
        INFO(std::string(prec_name(prec)) << " M=" << s.m << " N=" << s.n << " K=" << s.k << " schedule " << schedule);
        check_same(run_table(t, c, schedule), c.ref, "emulated amx schedule");
        // Row ranges that start inside a 16-row block write their rows only, with the same bits.
        check_same(run_table(t, c, schedule, s.m / 2 + 3), c.ref, "emulated amx schedule, rows in two ranges");
        calls += 3;
      }
      // The quadrant schedule's tunings (cpu_amx.h, AmxTuning): q8's default, each order, depths 2
      // and 3, sparse and far prefetches, no prefetch, each int-to-float conversion.
      for (int tuning : {cpu::kAmxTuningQ8, 0x200, 0x263, 0x132, 0x1101, 0x2301, 0x1202, 0x3201, 0x4101, 0x8101, 0xb301}) {
        INFO(std::string(prec_name(prec)) << " M=" << s.m << " N=" << s.n << " K=" << s.k << " tuning " << tuning);
        check_same(run_table(t, c, 0, 0, tuning), c.ref, "emulated amx quadrant schedule, tuned");
        ++calls;
      }
    }
  }
  MESSAGE(calls << " emulated-tile gemm calls memcmp-equal to the reference");
}

TEST_CASE("cpu.set_amx_tuning takes the tunings cpu_amx.h describes and refuses the others") {
  auto be = create_cpu_backend({});
  REQUIRE(be.ok());
  for (int64_t v : {0, 0x101, 0x100, 0x263, 0x301, 0x10f, 0x1101, 0x2201, 0x3201, 0x4101, 0x8101}) CHECK_MESSAGE(be->set_switch("cpu.set_amx_tuning", v).ok(), v);
  for (int64_t v : {-1, 0x001, 0x401, 0x171, 0x3101, 0xc101, 0x10101}) {
    const Status st = be->set_switch("cpu.set_amx_tuning", v);
    CHECK_MESSAGE(st.code() == TB_INVALID_ARGUMENT, v);
    CHECK(st.to_string().find("cpu.set_amx_tuning") != std::string::npos);
  }
}

TEST_CASE("cpu amx tag: listed first, the default where it runs, UNAVAILABLE where it does not") {
  const auto compiled = cpu::compiled_isas();
  CHECK(compiled.front() == cpu::Isa::kAmx);
  CHECK(std::string(cpu::isa_name(cpu::Isa::kAmx)) == "amx");
  if (cpu::isa_runnable(cpu::Isa::kAmx)) {
    CHECK(cpu::isa_runnable(cpu::Isa::kAvx512vnni));
    CHECK(cpu::runnable_isas().front() == cpu::Isa::kAmx);  // the default where it runs
  } else {
    auto be = cpu_backend_for(cpu::Isa::kAmx);
    CHECK(be.status().code() == TB_UNAVAILABLE);
  }
}

TEST_SUITE("amx") {
TEST_CASE("amx: cpu,isa=amx gemm i8 equals ref::gemm_i8 bitwise: q8 q4, every M 1..64 and ragged to 100, ragged N, K to 16384, threads 1 and all") {
  if (!cpu::isa_runnable(cpu::Isa::kAmx)) {
    MESSAGE("SKIPPED: this CPU or OS gives no AMX-INT8 tiles");
    return;
  }
  struct Shape { int64_t n, k; };
  const Shape shapes[] = {{1, 32}, {33, 2048}, {300, 96}, {1000, 8224}, {4100, 2048}, {100, 16384}};
  int64_t calls = 0;
  for (const char* threads : {"1", "0"}) {
    std::vector<BackendParam> params = {{"isa", "amx"}};
    if (threads[0] != '0') params.push_back({"threads", threads});
    auto be = create_cpu_backend(params);
    REQUIRE_MESSAGE(be.ok(), be.status().to_string());
    CHECK(be->features().find("isa.amx") != std::string::npos);
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      for (const Shape& s : shapes) {
        const int64_t mmax = s.k > 4096 ? 40 : 100;
        const I8Case c = make_case(prec, mmax, s.n, s.k, static_cast<uint64_t>(s.n * 17 + s.k + prec));
        tb_weights_view view{};
        view.kind = TB_WEIGHTS_STRIPS;
        view.strips = c.w.view;
        auto bound = be->bind(view);
        REQUIRE(bound.ok());
        // 3 .. 5: the quadrants tuned (cpu_amx.h AmxTuning): two pairs in flight, a sparse far
        // prefetch, the stores after the host work, the add-and-subtract conversion; three pairs
        // in flight, dots beside host work; tile parts between columns, C started at the magic bits.
        for (int schedule : {0, 1, 2, 3, 4, 5}) {
        REQUIRE(be->set_switch("cpu.set_amx_schedule", std::min(schedule, 2)).ok());
        REQUIRE(be->set_switch("cpu.set_amx_tuning", schedule == 3   ? 0x5263
                                                     : schedule == 4 ? 0x2301
                                                     : schedule == 5 ? 0xb201
                                                                     : cpu::kAmxTuningAuto).ok());
        for (int64_t m = 1; m <= mmax; m += (m < 64 ? 1 : 9)) {
          std::vector<float> y(static_cast<size_t>(m * s.n));
          tb_gemm_args a{TB_ACT_I8, m, nullptr, 0, c.xq.data(), c.kp, c.xd.data(), c.ng, y.data(), s.n};
          const Status st = be->gemm(bound.value(), a);
          REQUIRE_MESSAGE(st.ok(), st.to_string());
          INFO("threads " << threads << " schedule " << schedule << " " << std::string(prec_name(prec)) << " M=" << m << " N=" << s.n << " K=" << s.k);
          check_same(y, std::vector<float>(c.ref.begin(), c.ref.begin() + m * s.n), "cpu,isa=amx");
          ++calls;
        }
        }
      }
    }
  }
  MESSAGE(calls << " amx gemm calls memcmp-equal to the reference");
}

TEST_CASE("amx: the real tiles equal the emulated schedule on one shape (the emulation is what CI checks)") {
  if (!cpu::isa_runnable(cpu::Isa::kAmx)) {
    MESSAGE("SKIPPED: this CPU or OS gives no AMX-INT8 tiles");
    return;
  }
  const I8Case c = make_case(TB_PREC_Q8, 37, 257, 4000, 5);
  for (int schedule : {0, 1}) {
    const std::vector<float> real = run_table(cpu::kernel_table(cpu::Isa::kAmx), c, schedule);
    const std::vector<float> emulated = run_table(cpu::make_amx_emulated_kernel_table(), c, schedule);
    check_same(real, emulated, "hardware vs emulated tiles");
    check_same(real, c.ref, "hardware tiles vs reference");
    check_same(run_table(cpu::kernel_table(cpu::Isa::kAmx), c, schedule, 21), c.ref,
               "hardware tiles, rows in two ranges (the second starting inside a block)");
  }
}

TEST_CASE("amx: the spec key amx_schedule picks the tile schedule (describe names a fixed one), the bits stay") {
  if (!cpu::isa_runnable(cpu::Isa::kAmx)) {
    MESSAGE("SKIPPED: this CPU or OS gives no AMX-INT8 tiles");
    return;
  }
  const I8Case c = make_case(TB_PREC_Q8, 32, 300, 2048, 11);
  for (const char* schedule : {"quadrants", "shared", "auto"}) {
    auto be = create_cpu_backend({{"isa", "amx"}, {"amx_schedule", schedule}});
    REQUIRE_MESSAGE(be.ok(), be.status().to_string());
    const bool named = be->device().find(std::string("amx_schedule=") + schedule) != std::string::npos;
    CHECK_MESSAGE(named == (std::string(schedule) != "auto"), be->device());
    CHECK_MESSAGE((be->device().find("amx_schedule=") == std::string::npos) == (std::string(schedule) == "auto"),
                  be->device());
    tb_weights_view view{};
    view.kind = TB_WEIGHTS_STRIPS;
    view.strips = c.w.view;
    auto bound = be->bind(view);
    REQUIRE(bound.ok());
    std::vector<float> y(static_cast<size_t>(32 * 300));
    tb_gemm_args a{TB_ACT_I8, 32, nullptr, 0, c.xq.data(), c.kp, c.xd.data(), c.ng, y.data(), 300};
    REQUIRE(be->gemm(bound.value(), a).ok());
    INFO("amx_schedule=" << schedule);
    check_same(y, c.ref, "cpu,isa=amx,amx_schedule");
  }
}
}  // TEST_SUITE("amx")

}  // namespace twinbit::test
