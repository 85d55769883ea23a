// The shape-only parts of the numerics contract (docs/NUMERICS.md), shared verbatim by host,
// SIMD and device code: the split plan, padded sizes, and the exact fp16 -> float conversion.
//
// Everything here is a pure function of its arguments, with no dependence on thread counts,
// SIMD width or launch geometry. That is what makes every backend's bits the same.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TB_HD __host__ __device__ __forceinline__
#else
#define TB_HD inline
#endif

namespace twinbit {

constexpr int kGroup = 32;  // weights per scale, along k

TB_HD constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
TB_HD constexpr int64_t pad32(int64_t v) { return ceil_div(v, 32) * 32; }
TB_HD constexpr int64_t ngroups_of(int64_t k) { return ceil_div(k, 32); }

// Fewest groups a slice holds (contract v1; the draft rule let slices shrink to one group).
constexpr int64_t kMinSliceGroups = 4;

// nsplit = split_plan(N, K): how many contiguous slices the group axis of every output column is
// cut into (NUMERICS.md "Split plan"):
//   B = ceil(Np / 1024);  cap = ngroups / 4;  nsplit = (B < 512 && cap > 1) ? min(cap, ceil(512 / B)) : 1
// It depends on (N, K) only - never on M - so decode and prefill give the same bits. Retuned once
// from the draft (cap = ngroups) on H200 measurements: one-group slices made every small
// projection fold 64-192 partials per column (docs/results/cuda-2026-11-29-round3.md).
TB_HD constexpr int64_t split_plan(int64_t n, int64_t k) {
  const int64_t cap = ngroups_of(k) / kMinSliceGroups;
  const int64_t b = ceil_div(pad32(n), 1024);
  if (b < 512 && cap > 1) {
    const int64_t want = ceil_div(512, b);
    return want < cap ? want : cap;
  }
  return 1;
}

// The fold plan of a strip view (tb_strips, or a backend's copy of one with the same fields): the
// plan of the PROJECTION the view belongs to, split_plan(n_total, K), never of the view's own n,
// so that any range of columns gives the bits of those columns of the whole (NUMERICS.md
// "Column ranges"). The reference and every backend take their plan from here.
template <class Strips>
TB_HD constexpr int64_t fold_plan(const Strips& w) {
  return split_plan(w.n_total, w.k);
}

// Slice z of nsplit owns groups [slice_begin, slice_end): the remainder goes to the first slices.
TB_HD constexpr int64_t slice_begin(int64_t ngroups, int64_t nsplit, int64_t z) {
  const int64_t base = ngroups / nsplit, rem = ngroups % nsplit;
  return z * base + (z < rem ? z : rem);
}
TB_HD constexpr int64_t slice_end(int64_t ngroups, int64_t nsplit, int64_t z) {
  const int64_t base = ngroups / nsplit, rem = ngroups % nsplit;
  return slice_begin(ngroups, nsplit, z) + base + (z < rem ? 1 : 0);
}

// Exact conversion of IEEE binary16 bits to float (every half is representable as a float):
// subnormal halves become normal floats, inf and NaN are kept (NaN payload shifted up).
TB_HD constexpr float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    int e = -1;
    do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return __builtin_bit_cast(float, bits);
}

}  // namespace twinbit
