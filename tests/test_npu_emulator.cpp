// The device seam's emulator (backends/npu_layout/npu_emulator.cpp) against a naive int32 loop
// over normal-layout matrices, and every limit of the device it enforces with its own status.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "backends/npu_layout/npu_device.h"
#include "backends/npu_layout/npu_layout.h"

namespace twinbit::npu {
namespace {

struct Made {
  Matmul* ctx = nullptr;
  ~Made() { matmul_destroy(ctx); }
};

MatmulDesc desc(int64_t k, int64_t n, int64_t max_m = 64, int core = 0) {
  MatmulDesc d;
  d.k = k;
  d.n = n;
  d.max_m = max_m;
  d.core = core;
  return d;
}

// C = A x B through the seam (A [M][K], B [K][N] row-major, packed to native here) against the
// naive loop; int8 extremes (-128, 127) included.
void check_against_naive(int64_t M, int64_t K, int64_t N, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int8_t> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
  for (auto* v : {&a, &b}) {
    for (auto& x : *v) {
      const unsigned r = static_cast<unsigned>(rng() % 16);
      x = r == 0 ? int8_t{-128} : r == 1 ? int8_t{127} : static_cast<int8_t>(rng());
    }
  }
  std::vector<int8_t> an(static_cast<size_t>(a_bytes(M, K)), 0), bn(static_cast<size_t>(b_bytes(K, N)), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) an[a_offset(M, m, k)] = a[m * K + k];
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) bn[b_offset(K, N, k, n)] = b[k * N + n];
  Made mm;
  REQUIRE(matmul_create(desc(K, N, M, 1), &mm.ctx) == DevStatus::ok);
  REQUIRE(matmul_bind_b(mm.ctx, bn.data(), bn.size()) == DevStatus::ok);
  REQUIRE(matmul_set_a(mm.ctx, M, an.data(), an.size()) == DevStatus::ok);
  const uint64_t runs = runs_so_far();
  REQUIRE(matmul_run(mm.ctx) == DevStatus::ok);
  CHECK(runs_so_far() >= runs + 1);
  std::vector<int32_t> c(static_cast<size_t>(c_elems(M, N)));
  REQUIRE(matmul_read_c(mm.ctx, c.data(), c.size()) == DevStatus::ok);
  int64_t wrong = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      int32_t want = 0;
      for (int64_t k = 0; k < K; ++k) want += int32_t{a[m * K + k]} * int32_t{b[k * N + n]};
      wrong += c[c_offset(M, m, n)] != want;
    }
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("npu emulator: int8 x int8 -> int32 in native layouts equals a naive int32 loop") {
  SUBCASE("M 1, K 32, N 32") { check_against_naive(1, 32, 32, 1); }
  SUBCASE("M 3, K 8224 (two B segments), N 64") { check_against_naive(3, 8224, 64, 2); }
  SUBCASE("M 33, K 96, N 4096 (the int8 N limit)") { check_against_naive(33, 96, 4096, 3); }
  SUBCASE("M 5, K 11008 (segments of 8192 and 2816), N 32") { check_against_naive(5, 11008, 32, 4); }
  SUBCASE("M 64 (the context's max_m), K 64, N 96") { check_against_naive(64, 64, 96, 5); }
}

TEST_CASE("npu emulator enforces the device's limits with its own status codes") {
  Made mm;
  CHECK(matmul_create(desc(48, 32), &mm.ctx) == DevStatus::k_not_aligned);
  CHECK(mm.ctx == nullptr);
  CHECK(matmul_create(desc(0, 32), &mm.ctx) == DevStatus::k_not_aligned);
  CHECK(matmul_create(desc(32, 48), &mm.ctx) == DevStatus::n_not_aligned);
  CHECK(matmul_create(desc(32, 0), &mm.ctx) == DevStatus::n_not_aligned);
  CHECK(matmul_create(desc(32, 4128), &mm.ctx) == DevStatus::n_too_large);
  CHECK(matmul_create(desc(32, 4096, 0), &mm.ctx) == DevStatus::m_out_of_range);
  CHECK(matmul_create(desc(32, 32, 1, 3), &mm.ctx) == DevStatus::bad_core);
  CHECK(matmul_create(desc(32, 32, 1, -1), &mm.ctx) == DevStatus::bad_core);
  MatmulDesc bad_type = desc(32, 32);
  bad_type.type = static_cast<MatmulType>(9);  // INT8_MM_INT8_TO_FLOAT32: not offered
  CHECK(matmul_create(bad_type, &mm.ctx) == DevStatus::bad_type);
  CHECK(matmul_create(desc(32, 32), nullptr) == DevStatus::null_argument);

  // K > 8192 is fine (B in segments); M = 1 is fine.
  REQUIRE(matmul_create(desc(8224, 64, 4, 2), &mm.ctx) == DevStatus::ok);
  std::vector<int8_t> b(static_cast<size_t>(b_bytes(8224, 64)), 1), a(static_cast<size_t>(a_bytes(4, 8224)), 1);
  std::vector<int32_t> c(static_cast<size_t>(c_elems(1, 64)));
  CHECK(matmul_run(mm.ctx) == DevStatus::b_not_bound);
  CHECK(matmul_bind_b(mm.ctx, b.data(), b.size() - 1) == DevStatus::buffer_size);
  CHECK(matmul_bind_b(mm.ctx, nullptr, b.size()) == DevStatus::null_argument);
  REQUIRE(matmul_bind_b(mm.ctx, b.data(), b.size()) == DevStatus::ok);
  CHECK(matmul_run(mm.ctx) == DevStatus::a_not_set);
  CHECK(matmul_read_c(mm.ctx, c.data(), c.size()) == DevStatus::c_not_ready);
  CHECK(matmul_set_a(mm.ctx, 0, a.data(), 0) == DevStatus::m_out_of_range);
  CHECK(matmul_set_a(mm.ctx, 5, a.data(), static_cast<uint64_t>(a_bytes(5, 8224))) == DevStatus::m_out_of_range);
  CHECK(matmul_set_a(mm.ctx, 1, a.data(), static_cast<uint64_t>(a_bytes(2, 8224))) == DevStatus::buffer_size);
  REQUIRE(matmul_set_a(mm.ctx, 1, a.data(), static_cast<uint64_t>(a_bytes(1, 8224))) == DevStatus::ok);
  REQUIRE(matmul_run(mm.ctx) == DevStatus::ok);
  CHECK(matmul_read_c(mm.ctx, c.data(), c.size() + 4) == DevStatus::buffer_size);
  REQUIRE(matmul_read_c(mm.ctx, c.data(), c.size()) == DevStatus::ok);
  CHECK(c[0] == 8224);
  // A new A (another M) invalidates C until the next run.
  REQUIRE(matmul_set_a(mm.ctx, 4, a.data(), a.size()) == DevStatus::ok);
  CHECK(matmul_read_c(mm.ctx, c.data(), c.size()) == DevStatus::c_not_ready);
  CHECK(std::string(dev_status_name(DevStatus::n_too_large)).find("4096") != std::string::npos);
}

}  // namespace twinbit::npu
