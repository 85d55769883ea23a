// The CUDA I8 activation quantiser (backends/cuda/quantize_kernels.h) against the reference,
// codes and scales by memcmp, over rows that reach every branch of the contract (subnormal d
// and the clamp, d == 0, NaN, infinities, ragged K, leading dimensions wider than the rows).
// GPU only (SKIPPED without a device).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/reference.h"
#include "tests/test_cuda_support.h"
#include "tests/test_quantize_rows.h"

namespace twinbit::cuda_test {
namespace {

TEST_SUITE("gpu") {

TEST_CASE("gpu quantize_i8 equals reference bits: M{1,5,64} x K{1,31,32,33,96,2048,2049}, wide leading dims") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  REQUIRE(cuda->has_quantize_i8());
  int64_t cases = 0;
  for (int64_t m : {1, 5, 64}) {
    for (int64_t k : {1, 31, 32, 33, 96, 2048, 2049}) {
      const int64_t kp = pad32(k), ng = kp / 32, ldx = k + 3, ldxq = kp + 32, ldxd = ng + 1;
      const std::vector<float> x = testing::quantize_rows(m, k, ldx, 1000 + m * 7 + k);
      std::vector<int8_t> want_q(static_cast<size_t>(m * ldxq), 0x55), got_q = want_q;
      std::vector<float> want_d(static_cast<size_t>(m * ldxd), -2.0f), got_d = want_d;
      ref::quantize_activations(m, k, x.data(), ldx, want_q.data(), ldxq, want_d.data(), ldxd);
      const tb_quantize_args a{m, k, x.data(), ldx, got_q.data(), ldxq, got_d.data(), ldxd};
      const Status st = cuda->quantize_i8(a);
      REQUIRE_MESSAGE(st.ok(), st.to_string());
      CHECK_MESSAGE(std::memcmp(got_q.data(), want_q.data(), got_q.size()) == 0, "codes M=" << m << " K=" << k);
      CHECK_MESSAGE(std::memcmp(got_d.data(), want_d.data(), got_d.size() * 4) == 0, "scales M=" << m << " K=" << k);
      ++cases;
    }
  }
  MESSAGE("quantize_i8: " << cases << " shapes compared with the reference");
}

TEST_CASE("gpu switches through get_proc: known names set, out-of-range values and unknown names refused") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  CHECK(cuda->set_switch("cuda.set_use_graphs", 1).ok());
  CHECK(cuda->set_switch("cuda.set_decode_path", 0).ok());
  CHECK(cuda->set_switch("cuda.set_direct_output", 1).ok());
  CHECK(cuda->set_switch("cuda.set_gdn_variant", 0).ok());
  const Status bad = cuda->set_switch("cuda.set_decode_path", 3);
  CHECK(bad.code() == TB_INVALID_ARGUMENT);
  CHECK(bad.message().find("cuda.set_decode_path") != std::string::npos);
  CHECK(cuda->set_switch("cuda.nothing", 1).code() == TB_UNIMPLEMENTED);
}

}  // TEST_SUITE

}  // namespace
}  // namespace twinbit::cuda_test
