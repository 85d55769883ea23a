// Shared helpers of the CUDA tests (tests/test_cuda*.cpp): random strips in the canonical layout,
// the reference run in parallel over rows, and the "no device" early return.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "conformance/inputs.h"
#include <twinbit/backend.h>
#include "core/numerics.h"
#include "core/reference.h"
#include "core/registry.h"
#include "core/strip_layout.h"

namespace twinbit::cuda_test {

// The CUDA backend, or nullopt with a visible MESSAGE when this machine has none (no device, no
// driver, or a build without CUDA): the test then returns early and the gpu ctest entry reports
// SKIPPED before running it at all.
inline std::optional<Backend> cuda_or_skip() {
  auto b = create_backend("cuda");
  if (!b.ok()) {
    MESSAGE("SKIPPED (no CUDA backend here): " << b.status().to_string());
    return std::nullopt;
  }
  return std::move(b).value();
}

// A strip set of random codes and scales, made by the conformance suite's strip builder (the one
// every test builds strips with, conformance/inputs.h): codes over the whole range, scales of
// both signs with subnormal halves and zeros, padding as the format requires.
struct HostStrips {
  conformance::OwnedStrips owned;
  tb_strips view{};
};

inline HostStrips random_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  conformance::Rng rng(seed);
  HostStrips h;
  h.owned = conformance::random_strips(rng, prec, n, k);
  h.view = h.owned.view();
  return h;
}

// Activations: uniform in [-2, 2) with some exact zeros, negative zeros and tiny values.
inline std::vector<float> random_floats(size_t count, uint64_t seed, float lo = -2.0f,
                                        float hi = 2.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(count);
  for (auto& f : v) {
    const uint64_t r = rng() % 64;
    f = r == 0 ? 0.0f : r == 1 ? -0.0f : r == 2 ? u(rng) * 1e-30f : u(rng);
  }
  return v;
}

// Runs body(row_begin, row_end) over [0, rows) on all host threads.
template <class F>
void parallel_rows(int64_t rows, F body) {
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(rows, std::thread::hardware_concurrency()));
  std::vector<std::thread> ts;
  for (int64_t t = 0; t < nt; ++t) {
    ts.emplace_back([&, t] { body(rows * t / nt, rows * (t + 1) / nt); });
  }
  for (auto& th : ts) th.join();
}

// Number of differing floats (bitwise) and the first differing index (-1 if none).
inline std::pair<int64_t, int64_t> bit_diff(const float* a, const float* b, int64_t count) {
  int64_t diffs = 0, first = -1;
  for (int64_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i, b + i, 4) != 0) {
      if (first < 0) first = i;
      ++diffs;
    }
  }
  return {diffs, first};
}

// ---- the gemm tests' pieces (tests/test_cuda_gemm*.cpp) ----

inline tb_weights_view strips_view(const HostStrips& h) {
  tb_weights_view v{};
  v.kind = TB_WEIGHTS_STRIPS;
  v.strips = h.view;
  return v;
}

struct Activations {
  std::vector<float> x;     // (m, k)
  std::vector<int8_t> xq;   // (m, kp)
  std::vector<float> xd;    // (m, kp/32)
};

inline Activations make_activations(int64_t m, int64_t k, uint64_t seed) {
  Activations a;
  a.x = random_floats(static_cast<size_t>(m * k), seed);
  const int64_t kp = pad32(k);
  a.xq.resize(static_cast<size_t>(m * kp));
  a.xd.resize(static_cast<size_t>(m * kp / 32));
  ref::quantize_activations(m, k, a.x.data(), k, a.xq.data(), kp, a.xd.data(), kp / 32);
  return a;
}

inline tb_gemm_args gemm_args(tb_act_mode mode, int64_t m, const tb_strips& w, Activations& a,
                       float* y) {
  tb_gemm_args g{};
  g.mode = mode;
  g.m = m;
  g.x = a.x.data();
  g.ldx = w.k;
  g.xq = a.xq.data();
  g.ldxq = w.kp;
  g.xd = a.xd.data();
  g.ldxd = w.kp / 32;
  g.y = y;
  g.ldy = w.n;
  return g;
}

inline std::vector<float> reference(tb_act_mode mode, int64_t m, const tb_strips& w, const Activations& a) {
  std::vector<float> y(static_cast<size_t>(m * w.n));
  parallel_rows(m, [&](int64_t r0, int64_t r1) {
    if (r1 <= r0) return;
    if (mode == TB_ACT_F32) {
      ref::gemm_f32(w, r1 - r0, a.x.data() + r0 * w.k, w.k, y.data() + r0 * w.n, w.n);
    } else {
      ref::gemm_i8(w, r1 - r0, a.xq.data() + r0 * w.kp, w.kp, a.xd.data() + r0 * (w.kp / 32),
                   w.kp / 32, y.data() + r0 * w.n, w.n);
    }
  });
  return y;
}

}  // namespace twinbit::cuda_test
