// Shared pieces of the host C API tests (tests/test_c_api_*.cpp): an artifact of random shapes -
// strip sets of both precisions with ragged N and K, and float-row matrices (two of one shape,
// for the pair) - written once per test process, and a check that a call failed as it should.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <twinbit/twinbit.h>

#include "artifacts/artifact.h"
#include "conformance/inputs.h"
#include "test_artifact_util.h"

namespace twinbit::test {

constexpr int kCApiStripEntries = 8;

// Strip entries "s0" .. "s7" (q8 for even, q4 for odd indices, N and K random in 1 .. 300),
// float rows "rows_a", "rows_b" (one shape) and "rows_c" (another).
inline const std::string& c_api_random_artifact() {
  static testart::TempDir dir;
  static const std::string path = [] {
    conformance::Rng rng(2026);
    std::mt19937_64 dims(11);
    std::uniform_int_distribution<int64_t> dim(1, 300);
    artifact::Writer w;
    for (int i = 0; i < kCApiStripEntries; ++i) {
      const tb_prec prec = i % 2 == 0 ? TB_PREC_Q8 : TB_PREC_Q4;
      // s0: the smallest shape; the last two have whole groups of K (what the CUDA gemm supports).
      const int64_t n = i == 0 ? 1 : dim(dims);
      const int64_t k = i == 0 ? 1 : i >= kCApiStripEntries - 2 ? 32 * (1 + dim(dims) % 9) : dim(dims);
      const conformance::OwnedStrips s = conformance::random_strips(rng, prec, n, k);
      std::string name = "s";
      name += std::to_string(i);
      const Status st = w.add_strips(name, prec, n, k, s.codes, s.scales);
      if (!st.ok()) throw std::runtime_error(st.to_string());
    }
    const int64_t rows = 77, cols = 45;
    for (const char* name : {"rows_a", "rows_b"}) {
      const std::vector<float> data = conformance::random_floats(rng, rows * cols);
      const Status st = w.add_matrix(name, rows, cols, data);
      if (!st.ok()) throw std::runtime_error(st.to_string());
    }
    const std::vector<float> data = conformance::random_floats(rng, 3 * 45);
    if (Status st = w.add_matrix("rows_c", 3, 45, data); !st.ok()) throw std::runtime_error(st.to_string());
    const std::string p = dir.path + "/c_api.tbc";
    if (Status st = w.write(p, {"c_api test", "twinbit tests"}); !st.ok()) throw std::runtime_error(st.to_string());
    return p;
  }();
  return path;
}

// `code` is `want` and this thread's last error contains `fragment`.
inline void check_failure(tb_code code, tb_code want, const std::string& fragment) {
  const std::string message = tb_last_error();
  CHECK_MESSAGE(code == want, "got " << tb_code_name(code) << " '" << message << "', want " << tb_code_name(want));
  CHECK_MESSAGE(message.find(fragment) != std::string::npos, "'" << message << "' lacks '" << fragment << "'");
}

}  // namespace twinbit::test
