// The CUDA gemv_f32 / gemv_f32_pair / gdn_delta against the reference (memcmp), and the device
// tb_expf against the host tb_expf over all 2^32 inputs. GPU only (SKIPPED without a device).
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "core/tb_expf.h"
#include "tests/test_cuda_support.h"
#ifdef TWINBIT_HAS_CUDA_BACKEND
#include "backends/cuda/cuda_backend.h"
#endif

namespace twinbit::cuda_test {
namespace {

tb_weights_view matrix_view(const std::vector<float>& data, int64_t rows, int64_t cols) {
  tb_weights_view v{};
  v.kind = TB_WEIGHTS_F32;
  v.matrix.rows = rows;
  v.matrix.cols = cols;
  v.matrix.data = data.data();
  return v;
}

struct GdnCase {
  int64_t vh, kh, kd, vd;
};

// Two consecutive steps on the device and on the reference; state and output compared bitwise.
void gdn_case(Backend& cuda, const GdnCase& c, uint64_t seed) {
  const size_t n_state = static_cast<size_t>(c.vh * c.kd * c.vd);
  std::vector<float> s_ref = random_floats(n_state, seed, -1.0f, 1.0f), s_gpu = s_ref;
  for (int step = 0; step < 2; ++step) {
    const auto q = random_floats(static_cast<size_t>(c.kh * c.kd), seed + 10 * step + 1, -0.3f, 0.3f);
    const auto k = random_floats(static_cast<size_t>(c.kh * c.kd), seed + 10 * step + 2, -0.3f, 0.3f);
    const auto v = random_floats(static_cast<size_t>(c.vh * c.vd), seed + 10 * step + 3);
    const auto g = random_floats(static_cast<size_t>(c.vh), seed + 10 * step + 4, -3.0f, 0.5f);
    const auto beta = random_floats(static_cast<size_t>(c.vh), seed + 10 * step + 5, 0.0f, 1.0f);
    std::vector<float> o_ref(static_cast<size_t>(c.vh * c.vd)), o_gpu(o_ref.size(), -1.0f);
    tb_gdn_args a{c.vh, c.kh, c.kd, c.vd, s_ref.data(), q.data(), k.data(), v.data(), g.data(),
                  beta.data(), o_ref.data()};
    ref::gdn_delta(a);
    a.state = s_gpu.data();
    a.o = o_gpu.data();
    const Status st = cuda.gdn_delta(a);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    const auto [sd, sf] = bit_diff(s_ref.data(), s_gpu.data(), static_cast<int64_t>(n_state));
    const auto [od, of] = bit_diff(o_ref.data(), o_gpu.data(), static_cast<int64_t>(o_ref.size()));
    CHECK_MESSAGE(sd == 0, "vh=" << c.vh << " kh=" << c.kh << " kd=" << c.kd << " vd=" << c.vd
                  << " step " << step << ": state " << sd << "/" << n_state << " differ, first " << sf);
    CHECK_MESSAGE(od == 0, "vh=" << c.vh << " kh=" << c.kh << " kd=" << c.kd << " vd=" << c.vd
                  << " step " << step << ": o " << od << "/" << o_ref.size() << " differ, first " << of);
  }
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("gpu gemv_f32 and pair equal reference bits, rows{1,48,100} x cols{1,31,32,33,5120}") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  uint64_t seed = 500;
  for (int64_t rows : {1, 48, 100}) {
    for (int64_t cols : {1, 31, 32, 33, 5120}) {
      const auto wa = random_floats(static_cast<size_t>(rows * cols), ++seed);
      const auto wb = random_floats(static_cast<size_t>(rows * cols), ++seed);
      const auto x = random_floats(static_cast<size_t>(cols), ++seed);
      auto ba = cuda->bind(matrix_view(wa, rows, cols));
      auto bb = cuda->bind(matrix_view(wb, rows, cols));
      REQUIRE(ba.ok());
      REQUIRE(bb.ok());
      std::vector<float> ra(rows), rb(rows), ga(rows, -1.0f), pa(rows, -1.0f), pb(rows, -1.0f);
      ref::gemv_f32(matrix_view(wa, rows, cols).matrix, x.data(), ra.data());
      ref::gemv_f32(matrix_view(wb, rows, cols).matrix, x.data(), rb.data());
      REQUIRE(cuda->gemv_f32(*ba, x.data(), ga.data()).ok());
      REQUIRE(cuda->gemv_f32_pair(*ba, *bb, x.data(), pa.data(), pb.data()).ok());
      CHECK_MESSAGE(bit_diff(ra.data(), ga.data(), rows).first == 0, "single rows=" << rows << " cols=" << cols);
      CHECK_MESSAGE(bit_diff(ra.data(), pa.data(), rows).first == 0, "pair a rows=" << rows << " cols=" << cols);
      CHECK_MESSAGE(bit_diff(rb.data(), pb.data(), rows).first == 0, "pair b rows=" << rows << " cols=" << cols);
    }
  }
}

TEST_CASE("gpu read_floor reads a bound strip set (odd shapes, both precisions); refuses a float matrix and m < 1") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  REQUIRE(cuda->has_read_floor());
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 32}, {33, 96}, {4096, 2048}}) {
      const HostStrips h = random_strips(prec, n, k, 77 + n);
      auto bound = cuda->bind(strips_view(h));
      REQUIRE(bound.ok());
      CHECK_MESSAGE(cuda->read_floor(*bound, 1).ok(), "n=" << n << " k=" << k);
      CHECK(cuda->read_floor(*bound, 32).ok());
      CHECK(cuda->read_floor(*bound, 0).code() == TB_INVALID_ARGUMENT);
    }
  }
  const auto w = random_floats(64, 3);
  auto matrix = cuda->bind(matrix_view(w, 8, 8));
  REQUIRE(matrix.ok());
  CHECK(cuda->read_floor(*matrix, 1).code() == TB_INVALID_ARGUMENT);
}

TEST_CASE("gpu gdn_delta equals reference bits: register twin vh48 kh16 kd128 vd128, generic kd64 vd96, kd130 vd200, kd128 vd129") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  gdn_case(*cuda, {48, 16, 128, 128}, 900);  // kd == vd == 128: the register-resident twin
  gdn_case(*cuda, {4, 2, 64, 96}, 910);
  gdn_case(*cuda, {6, 3, 130, 200}, 920);
  gdn_case(*cuda, {2, 1, 128, 129}, 930);
#ifdef TWINBIT_HAS_CUDA_BACKEND
  REQUIRE(cuda->set_switch("cuda.set_gdn_variant", static_cast<int64_t>(cuda::GdnVariant::kGeneric)).ok());
  gdn_case(*cuda, {48, 16, 128, 128}, 900);  // the generic kernel on the twin's shape: same bits
  REQUIRE(cuda->set_switch("cuda.set_gdn_variant", static_cast<int64_t>(cuda::GdnVariant::kAuto)).ok());
#endif
}

#ifdef TWINBIT_HAS_CUDA_BACKEND
TEST_CASE("gpu weight-scale conversion equals fp16_to_float bitwise for all 65536 halves") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  std::vector<float> dev(65536);
  const Status s = cuda::scales_on_device(dev.data());
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  int64_t diffs = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = fp16_to_float(static_cast<uint16_t>(h));
    if (__builtin_bit_cast(uint32_t, want) != __builtin_bit_cast(uint32_t, dev[h])) {
      if (diffs++ < 5) {
        MESSAGE("half 0x" << std::hex << h << ": host 0x" << __builtin_bit_cast(uint32_t, want)
                          << " device 0x" << __builtin_bit_cast(uint32_t, dev[h]) << std::dec);
      }
    }
  }
  CHECK(diffs == 0);
}
#endif

#ifdef TWINBIT_HAS_CUDA_BACKEND
TEST_CASE("gpu tb_expf device bits equal host bits for all 2^32 inputs") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  constexpr uint64_t kChunk = uint64_t{1} << 28;
  std::vector<float> dev(kChunk);
  std::atomic<int64_t> diffs{0};
  std::atomic<int64_t> first{-1};
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += kChunk) {
    const Status s = cuda::expf_on_device(static_cast<uint32_t>(base), kChunk, dev.data());
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    parallel_rows(static_cast<int64_t>(kChunk), [&](int64_t i0, int64_t i1) {
      int64_t local = 0;
      for (int64_t i = i0; i < i1; ++i) {
        const uint32_t bits = static_cast<uint32_t>(base + static_cast<uint64_t>(i));
        const float h = tb_expf(__builtin_bit_cast(float, bits));
        if (__builtin_bit_cast(uint32_t, h) != __builtin_bit_cast(uint32_t, dev[static_cast<size_t>(i)])) {
          if (local++ == 0) {
            int64_t expect = -1;
            first.compare_exchange_strong(expect, static_cast<int64_t>(bits));
          }
        }
      }
      diffs += local;
    });
  }
  MESSAGE("tb_expf device vs host: " << diffs.load() << "/4294967296 inputs differ");
  CHECK_MESSAGE(diffs.load() == 0, "first differing input bits " << first.load());
}
#endif

}  // TEST_SUITE
}  // namespace twinbit::cuda_test
