// The CUDA gemm beyond the conformance sweep (which runs as the ctest instances conformance_cuda
// and conformance_cuda_exhaustive, docs/CONFORMANCE.md): UNIMPLEMENTED reasons, the prefill
// schedules of large grids, batch invariance, saturated i8 codes, graphs off, every decode kernel,
// host threads, bind sizes and errors. Runs only where a CUDA device is present (ctest entry
// "gpu"; SKIPPED elsewhere).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "conformance/inputs.h"
#include "core/op_checks.h"
#include "tests/test_cuda_support.h"
#ifdef TWINBIT_HAS_CUDA_BACKEND
#include "backends/cuda/backend_state.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/output_copy.h"
#endif

namespace twinbit::cuda_test {

TEST_SUITE("gpu") {

TEST_CASE("gpu gemm K100 not multiple of 32 is UNIMPLEMENTED with its reason, q8 and q4") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    HostStrips h = random_strips(prec, 64, 100, 7);
    tb_op_desc op{};
    op.op = TB_OP_GEMM;
    op.prec = prec;
    op.mode = TB_ACT_F32;
    op.m = 1;
    op.n = 64;
    op.k = 100;
    const Status sup = cuda->supports(op);
    CHECK(sup.code() == TB_UNIMPLEMENTED);
    CHECK(sup.message().find("K % 32 != 0") != std::string::npos);
    CHECK(sup.message().find("K = 100") != std::string::npos);
    auto bound = cuda->bind(strips_view(h));
    REQUIRE(bound.ok());
    Activations a = make_activations(1, 100, 8);
    std::vector<float> y(64);
    const Status s = cuda->gemm(*bound, gemm_args(TB_ACT_F32, 1, h.view, a, y.data()));
    CHECK(s.code() == TB_UNIMPLEMENTED);
  }
}

TEST_CASE("gpu gemm prefill on large grids equals reference bits: two strips per warp (N151936 K256 M33) and every slice per block (N12288 K256 M33), q8 q4 x f32 i8") {
  // The sweep's grids are small; these shapes take the prefill schedules chosen for large grids
  // (plan_prefill in backends/cuda/gemm_plan.cu): at N 151936 two strips per warp (mode F32
  // with one slice per block, mode I8 over every slice), at N 12288 one strip per warp over every
  // slice with the rows inside the k loop. K 256 keeps the reference affordable (2 slices of 4).
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  for (int64_t n : {151936, 12288}) {
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      const int64_t k = 256, m = 33;
      HostStrips h = random_strips(prec, n, k, 91 + n + prec);
      auto bound = cuda->bind(strips_view(h));
      REQUIRE(bound.ok());
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        Activations a = make_activations(m, k, 17 + n + mode);
        const auto want = reference(mode, m, h.view, a);
        std::vector<float> got(want.size(), std::nanf("0x7ab"));
        const Status st = cuda->gemm(*bound, gemm_args(mode, m, h.view, a, got.data()));
        REQUIRE_MESSAGE(st.ok(), st.to_string());
        const auto d = bit_diff(want.data(), got.data(), m * n);
        CHECK_MESSAGE(d.first == 0, std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                                        << " N=" << n << ": " << d.first << " floats differ, first at " << d.second);
      }
    }
  }
}

TEST_CASE("gpu gemm batch invariance: M33 rows equal 33 single-row calls, N257 K2048, q8 q4 x f32 i8") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    HostStrips h = random_strips(prec, 257, 2048, 11 + prec);
    auto bound = cuda->bind(strips_view(h));
    REQUIRE(bound.ok());
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      const int64_t m = 33;
      Activations a = make_activations(m, 2048, 12 + mode);
      std::vector<float> all(static_cast<size_t>(m * 257));
      REQUIRE(cuda->gemm(*bound, gemm_args(mode, m, h.view, a, all.data())).ok());
      for (int64_t r = 0; r < m; ++r) {
        Activations one;
        one.x.assign(a.x.begin() + r * 2048, a.x.begin() + (r + 1) * 2048);
        one.xq.assign(a.xq.begin() + r * 2048, a.xq.begin() + (r + 1) * 2048);
        one.xd.assign(a.xd.begin() + r * 64, a.xd.begin() + (r + 1) * 64);
        std::vector<float> y(257);
        REQUIRE(cuda->gemm(*bound, gemm_args(mode, 1, h.view, one, y.data())).ok());
        CHECK_MESSAGE(bit_diff(y.data(), all.data() + r * 257, 257).first == 0,
                      std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode)) << " row " << r);
      }
    }
  }
}

TEST_CASE("gpu gemm on subnormal activation scales (saturated i8 codes) and q8 code -128 equals reference bits, q8 q4 x f32 i8, M{1,8,33} N{257,1000} K{96,2048}") {
  // The corners the conformance inputs also carry: rows and groups whose I8 scale d = amax/127
  // is subnormal, with codes clamped at +-127 (NUMERICS.md, mode I8), and the q8 code -128,
  // which the packer never writes but a GGUF block may hold.
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (int64_t n : {257, 1000}) {
      for (int64_t k : {96, 2048}) {
        HostStrips h = random_strips(prec, n, k, 51 + n + k);
        if (prec == TB_PREC_Q8) {  // every 7th real code becomes -128
          const StripLayout layout = StripLayout::of(h.view);
          for (int64_t col = 0; col < n; ++col) {
            for (int64_t kk = col % 7; kk < k; kk += 7) layout.set_code(h.owned.codes.data(), col, kk, -128);
          }
        }
        auto bound = cuda->bind(strips_view(h));
        REQUIRE(bound.ok());
        for (int64_t m : {1, 8, 33}) {
          Activations a = make_activations(m, k, 61 + m);
          conformance::Rng rng(71 + m + k);
          conformance::tiny_activation_groups(rng, a.x, m, k, k);
          if (m == 1) {  // a single row: make all of it tiny, or the scales would hide it
            // Group 0 holds whole multiples of 2^-149 (|v| <= 70 units); the rest is scaled down.
            // (Scaling back by 2^140 in float would overflow to inf and make NaN inputs.)
            for (int64_t i = 1; i < 32; ++i) a.x[i] = std::ldexp(std::nearbyint(a.x[i] * 70.0f), -149);
            for (int64_t i = 32; i < k; ++i) a.x[i] = std::ldexp(a.x[i], -140);
            a.x[0] = std::ldexp(150.0f, -149);  // group 0: d = 2^-149, x/d = 150 -> code 127
          }
          const int64_t kp = pad32(k);
          ref::quantize_activations(m, k, a.x.data(), k, a.xq.data(), kp, a.xd.data(), kp / 32);
          for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
            const auto want = reference(mode, m, h.view, a);
            std::vector<float> got(want.size(), std::nanf("0x7ab"));
            REQUIRE(cuda->gemm(*bound, gemm_args(mode, m, h.view, a, got.data())).ok());
            const auto [differ, at] = bit_diff(want.data(), got.data(), m * n);
            CHECK_MESSAGE(differ == 0, std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                                           << " M=" << m << " N=" << n << " K=" << k << ": first at " << at
                                           << ", want " << (at < 0 ? 0.0f : want[at]) << " got "
                                           << (at < 0 ? 0.0f : got[at]));
          }
        }
      }
    }
  }
}

#ifdef TWINBIT_HAS_CUDA_BACKEND
TEST_CASE("gpu gemm without graphs equals reference bits, q8 q4 x f32 i8, M{1,8,33} N{257,1000} K{96,2048}") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  REQUIRE(cuda->set_switch("cuda.set_use_graphs", 0).ok());
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (int64_t n : {257, 1000}) {
      for (int64_t k : {96, 2048}) {
        HostStrips h = random_strips(prec, n, k, 31 + n + k);
        auto bound = cuda->bind(strips_view(h));
        REQUIRE(bound.ok());
        for (int64_t m : {1, 8, 33}) {
          for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
            Activations a = make_activations(m, k, 41 + m);
            const auto want = reference(mode, m, h.view, a);
            std::vector<float> got(want.size());
            REQUIRE(cuda->gemm(*bound, gemm_args(mode, m, h.view, a, got.data())).ok());
            const auto [differ, at] = bit_diff(want.data(), got.data(), m * n);
            CHECK_MESSAGE(differ == 0, std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                                           << " M=" << m << " N=" << n << " K=" << k << ": first at " << at
                                           << ", want " << (at < 0 ? 0.0f : want[at]) << " got "
                                           << (at < 0 ? 0.0f : got[at]));
          }
        }
      }
    }
  }
  REQUIRE(cuda->set_switch("cuda.set_use_graphs", 1).ok());
}

TEST_CASE("gpu gemm outputs of 1 MiB and more, every output form (one copy; row chunks; column ranges by the rule, forced 1, 3, 7 and more than the strips; 3 and 7 on the whole output's schedule; written by the kernel into the mapped staging): bits equal the reference under 1 MiB, just past it and at three chunks, rows packed and with a row stride ldy > n whose gaps stay untouched, with and without graphs, q8 q4 x f32 i8, N1000 (ragged) K256") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  constexpr int64_t n = 1000, k = 256;
  struct Form {
    cuda::OutputForm form;
    int ranges;
    cuda::RangePlan plan;
    int direct_kib = 64;  // every output here is past 64 KiB: copied back; 1 << 20: the kernel writes it into staging
  };
  using cuda::OutputForm;
  using cuda::RangePlan;
  const Form forms[] = {{OutputForm::kOneCopy, 0, RangePlan::kAuto},      {OutputForm::kRowChunks, 0, RangePlan::kAuto},
                        {OutputForm::kColumnRanges, 0, RangePlan::kAuto}, {OutputForm::kColumnRanges, 1, RangePlan::kOwn},
                        {OutputForm::kColumnRanges, 3, RangePlan::kOwn},  {OutputForm::kColumnRanges, 7, RangePlan::kOwn},
                        {OutputForm::kColumnRanges, 64, RangePlan::kOwn}, {OutputForm::kColumnRanges, 3, RangePlan::kWhole},
                        {OutputForm::kColumnRanges, 7, RangePlan::kWhole},
                        {OutputForm::kColumnRanges, 0, RangePlan::kAuto, 1 << 20}};
  const float gap = std::nanf("0x5ca");
  uint32_t gap_bits = 0;
  std::memcpy(&gap_bits, &gap, 4);
  int64_t calls = 0;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    HostStrips h = random_strips(prec, n, k, 907 + prec);
    auto bound = cuda->bind(strips_view(h));
    REQUIRE(bound.ok());
    // 262 rows: 262000 floats, under 1 MiB (one copy); 263: two chunks; 600: three.
    for (int64_t m : {262, 263, 600}) {
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        // Two inputs in turn (one per ldy): a call that copied out an earlier call's output,
        // still in staging, would show.
        Activations acts[2] = {make_activations(m, k, 53 + m), make_activations(m, k, 54 + m)};
        const std::vector<float> wants[2] = {reference(mode, m, h.view, acts[0]), reference(mode, m, h.view, acts[1])};
        for (int graphs : {1, 0}) {
          REQUIRE(cuda->set_switch("cuda.set_use_graphs", graphs).ok());
          for (const Form& f : forms) {
            REQUIRE(cuda->set_switch("cuda.set_chunked_output", static_cast<int64_t>(f.form)).ok());
            REQUIRE(cuda->set_switch("cuda.set_output_chunks", f.ranges).ok());
            REQUIRE(cuda->set_switch("cuda.set_range_plan", static_cast<int64_t>(f.plan)).ok());
            REQUIRE(cuda->set_switch("cuda.set_direct_output_kib", f.direct_kib).ok());
            for (int64_t ldy : {n, n + 3}) {
              const int which = ldy == n ? 0 : 1;
              const std::vector<float>& want = wants[which];
              std::vector<float> got(static_cast<size_t>(m * ldy), gap);
              tb_gemm_args g = gemm_args(mode, m, h.view, acts[which], got.data());
              g.ldy = ldy;
              const Status st = cuda->gemm(*bound, g);
              REQUIRE_MESSAGE(st.ok(), st.to_string());
              ++calls;
              int64_t differ = 0, touched = 0;
              for (int64_t r = 0; r < m; ++r) {
                differ += std::memcmp(want.data() + r * n, got.data() + r * ldy, n * 4) != 0;
                for (int64_t c = n; c < ldy; ++c) {
                  uint32_t bits = 0;
                  std::memcpy(&bits, &got[static_cast<size_t>(r * ldy + c)], 4);
                  touched += bits != gap_bits;
                }
              }
              CHECK_MESSAGE(differ == 0, prec_name(prec) << " " << act_mode_name(mode) << " M=" << m << " ldy=" << ldy
                                             << " graphs=" << graphs << " form=" << static_cast<int>(f.form)
                                             << " ranges=" << f.ranges << " plan=" << static_cast<int>(f.plan)
                                             << " direct_kib=" << f.direct_kib << ": "
                                             << differ << " rows differ");
              CHECK_MESSAGE(touched == 0, "M=" << m << " ldy=" << ldy << ": " << touched << " gap floats written");
            }
          }
        }
      }
    }
  }
  REQUIRE(cuda->set_switch("cuda.set_use_graphs", 1).ok());  // the defaults
  REQUIRE(cuda->set_switch("cuda.set_chunked_output", static_cast<int64_t>(cuda::OutputForm::kColumnRanges)).ok());
  REQUIRE(cuda->set_switch("cuda.set_output_chunks", 0).ok());
  REQUIRE(cuda->set_switch("cuda.set_range_plan", 0).ok());
  REQUIRE(cuda->set_switch("cuda.set_direct_output_kib", cuda::kDefaultDirectOutputKib).ok());
  MESSAGE("output forms: " << calls << " calls compared with the reference");
}

TEST_CASE("cuda output and launch switches refuse values out of range, naming the switch") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  const Status form = cuda->set_switch("cuda.set_chunked_output", 3);
  CHECK(form.code() == TB_INVALID_ARGUMENT);
  CHECK(form.message().find("cuda.set_chunked_output") != std::string::npos);
  const Status ranges = cuda->set_switch("cuda.set_output_chunks", cuda::kMaxColumnRanges + 1);
  CHECK(ranges.code() == TB_INVALID_ARGUMENT);
  CHECK(ranges.message().find("cuda.set_output_chunks") != std::string::npos);
  CHECK(cuda->set_switch("cuda.set_output_chunks", -1).code() == TB_INVALID_ARGUMENT);
  CHECK(cuda->set_switch("cuda.set_range_plan", 3).code() == TB_INVALID_ARGUMENT);
  const Status direct = cuda->set_switch("cuda.set_direct_output_kib", (int64_t{1} << 20) + 1);
  CHECK(direct.code() == TB_INVALID_ARGUMENT);
  CHECK(direct.message().find("cuda.set_direct_output_kib") != std::string::npos);
  CHECK(cuda->set_switch("cuda.set_direct_output_kib", -1).code() == TB_INVALID_ARGUMENT);
  const Status dependent = cuda->set_switch("cuda.set_dependent_launch", 2);
  CHECK(dependent.code() == TB_INVALID_ARGUMENT);
  CHECK(dependent.message().find("cuda.set_dependent_launch") != std::string::npos);
}

TEST_CASE("gpu gemm decode M1, every decode kernel (strip blocks, slice blocks, automatic) x direct output or copy-back, q8 q4 x f32 i8, (N,K) {(2048,2048),(1024,2048),(6144,2048),(12288,2048),(2048,6144),(4096,2048),(11300,6144),(1000,96),(257,256),(151936,2048)}") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  const int64_t shapes[][2] = {{2048, 2048}, {1024, 2048}, {6144, 2048}, {12288, 2048}, {2048, 6144},
                               {4096, 2048}, {11300, 6144}, {1000, 96},  {257, 256},   {151936, 2048}};
  struct Variant {
    const char* name;
    cuda::DecodePath path;
    bool direct;
  };
  const Variant variants[] = {{"strip blocks + direct", cuda::DecodePath::kStripBlocks, true},
                              {"slice blocks + copy-back", cuda::DecodePath::kSliceBlocks, false},
                              {"slice blocks + direct", cuda::DecodePath::kSliceBlocks, true},
                              {"auto + copy-back", cuda::DecodePath::kAuto, false}};
  int64_t calls = 0;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (const auto& nk : shapes) {
      const int64_t n = nk[0], k = nk[1];
      HostStrips h = random_strips(prec, n, k, 77 + n + k + prec);
      auto bound = cuda->bind(strips_view(h));
      REQUIRE(bound.ok());
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        Activations a = make_activations(1, k, 5 + n + k);
        const auto want = reference(mode, 1, h.view, a);
        for (const Variant& v : variants) {
          REQUIRE(cuda->set_switch("cuda.set_decode_path", static_cast<int64_t>(v.path)).ok());
          REQUIRE(cuda->set_switch("cuda.set_direct_output", v.direct).ok());
          for (int pass = 0; pass < 2; ++pass) {  // capture, then replay
            std::vector<float> got(want.size(), std::nanf("0x7ab"));
            const Status st = cuda->gemm(*bound, gemm_args(mode, 1, h.view, a, got.data()));
            CHECK_MESSAGE(st.ok(), st.to_string());
            ++calls;
            CHECK_MESSAGE(bit_diff(want.data(), got.data(), n).first == 0,
                          std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                              << " N=" << n << " K=" << k << " " << v.name << " pass " << pass);
          }
        }
      }
    }
  }
  REQUIRE(cuda->set_switch("cuda.set_decode_path", 0).ok());  // the defaults
  REQUIRE(cuda->set_switch("cuda.set_direct_output", 1).ok());
  MESSAGE("decode kernel variants: " << calls << " calls compared with the reference");
}

TEST_CASE("gpu gemm 8 host threads x 12 calls on shared weights, M{1,3,8,33} mixed modes, N1000 K2048") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  HostStrips h = random_strips(TB_PREC_Q8, 1000, 2048, 77);
  auto bound = cuda->bind(strips_view(h));
  REQUIRE(bound.ok());
  struct Job {
    int64_t m;
    tb_act_mode mode;
    Activations a;
    std::vector<float> want;
    int64_t bad = 0;
    std::string error;
  };
  std::vector<Job> jobs;
  for (int t = 0; t < 8; ++t) {
    const int64_t ms[] = {1, 3, 8, 33};
    Job j;
    j.m = ms[t % 4];
    j.mode = t % 2 ? TB_ACT_I8 : TB_ACT_F32;
    j.a = make_activations(j.m, 2048, 100 + t);
    j.want = reference(j.mode, j.m, h.view, j.a);
    jobs.push_back(std::move(j));
  }
  std::vector<std::thread> threads;
  for (auto& j : jobs) {
    threads.emplace_back([&] {
      for (int it = 0; it < 12; ++it) {
        std::vector<float> y(j.want.size());
        const Status s = cuda->gemm(*bound, gemm_args(j.mode, j.m, h.view, j.a, y.data()));
        if (!s.ok()) j.error = s.to_string();
        if (bit_diff(j.want.data(), y.data(), static_cast<int64_t>(y.size())).first != 0) ++j.bad;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& j : jobs) {
    CHECK_MESSAGE(j.error.empty(), j.error);
    CHECK_MESSAGE(j.bad == 0, "M=" << j.m << " " << std::string(act_mode_name(j.mode)) << ": " << j.bad << "/12 calls differ");
  }
}

TEST_CASE("gpu bind reports the uploaded bytes; q4 stays packed (half the code bytes of q8), N1000 K2048") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  HostStrips h8 = random_strips(TB_PREC_Q8, 1000, 2048, 5), h4 = random_strips(TB_PREC_Q4, 1000, 2048, 6);
  auto b8 = cuda->bind(strips_view(h8));
  auto b4 = cuda->bind(strips_view(h4));
  REQUIRE(b8.ok());
  REQUIRE(b4.ok());
  cuda::BindReport r8, r4;
  REQUIRE(cuda::bind_report(cuda->raw(), b8->handle(), &r8).ok());
  REQUIRE(cuda::bind_report(cuda->raw(), b4->handle(), &r4).ok());
  CHECK(r8.bytes == 1024 * 2048 + 1024 * 64 * 2);
  CHECK(r4.bytes == 1024 * 2048 / 2 + 1024 * 64 * 2);
  MESSAGE("bind q8 " << r8.bytes << " B in " << r8.seconds * 1e3 << " ms; q4 " << r4.bytes
          << " B in " << r4.seconds * 1e3 << " ms");
}

TEST_CASE("gpu bind beyond device memory is RESOURCE_EXHAUSTED with sizes, not a crash") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  // A view that claims more bytes than any device holds; the codes pointer is never read because
  // the device allocation fails first.
  static const uint8_t byte = 0;
  static const uint16_t half = 0;
  tb_weights_view v{};
  v.kind = TB_WEIGHTS_STRIPS;
  v.strips.prec = TB_PREC_Q8;
  v.strips.n = int64_t{1} << 24;
  v.strips.k = int64_t{1} << 14;
  v.strips.np = v.strips.n;
  v.strips.kp = v.strips.k;
  v.strips.codes = &byte;
  v.strips.codes_bytes = strip_codes_bytes(TB_PREC_Q8, v.strips.n, v.strips.k);  // 256 GiB
  v.strips.scales = &half;
  v.strips.scales_bytes = strip_scales_bytes(v.strips.n, v.strips.k);
  v.strips.n_total = v.strips.n;
  auto bound = cuda->bind(v);
  REQUIRE_FALSE(bound.ok());
  CHECK(bound.status().code() == TB_RESOURCE_EXHAUSTED);
  CHECK(bound.status().message().find("bytes") != std::string::npos);
  MESSAGE(bound.status().to_string());
}

#endif

}  // TEST_SUITE
}  // namespace twinbit::cuda_test
