// AMX availability: the CPU's word (cpuid), the OS's (XCR0) and the kernel's permission.
#include "backends/cpu/cpu_amx.h"

#include <cpuid.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace twinbit::cpu {

namespace {

// Linux's dynamically enabled XSTATE features (arch/x86/include/uapi/asm/prctl.h): tile data
// (XFEATURE 18, 8 KiB per thread) is off for a process until it asks.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool detect() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool amx_tile = (d >> 24) & 1, amx_int8 = (d >> 25) & 1;
  if (!amx_tile || !amx_int8) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return false;  // OSXSAVE
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return false;  // XTILECFG (17) and XTILEDATA (18) enabled
#if defined(__linux__)
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;  // no way known here to get the tile state granted: never use it
#endif
}

}  // namespace

bool amx_os_ready() {
  static const bool ready = detect();
  return ready;
}

}  // namespace twinbit::cpu
