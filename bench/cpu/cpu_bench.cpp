// Placeholder until the CPU benchmark driver lands (CPU backend issue).
#include "bench/bench.h"

namespace twinbit::bench {
Status run_cpu(const Options&, std::vector<Case>&) {
  return Error(TB_UNIMPLEMENTED, "the CPU benchmark driver is not written yet");
}
}  // namespace twinbit::bench
