// The tags' names (every architecture) and the x86-64 detection; aarch64's detection is
// cpu_isa_aarch64.cpp (each file's architecture-specific part compiles on its architecture only).
#include "backends/cpu/cpu_isa.h"

#if defined(__x86_64__)
#include "backends/cpu/cpu_amx.h"

#include <cpuid.h>
#include <xmmintrin.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace twinbit::cpu {

#if defined(__x86_64__)
namespace {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512vnni = false, avx512vbmi = false;
  bool os_ymm = false, os_zmm = false;
};

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    f.os_ymm = (xcr0 & 0x6) == 0x6;             // XMM + YMM state saved by the OS
    f.os_zmm = f.os_ymm && (xcr0 & 0xe0) == 0xe0;  // opmask + ZMM_Hi256 + Hi16_ZMM
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.avx512vbmi = (c >> 1) & 1;
    f.avx512vnni = (c >> 11) & 1;
  }
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace
#endif  // __x86_64__

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kSse2: return "sse2";
    case Isa::kFma3Avx2: return "fma3_avx2";
    case Isa::kAvx512bw: return "avx512bw";
    case Isa::kAvx512vnni: return "avx512vnni";
    case Isa::kAmx: return "amx";
    case Isa::kNeon: return "neon";
    case Isa::kNeonDotprod: return "neon_dotprod";
  }
  return "unknown";
}

#if defined(__x86_64__)
std::vector<Isa> compiled_isas() {
  return {Isa::kAmx, Isa::kAvx512vnni, Isa::kAvx512bw, Isa::kFma3Avx2, Isa::kSse2};
}

bool isa_runnable(Isa isa) {
  const CpuFeatures& f = features();
  const bool avx2 = f.os_ymm && f.avx2 && f.fma && f.f16c;
  const bool avx512 = avx2 && f.os_zmm && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl;
  switch (isa) {
    case Isa::kSse2: return true;
    case Isa::kFma3Avx2: return avx2;
    case Isa::kAvx512bw: return avx512;
    case Isa::kAvx512vnni: return avx512 && f.avx512vnni && f.avx512vbmi;
    case Isa::kAmx: return isa_runnable(Isa::kAvx512vnni) && amx_os_ready();
    default: return false;  // another architecture's tag
  }
}
#endif  // __x86_64__

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (Isa i : compiled_isas()) {
    if (isa_runnable(i)) out.push_back(i);
  }
  return out;
}

std::string isa_names(const std::vector<Isa>& isas) {
  std::string s;
  for (Isa i : isas) {
    if (!s.empty()) s += ", ";
    s += isa_name(i);
  }
  return s;
}

#if defined(__x86_64__)
std::string cpu_model_name() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000004u) return "x86-64 CPU";
  char brand[49] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    unsigned r[4] = {};
    __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
    std::memcpy(brand + leaf * 16, r, 16);
  }
  std::string s(brand);
  const auto first = s.find_first_not_of(' ');
  const auto last = s.find_last_not_of(' ');
  if (first == std::string::npos) return "x86-64 CPU";
  return s.substr(first, last - first + 1);
}

bool fp_env_flushes_subnormals(unsigned* out_bits) {
  const unsigned csr = _mm_getcsr();
  if (out_bits) *out_bits = csr;
  return (csr & 0x8000u) != 0 || (csr & 0x0040u) != 0;  // FTZ bit 15, DAZ bit 6
}

std::string fp_env_flush_message(unsigned bits, const char* where) {
  char text[160];
  std::snprintf(text, sizeof text, "MXCSR = 0x%04x has FTZ or DAZ set %s; the numerics contract "
                "keeps subnormals (clear bits 15 and 6)", bits, where);
  return text;
}
#endif  // __x86_64__

}  // namespace twinbit::cpu
