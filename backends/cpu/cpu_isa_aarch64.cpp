// The aarch64 half of cpu_isa.h: the tags from the kernel's hardware capabilities, the model from
// MIDR_EL1 as sysfs exports it, and the FP environment from FPCR.
#include "backends/cpu/cpu_isa.h"

#if defined(__aarch64__)

#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <cstdint>
#include <cstdio>
#include <fstream>

namespace twinbit::cpu {

namespace {

// FPCR bits that change how subnormals are treated: FIZ (bit 0, FEAT_AFP: subnormal inputs read
// as zero), AH (bit 1, FEAT_AFP: the alternate handling, under which FZ also flushes inputs),
// FZ16 (bit 19, half precision), FZ (bit 24, single and double).
constexpr uint64_t kFpcrFlushBits = (1u << 0) | (1u << 1) | (1u << 19) | (1u << 24);

}  // namespace

std::vector<Isa> compiled_isas() { return {Isa::kNeonDotprod, Isa::kNeon}; }

bool isa_runnable(Isa isa) {
  switch (isa) {
    case Isa::kNeon: return true;  // Advanced SIMD is part of every aarch64 Linux system
    case Isa::kNeonDotprod: return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
    default: return false;  // another architecture's tag
  }
}

std::string cpu_model_name() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1");
  unsigned long long midr = 0;
  if (!(f >> std::hex >> midr)) return "aarch64 CPU";
  char text[80];
  std::snprintf(text, sizeof text, "aarch64 CPU (implementer 0x%02llx, part 0x%03llx)",
                (midr >> 24) & 0xff, (midr >> 4) & 0xfff);
  return text;
}

bool fp_env_flushes_subnormals(unsigned* out_bits) {
  uint64_t fpcr = 0;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  if (out_bits) *out_bits = static_cast<unsigned>(fpcr);
  return (fpcr & kFpcrFlushBits) != 0;
}

std::string fp_env_flush_message(unsigned bits, const char* where) {
  char text[200];
  std::snprintf(text, sizeof text, "FPCR = 0x%08x has FZ, FZ16, FIZ or AH set %s; the numerics "
                "contract keeps subnormals (clear bits 24, 19, 1 and 0)", bits, where);
  return text;
}

}  // namespace twinbit::cpu

#endif  // __aarch64__
