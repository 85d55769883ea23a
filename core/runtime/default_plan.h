// The default plan (the source engine's rule) and the order of fallbacks.
//
// A gemm of M rows on an N x K projection costs 2*M*N*K FLOPs. Below kCpuFlopThreshold it stays
// on the CPU backend: launching elsewhere costs more than it saves. Otherwise it goes to the first
// other backend, in the order the user listed backends, whose supports() accepts the op; to the
// CPU backend if none does. A backend whose device is emulated on the host (capability tag
// "emulated": the NPU layout's emulator) is never in the default order: it computes the same bits
// on the same CPU, only slower. An override still places calls on it.
//
// The same order gives the fallbacks: when a chosen backend answers UNIMPLEMENTED (at supports()
// or at the call) the next backend of the order that is not the failing one takes over, and the
// CPU backend comes last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace twinbit::runtime {

inline constexpr double kCpuFlopThreshold = 1e7;

// The host backend the rule keeps small calls on and every fallback ends at. The source engine's
// rule names it, so this is the one place the runtime knows a backend's name; everything else
// it learns from supports() and the order the user lists backends in.
inline constexpr const char kCpuBackendName[] = "cpu";

inline double gemm_flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

// True when the backend declares the capability tag "emulated".
bool is_emulated(const Backend& backend);

// The backends a gemm described by `op` may run on, best first: below the threshold only the CPU
// backend; else every non-CPU, non-emulated backend whose supports() accepts `op`, in list order,
// then the CPU backend. `cpu` is the index of the CPU backend in `backends`.
std::vector<size_t> default_order(const std::vector<const Backend*>& backends, size_t cpu,
                                  const tb_op_desc& op);

// The backends to try for a part placed on `first`: `first`, then the others of `order` in
// order, then the CPU backend, each once.
std::vector<size_t> fallback_chain(size_t first, const std::vector<size_t>& order, size_t cpu);

}  // namespace twinbit::runtime
