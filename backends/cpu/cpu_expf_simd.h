// The xsimd twin of core/tb_expf.h's ScalarExpOps: tb_expf_generic<XsimdExpOps<I>> computes
// tb_expf lane by lane with the same IEEE operations in the same order, hence the same bits
// (checked over all 2^32 inputs per tag by tests/test_expf_simd.cpp, suite slow_expf_simd).
//
// min/max are written as compare + select with the scalar version's operand order (a < b ? a : b)
// so a NaN input is replaced by the bound exactly as the scalar code does; fma is fma_exact
// (never xsimd::fma, see cpu_isa.h).
#pragma once

#include "backends/cpu/cpu_simd.h"
#include "core/tb_expf.h"

namespace twinbit::cpu {

template <Isa Tag>
struct XsimdExpOps {
  using F = FBatch<Tag>;
  using I = IBatch<Tag>;
  static F splat(float v) { return F(v); }
  static F add(const F& a, const F& b) { return a + b; }
  static F sub(const F& a, const F& b) { return a - b; }
  static F mul(const F& a, const F& b) { return a * b; }
  static F fma(const F& a, const F& b, const F& c) { return fma_exact<Tag>(a, b, c); }
  static F min(const F& a, const F& b) { return xsimd::select(a < b, a, b); }
  static F max(const F& a, const F& b) { return xsimd::select(a > b, a, b); }
  static I to_int(const F& v) { return xsimd::to_int(v); }  // v integral and small: exact
  static I shr1(const I& v) { return v >> 1; }               // arithmetic shift on int32
  static I isub(const I& a, const I& b) { return a - b; }
  static F pow2(const I& e) { return xsimd::bitwise_cast<F>((e + I(127)) << 23); }
  // x == x is false exactly for NaN on every tag. (Not x != x: xsimd 8.1's avx/avx512 `!=` is
  // the ordered _CMP_NEQ_OQ, false for NaN, unlike sse2's cmpneqps.)
  static F keep_nan(const F& x, const F& y) { return xsimd::select(x == x, y, x); }
};

template <Isa Tag>
inline FBatch<Tag> tb_expf_simd(const FBatch<Tag>& x) {
  return tb_expf_generic<XsimdExpOps<Tag>>(x);
}

}  // namespace twinbit::cpu
