#include "core/runtime/default_plan.h"

#include <algorithm>

namespace twinbit::runtime {

bool is_emulated(const Backend& backend) { return has_feature_tag(backend.features(), "emulated"); }

std::vector<size_t> default_order(const std::vector<const Backend*>& backends, size_t cpu,
                                  const tb_op_desc& op) {
  std::vector<size_t> order;
  if (gemm_flops(op.m, op.n, op.k) >= kCpuFlopThreshold) {
    for (size_t i = 0; i < backends.size(); ++i) {
      if (i != cpu && !is_emulated(*backends[i]) && backends[i]->supports(op).ok()) order.push_back(i);
    }
  }
  order.push_back(cpu);
  return order;
}

std::vector<size_t> fallback_chain(size_t first, const std::vector<size_t>& order, size_t cpu) {
  std::vector<size_t> chain{first};
  auto add = [&](size_t b) {
    if (std::find(chain.begin(), chain.end(), b) == chain.end()) chain.push_back(b);
  };
  for (size_t b : order) add(b);
  add(cpu);
  return chain;
}

}  // namespace twinbit::runtime
