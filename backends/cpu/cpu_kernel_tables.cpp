// kernel_table(): each tag's table is built on first use only. Building it runs code compiled
// with that tag's flags (the compiler may copy the table with wide vector moves), so it must
// not happen for a tag the CPU cannot run: callers check isa_runnable() first.
#include "backends/cpu/cpu_amx.h"
#include "backends/cpu/cpu_kernels.h"

namespace twinbit::cpu {

const KernelTable& kernel_table(Isa isa) {
#if defined(__aarch64__)
  if (isa == Isa::kNeonDotprod) { static const KernelTable t = make_kernel_table<Isa::kNeonDotprod>(); return t; }
  static const KernelTable t = make_kernel_table<Isa::kNeon>();
  return t;
#else
  switch (isa) {
    case Isa::kAmx: { static const KernelTable t = make_amx_kernel_table(); return t; }
    case Isa::kAvx512vnni: { static const KernelTable t = make_kernel_table<Isa::kAvx512vnni>(); return t; }
    case Isa::kAvx512bw: { static const KernelTable t = make_kernel_table<Isa::kAvx512bw>(); return t; }
    case Isa::kFma3Avx2: { static const KernelTable t = make_kernel_table<Isa::kFma3Avx2>(); return t; }
    default: break;
  }
  static const KernelTable t = make_kernel_table<Isa::kSse2>();
  return t;
#endif
}

}  // namespace twinbit::cpu
