// Per-tag building blocks shared by the kernels: the xsimd arch of each tag, the exact fma, and
// the few conversions xsimd 8.1 has no width-agnostic name for (int8 -> float, binary16 ->
// float). Everything else in the kernels is plain xsimd over `Arch<I>`.
//
// Every helper here is exact: int8 -> int32 -> float is exact (|code| < 2^24), binary16 -> float
// is exact for every half (vcvtph2ps does not apply DAZ, and the backend refuses to run with
// FTZ/DAZ set anyway), and fma_exact rounds once (see cpu_isa.h for the sse2 case).
//
// Each architecture's intrinsics are compiled on that architecture only: the x86-64 tags' below,
// the aarch64 tags' (NEON: FMLA, SXTL, FCVTL) in the `if constexpr` branches under __aarch64__.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "backends/cpu/cpu_isa.h"
#include "core/numerics.h"

namespace twinbit::cpu {

#if defined(__x86_64__)
// The avx512vnni tag's xsimd arch: avx512bw's registers and kernels under a distinct type, so
// the xsimd functions instantiated in the VNNI/VBMI translation unit are distinct symbols from
// the plain avx512bw ones (a shared inline instantiation compiled with VBMI flags could
// otherwise be picked by the linker for the avx512bw path and fault on a CPU without VBMI).
struct xsimd_avx512_vnni_vbmi : xsimd::avx512bw {
  static constexpr bool supported() noexcept { return XSIMD_WITH_AVX512BW; }
  static constexpr bool available() noexcept { return true; }
  static constexpr char const* name() noexcept { return "avx512_vnni_vbmi"; }
};

template <Isa I> struct IsaTraits;
template <> struct IsaTraits<Isa::kSse2> { using arch = xsimd::sse2; };
template <> struct IsaTraits<Isa::kFma3Avx2> { using arch = xsimd::fma3<xsimd::avx2>; };
template <> struct IsaTraits<Isa::kAvx512bw> { using arch = xsimd::avx512bw; };
template <> struct IsaTraits<Isa::kAvx512vnni> { using arch = xsimd_avx512_vnni_vbmi; };
#elif defined(__aarch64__)
// Both neon tags compile with the same flags (cpu_isa.h), so they can share xsimd's arch type.
template <Isa I> struct IsaTraits { using arch = xsimd::neon64; };
#endif

template <Isa I> using Arch = typename IsaTraits<I>::arch;
template <Isa I> using FBatch = xsimd::batch<float, Arch<I>>;
template <Isa I> using IBatch = xsimd::batch<int32_t, Arch<I>>;
template <Isa I> constexpr int kLanes = static_cast<int>(FBatch<I>::size);

template <Isa I> constexpr bool kIs512 = I == Isa::kAvx512bw || I == Isa::kAvx512vnni;
template <Isa I> constexpr bool kIsNeon = I == Isa::kNeon || I == Isa::kNeonDotprod;
template <Isa I> constexpr bool kHasFmaHw = kIs512<I> || I == Isa::kFma3Avx2 || kIsNeon<I>;

// fma(a, b, c) with one rounding on every tag (never xsimd::fma: see cpu_isa.h).
template <Isa I>
inline FBatch<I> fma_exact(const FBatch<I>& a, const FBatch<I>& b, const FBatch<I>& c) {
#if defined(__aarch64__)
  return vfmaq_f32(c, a, b);  // FMLA: c + a * b, one rounding
#else
  if constexpr (kIs512<I>) {
    return _mm512_fmadd_ps(a, b, c);
  } else if constexpr (I == Isa::kFma3Avx2) {
    return _mm256_fmadd_ps(a, b, c);
  } else {
    // No FMA unit: the correctly rounded software fma of the C library, lane by lane.
    alignas(64) float fa[kLanes<I>], fb[kLanes<I>], fc[kLanes<I>];
    a.store_aligned(fa);
    b.store_aligned(fb);
    c.store_aligned(fc);
    for (int l = 0; l < kLanes<I>; ++l) fa[l] = std::fma(fa[l], fb[l], fc[l]);
    return FBatch<I>::load_aligned(fa);
  }
#endif
}

// a / b, the IEEE division (correctly rounded) on every tag. NOTE: xsimd 8.1's float `/` on neon64
// falls back to its 32-bit neon kernel - a reciprocal estimate and two Newton steps, not a
// division - so the kernels never divide batches with `/`; aarch64 has FDIV (vdivq_f32).
template <Isa I>
inline FBatch<I> div_exact(const FBatch<I>& a, const FBatch<I>& b) {
#if defined(__aarch64__)
  return vdivq_f32(a, b);
#else
  return a / b;  // divps on every x86 tag
#endif
}

// kLanes<I> consecutive int8 codes, sign-extended and converted to float (exact).
template <Isa I>
inline FBatch<I> load_i8_as_f32(const int8_t* p) {
#if defined(__aarch64__)
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(v)));  // sign extension, twice
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
#else
  if constexpr (kIs512<I>) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  } else if constexpr (I == Isa::kFma3Avx2) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  } else {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    __m128i b = _mm_cvtsi32_si128(v);
    b = _mm_unpacklo_epi8(b, b);                 // each byte twice
    b = _mm_unpacklo_epi16(b, b);                // each byte in all four bytes of a dword
    return _mm_cvtepi32_ps(_mm_srai_epi32(b, 24));  // arithmetic shift: sign extension
  }
#endif
}

// kLanes<I> consecutive int32 -> float batch (exact below 2^24; callers guarantee it).
template <Isa I>
inline FBatch<I> load_i32_as_f32(const int32_t* p) {
  return xsimd::to_float(IBatch<I>::load_unaligned(p));
}

// The 32 binary16 scales of one tile, converted exactly, into out[32].
template <Isa I>
inline void load_scales32(const uint16_t* s, float* out) {
#if defined(__aarch64__)
  // FCVTL: half -> single is exact (a subnormal half is a normal single, and FZ16 is checked off).
  for (int q = 0; q < 8; ++q) vst1q_f32(out + 4 * q, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(s + 4 * q))));
#else
  if constexpr (kIs512<I>) {
    for (int h = 0; h < 2; ++h) {
      _mm512_storeu_ps(out + 16 * h, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 16 * h))));
    }
  } else if constexpr (I == Isa::kFma3Avx2) {
    for (int q = 0; q < 4; ++q) {
      _mm256_storeu_ps(out + 8 * q, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 8 * q))));
    }
  } else {
    for (int c = 0; c < 32; ++c) out[c] = fp16_to_float(s[c]);
  }
#endif
}

}  // namespace twinbit::cpu

#if defined(__x86_64__) && XSIMD_WITH_AVX512BW
namespace xsimd::types {
template <class T>
struct get_bool_simd_register<T, twinbit::cpu::xsimd_avx512_vnni_vbmi> {
  using type = simd_avx512_bool_register<T>;
};
XSIMD_DECLARE_SIMD_REGISTER_ALIAS(twinbit::cpu::xsimd_avx512_vnni_vbmi, avx512bw);
}  // namespace xsimd::types
#endif
