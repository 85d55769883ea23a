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
//   TWINBIT_CPU_F32_DECODE=<v> how the avx512vnni F32 row kernel decodes tiles: spread (default),
//                              tile or spread_burst (cpu_kernels.h, F32Decode). Same bits; for
//                              measuring.
//   TWINBIT_CPU_I8_PREFETCH=<v> when the avx512vnni I8 kernels prefetch the tiles ahead: spread
//                              (default) or burst (cpu_kernels.h, I8Prefetch). Same bits.
//   TWINBIT_CPU_PREFETCH_BYTES=<n> software prefetch distance in bytes of codes, 0 .. 65536
//                              (default 8192: 8 q8 or 16 q4 tiles; 0 turns it off). Same bits.
//   TWINBIT_CPU_PREFETCH_LEVEL=<v> where software prefetches bring lines: l2 (default) or l1.
//                              Same bits.
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

namespace twinbit::cpu {
// Switches the F32 decode variant ("spread", "tile" or "spread_burst", as TWINBIT_CPU_F32_DECODE) of a backend
// made by tb_backend_create_cpu, for A/B measurements in one process. Not thread-safe against
// operations of the same backend. INVALID_ARGUMENT naming the value if `backend` is not a cpu
// backend or `name` is not a variant.
tb_code set_f32_decode(const tb_backend& backend, const char* name, tb_error* err);
// Switches the I8 prefetch variant ("spread" or "burst", as TWINBIT_CPU_I8_PREFETCH); as above.
tb_code set_i8_prefetch(const tb_backend& backend, const char* name, tb_error* err);
// Switches the prefetch distance ("0" .. "65536" bytes, as TWINBIT_CPU_PREFETCH_BYTES); as above.
tb_code set_prefetch_bytes(const tb_backend& backend, const char* bytes, tb_error* err);
// Switches the prefetch level ("l1" or "l2", as TWINBIT_CPU_PREFETCH_LEVEL); as above.
tb_code set_prefetch_level(const tb_backend& backend, const char* level, tb_error* err);
}  // namespace twinbit::cpu
