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

#include "core/backend.h"
#include "core/numerics.h"
#include "core/reference.h"
#include "core/registry.h"

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

struct HostStrips {
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  tb_strips view{};
};

// Random fp16 scale bits: mostly normal halves of either sign around 2^-8 .. 2^4, some
// subnormal halves and zeros, so the exact half -> float conversion is exercised.
inline uint16_t random_half(std::mt19937_64& rng) {
  const uint32_t r = static_cast<uint32_t>(rng());
  const uint16_t sign = (r & 1) ? 0x8000 : 0;
  const uint16_t mant = (r >> 1) & 0x3ff;
  switch ((r >> 11) % 32) {
    case 0: return sign;                         // +-0
    case 1: return static_cast<uint16_t>(sign | mant);  // subnormal
    default: return static_cast<uint16_t>(sign | ((7 + (r >> 16) % 12) << 10) | mant);
  }
}

// A strip set of random codes and scales, generated directly in the canonical layout
// (core/backend.h): padding columns and k hold code 0 (q4: nibble 8) and scale 0.
inline HostStrips random_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostStrips h;
  const int64_t np = pad32(n), kp = pad32(k), ng = kp / 32;
  h.codes.assign(static_cast<size_t>(prec == TB_PREC_Q8 ? np * kp : np * kp / 2), 0);
  h.scales.assign(static_cast<size_t>(np * ng), 0);
  for (int64_t s = 0; s < np / 32; ++s) {
    for (int64_t g = 0; g < ng; ++g) {
      const int64_t tile = s * ng + g;
      for (int64_t c = 0; c < 32; ++c) {
        const int64_t col = s * 32 + c;
        if (col < n) h.scales[tile * 32 + c] = random_half(rng);
        for (int64_t kk = 0; kk < 32; ++kk) {
          const bool valid = col < n && g * 32 + kk < k;
          if (prec == TB_PREC_Q8) {
            const int v = valid ? static_cast<int>(rng() % 255) - 127 : 0;
            h.codes[tile * 1024 + c * 32 + kk] = static_cast<uint8_t>(static_cast<int8_t>(v));
          } else {
            const uint8_t nib = valid ? static_cast<uint8_t>(rng() % 16) : 8;
            uint8_t& byte = h.codes[tile * 512 + c * 16 + kk % 16];
            byte = kk < 16 ? static_cast<uint8_t>((byte & 0xf0) | nib)
                           : static_cast<uint8_t>((byte & 0x0f) | (nib << 4));
          }
        }
      }
    }
  }
  h.view.prec = prec;
  h.view.n = n;
  h.view.k = k;
  h.view.np = np;
  h.view.kp = kp;
  h.view.codes = h.codes.data();
  h.view.codes_bytes = h.codes.size();
  h.view.scales = h.scales.data();
  h.view.scales_bytes = h.scales.size() * 2;
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
