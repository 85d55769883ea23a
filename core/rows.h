// The batch size M (rows of activations in one call): one range, checked in one place.
//
// Every entry point that takes an M checks it here - Backend::gemm (through check_gemm_args),
// Backend::read_floor, the `m=` of a bench SPEC and every command's --m - so a value out of range
// gets the same INVALID_ARGUMENT everywhere, naming the value and the range.
//
// Why 2^24: it is the largest dimension anything accepts (kMaxDim, core/op_checks.h), and every
// backend handles it: the CPU kernels loop over rows, the CUDA backend splits M into launches of
// at most 2^20 rows (backends/cuda/gemm_kernels.h). Whether the buffers of a given M fit in memory
// is a separate question, answered by the caller before it allocates (RESOURCE_EXHAUSTED).
#pragma once

#include <cstdint>

#include <twinbit/status.hpp>

namespace twinbit {

constexpr int64_t kMinRows = 1;
constexpr int64_t kMaxRows = int64_t{1} << 24;

// OK when kMinRows <= m <= kMaxRows; else INVALID_ARGUMENT
// "<what> = <m> is out of range (expected 1 .. 16777216 rows)". `what` names M as the caller
// spells it ("M", "--m", "spec 'cpu:m=0': m").
Status check_rows(int64_t m, const char* what = "M");

}  // namespace twinbit
