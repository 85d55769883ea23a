// The CPU backend (registered as "cpu"; entry point tb_backend_create_cpu, see core/backend.h
// for the contract of every entry).
//
// What it is: the kernels of cpu_kernels.h (xsimd, one source per instruction-set tag) driven by
// a oneTBB arena. Weights are used in place: weights_bind keeps a view of the caller's strip set
// (usually the mapped artifact) and copies nothing. Work is split across threads by output strips
// (32 columns) and by rows - never inside a sum - so the bits never depend on the thread count.
//
// Configuration, read once at creation (exact parsing; a bad value fails creation with
// INVALID_ARGUMENT naming the value and the valid ones):
//   TWINBIT_CPU_ARCH=<tag>     force an instruction-set tag: avx512vnni, avx512bw, fma3_avx2,
//                              sse2 (default: the best one this CPU runs). A tag this CPU cannot
//                              run gives UNAVAILABLE.
//   TWINBIT_CPU_THREADS=<n>    threads of the arena, 1 .. 1024 (default: all hardware threads).
//
// Subnormals: the contract forbids flush-to-zero. Creation and every operation (inside the
// arena, on each worker) check MXCSR; FTZ or DAZ set gives FAILED_PRECONDITION.
//
// Thread safety: every operation may be called concurrently from several host threads (each
// enters the shared arena); bind/release must not race with an operation on the same handle.
#pragma once

#include <cstdint>

#include "core/backend.h"

extern "C" tb_code tb_backend_create_cpu(uint32_t host_abi_version, tb_backend* out_backend,
                                         tb_error* err);
