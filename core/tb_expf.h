// tb_expf: the contract's exp (NUMERICS.md "tb_expf"), one source for host, SIMD and device.
//
// The algorithm is written once, in tb_expf_generic<Ops>, over an "ops" type that names the few
// operations it uses (fma, mul, add, compare/select, int<->float, exponent build). ScalarExpOps
// below serves host and device; the CPU backend supplies an xsimd batch twin of it. Because every
// instantiation performs the same IEEE operations in the same order, all give the same bits; the
// test suite checks that over all 2^32 inputs.
//
//   x = k*ln2 + r, k = nearest integer to x*log2(e), |r| <= ~ln2/2   (round by the 1.5*2^23 shift)
//   exp(r) ~= 1 + (r + r^2 * q(r)), q of degree 5 (least-squares fit on Chebyshev nodes)
//   exp(x) = (exp(r) * 2^(k>>1)) * 2^(k - (k>>1))
// The two-step scale keeps each factor a normal power of two, so overflow gives +inf and results
// in the subnormal range are rounded once, by the last multiply. Inputs are clamped to
// [-104, 89] first (beyond either end the answer is +0 or +inf anyway), so k fits easily.
// Special values: NaN -> NaN, +inf -> +inf, -inf -> +0. Accuracy: <= 1 ulp of the correctly
// rounded exp on the finite range (measured exhaustively by tests/test_expf_exhaustive.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/numerics.h"

namespace twinbit {

namespace expf_constants {
constexpr float kLog2e = 1.44269502162933349609375f;       // float(log2(e))
constexpr float kShift = 12582912.0f;                      // 1.5 * 2^23: add+sub rounds to int
constexpr float kLn2Hi = 0.693145751953125f;               // 0x3f317200: k*kLn2Hi exact, |k|<=256
constexpr float kLn2Lo = 1.428606765330187045e-06f;        // ln2 - kLn2Hi, rounded
constexpr float kMaxIn = 89.0f;                            // exp(89) overflows float
constexpr float kMinIn = -104.0f;                          // exp(-104) rounds to +0
// q(r) = c0 + c1 r + ... + c5 r^5
constexpr float kC0 = 0.5f;
constexpr float kC1 = 0.1666666567325592041015625f;
constexpr float kC2 = 0.041666265577077865600585938f;
constexpr float kC3 = 0.0083334315568208694458007812f;
constexpr float kC4 = 0.0013946349499747157096862793f;
constexpr float kC5 = 0.00019826392235700041055679321f;
}  // namespace expf_constants

template <class Ops>
TB_HD typename Ops::F tb_expf_generic(typename Ops::F x) {
  using F = typename Ops::F;
  using I = typename Ops::I;
  namespace c = expf_constants;
  const F xc = Ops::min(Ops::max(x, Ops::splat(c::kMinIn)), Ops::splat(c::kMaxIn));
  const F t = Ops::add(Ops::mul(xc, Ops::splat(c::kLog2e)), Ops::splat(c::kShift));
  const F kf = Ops::sub(t, Ops::splat(c::kShift));                 // integral
  F r = Ops::fma(kf, Ops::splat(-c::kLn2Hi), xc);
  r = Ops::fma(kf, Ops::splat(-c::kLn2Lo), r);
  F q = Ops::splat(c::kC5);
  q = Ops::fma(q, r, Ops::splat(c::kC4));
  q = Ops::fma(q, r, Ops::splat(c::kC3));
  q = Ops::fma(q, r, Ops::splat(c::kC2));
  q = Ops::fma(q, r, Ops::splat(c::kC1));
  q = Ops::fma(q, r, Ops::splat(c::kC0));
  const F r2 = Ops::mul(r, r);
  const F p = Ops::add(Ops::splat(1.0f), Ops::fma(r2, q, r));
  const I k = Ops::to_int(kf);
  const I k1 = Ops::shr1(k);
  const I k2 = Ops::isub(k, k1);
  const F y = Ops::mul(Ops::mul(p, Ops::pow2(k1)), Ops::pow2(k2));
  return Ops::keep_nan(x, y);  // NaN in -> the same NaN out (the clamp replaced it by a bound)
}

// Scalar ops: host (std::fma, a true IEEE fma) and device (__fmaf_rn).
struct ScalarExpOps {
  using F = float;
  using I = int32_t;
  TB_HD static F splat(float v) { return v; }
  TB_HD static F add(F a, F b) { return a + b; }
  TB_HD static F sub(F a, F b) { return a - b; }
  TB_HD static F mul(F a, F b) { return a * b; }
  TB_HD static F fma(F a, F b, F c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
  }
  // As x86 minps/maxps: when a is NaN the bound b is returned, so a NaN never reaches to_int.
  TB_HD static F min(F a, F b) { return a < b ? a : b; }
  TB_HD static F max(F a, F b) { return a > b ? a : b; }
  TB_HD static I to_int(F v) { return static_cast<I>(v); }  // v is integral and small
  TB_HD static I shr1(I v) { return v >> 1; }               // arithmetic: floor(v / 2)
  TB_HD static I isub(I a, I b) { return a - b; }
  TB_HD static F pow2(I e) {  // 2^e for e in [-126, 127]
    return __builtin_bit_cast(float, static_cast<uint32_t>(e + 127) << 23);
  }
  TB_HD static F keep_nan(F x, F y) { return x != x ? x : y; }
};

TB_HD float tb_expf(float x) { return tb_expf_generic<ScalarExpOps>(x); }

}  // namespace twinbit
