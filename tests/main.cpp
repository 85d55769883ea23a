// The test driver: doctest's main, plus one flag for the "gpu" ctest entry.
//   --requires-gpu   if no CUDA device can be used here, print "SKIPPED: <why>" and exit 77
//                    (ctest's SKIP_RETURN_CODE), so a machine without a GPU reports the GPU
//                    tests as skipped - never as passed.
//   --requires-amx   the same for the CPU backend's amx tag (AMX-INT8 tiles granted by the OS).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "core/registry.h"

int main(int argc, char** argv) {
  std::vector<char*> args;
  bool requires_gpu = false, requires_amx = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--requires-gpu") == 0) {
      requires_gpu = true;
    } else if (std::strcmp(argv[i], "--requires-amx") == 0) {
      requires_amx = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (requires_gpu) {
    auto cuda = twinbit::create_backend("cuda");
    if (!cuda.ok()) {
      std::printf("SKIPPED: %s\n", cuda.status().to_string().c_str());
      return 77;
    }
  }
  if (requires_amx && !twinbit::cpu::isa_runnable(twinbit::cpu::Isa::kAmx)) {
    std::printf("SKIPPED: the CPU backend's amx tag cannot run here (no AMX-TILE/AMX-INT8 in "
                "cpuid, or the OS did not grant tile state; runnable: %s)\n",
                twinbit::cpu::isa_names(twinbit::cpu::runnable_isas()).c_str());
    return 77;
  }
  doctest::Context ctx(static_cast<int>(args.size()), args.data());
  return ctx.run();
}
