#include "cli/version_text.h"

#include "backends/cpu/cpu_isa.h"
#include <twinbit/status.hpp>
#include "twinbit_build_commit.h"  // generated at every build (cmake/build_commit.cmake)
#include <twinbit/backend.h>

namespace twinbit::cli {

std::string version_text() {
  const std::vector<cpu::Isa> runnable = cpu::runnable_isas();
  const std::string isa = runnable.empty() ? "none of the compiled tags runs on this CPU"
                                           : std::string(cpu::isa_name(runnable.front()));
  return Format(
      "twinbit %s\n"
      "commit:       %s\n"
      "build type:   %s\n"
      "CUDA backend: %s\n"
      "CPU ISA:      %s in use (compiled: %s) on %s\n"
      "backend ABI:  %u",
      TWINBIT_VERSION, TWINBIT_COMMIT, TWINBIT_BUILD_TYPE, TWINBIT_CUDA_TEXT, isa.c_str(),
      cpu::isa_names(cpu::compiled_isas()).c_str(), cpu::cpu_model_name().c_str(),
      TB_BACKEND_ABI_VERSION);
}

}  // namespace twinbit::cli
