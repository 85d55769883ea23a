// The quantize_i8 operation (twinbit/backend.h): the cpu backend's threaded SIMD entry for every
// instruction-set tag this CPU runs, and Backend::quantize_i8's reference fallback for a backend
// without the entry, equal in bits to ref::quantize_activations (codes and scales); argument
// checks name what is wrong.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/reference.h"
#include "conformance/conformance.h"
#include "core/registry.h"
#include "tests/test_cpu_util.h"
#include "tests/test_quantize_rows.h"

namespace twinbit::test {
namespace {

// Every shape on `b`, compared with the reference; returns the number of shapes.
int64_t compare_with_reference(const Backend& b) {
  int64_t cases = 0;
  for (int64_t m : {1, 4, 37}) {
    for (int64_t k : {1, 31, 32, 33, 96, 1000, 2049}) {
      const int64_t kp = pad32(k), ng = kp / 32, ldx = k + 5, ldxq = kp + 32, ldxd = ng + 3;
      const std::vector<float> x = testing::quantize_rows(m, k, ldx, 17 * m + k);
      std::vector<int8_t> want_q(static_cast<size_t>(m * ldxq), 0x55), got_q = want_q;
      std::vector<float> want_d(static_cast<size_t>(m * ldxd), -2.0f), got_d = want_d;
      ref::quantize_activations(m, k, x.data(), ldx, want_q.data(), ldxq, want_d.data(), ldxd);
      const tb_quantize_args a{m, k, x.data(), ldx, got_q.data(), ldxq, got_d.data(), ldxd};
      const Status st = b.quantize_i8(a);
      REQUIRE_MESSAGE(st.ok(), st.to_string());
      CHECK_MESSAGE(std::memcmp(got_q.data(), want_q.data(), got_q.size()) == 0,
                    b.name() << " codes M=" << m << " K=" << k);
      CHECK_MESSAGE(std::memcmp(got_d.data(), want_d.data(), got_d.size() * 4) == 0,
                    b.name() << " scales M=" << m << " K=" << k);
      ++cases;
    }
  }
  return cases;
}

TEST_CASE("quantize_i8 on the cpu backend, every runnable ISA: reference bits, codes and scales") {
  for (cpu::Isa isa : cpu::runnable_isas()) {
    auto b = cpu_backend_for(isa);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    CHECK(b->has_quantize_i8());
    CHECK(has_feature_tag(b->features(), "quantize_i8"));
    INFO("isa " << cpu::isa_name(isa));
    CHECK(compare_with_reference(b.value()) == 21);
  }
}

TEST_CASE("quantize_i8 without the entry (the null backend): Backend falls back to the reference") {
  auto b = create_backend("null");
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  CHECK_FALSE(b->has_quantize_i8());
  CHECK(compare_with_reference(b.value()) == 21);
}

TEST_CASE("quantize_i8 argument checks: INVALID_ARGUMENT naming M, K, the null pointer or the leading dims") {
  auto b = create_cpu_backend();
  REQUIRE(b.ok());
  std::vector<float> x(64, 1.0f), xd(2);
  std::vector<int8_t> xq(64);
  const tb_quantize_args ok{1, 40, x.data(), 40, xq.data(), 64, xd.data(), 2};
  REQUIRE(b->quantize_i8(ok).ok());
  auto code_of = [&](tb_quantize_args a, const char* needle) {
    const Status st = b->quantize_i8(a);
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find(needle) != std::string::npos, st.message());
  };
  tb_quantize_args a = ok;
  a.m = 0;
  code_of(a, "M = 0");
  a = ok;
  a.k = 0;
  code_of(a, "K = 0");
  a = ok;
  a.xq = nullptr;
  code_of(a, "null");
  a = ok;
  a.ldxq = 40;
  code_of(a, "ldxq = 40");
  a = ok;
  a.ldx = 39;
  code_of(a, "ldx = 39");
}

}  // namespace
}  // namespace twinbit::test
