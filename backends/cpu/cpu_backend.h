// The CPU backend (registered as "cpu"; entry point tb_backend_create_cpu, see twinbit/backend.h
// for the contract of every entry).
//
// What it is: the kernels of cpu_kernels.h (xsimd, one source per instruction-set tag) driven by
// a oneTBB arena. Weights are used in place: weights_bind keeps a view of the caller's strip set
// (usually the mapped artifact) and copies nothing. Work is split across threads by output strips
// (32 columns) and by rows - never inside a sum - so the bits never depend on the thread count.
//
// Creation parameters (twinbit/backend.h tb_backend_params; exact parsing: an unknown key or a bad
// value fails creation with INVALID_ARGUMENT quoting it and listing the valid ones). The backend
// reads no environment variable; the CLI maps TWINBIT_CPU_* onto these as defaults
// (docs/BACKENDS.md).
//   isa=<tag>          force an instruction-set tag: avx512vnni, avx512bw, fma3_avx2, sse2
//                      (default: the best one this CPU runs). A tag this CPU cannot run gives
//                      UNAVAILABLE naming it.
//   threads=<n>        threads of the arena, 1 .. 1024 (default: all hardware threads).
//   prefetch_bytes=<n> software prefetch distance in bytes of codes, 0 .. 65536 (default 8192:
//                      8 q8 or 16 q4 tiles, the best measured distance on the development CPU; 0
//                      turns it off). Lines go into L2. Same bits at every distance: a tuning
//                      knob for other memory systems.
// Device: the host is the one device, index 0.
//
// Switches (tb_backend_iface::get_proc, type tb_switch_fn; twinbit::Backend::set_switch):
//   cpu.set_prefetch_bytes  the prefetch distance of a live backend, 0 .. 65536 bytes (as the
//                           parameter), for A/B measurements in one process. Not thread-safe
//                           against operations of the same backend.
//   cpu.set_amx_schedule    the amx tag's tile schedule of the I8 gemm at M >= 16 (0 = one
//                           quadrant at a time; 1 = the four quadrants of a group from one set
//                           of tiles; 2 = by the call's rows, the default: cpu_amx.h,
//                           amx_schedule_for; isa/kernels_amx.cpp), for the same A/B. Same bits.
//   cpu.set_amx_tuning      the quadrant schedule's prefetch distance and stride, tile pipeline
//                           depth, order of work and int-to-float conversion, one int (cpu_amx.h,
//                           AmxTuning; 0 = by the weights' precision, the default), for the
//                           same A/B. Same bits.
// The kernels have one schedule per tag; the variants measured against them (a tile-only F32
// decode, burst prefetches, L1 prefetches) were removed (docs/results/cpu-kernel-choices.md).
//
// Subnormals: the contract forbids flush-to-zero. Creation and every operation (inside the
// arena, on each worker) check MXCSR (x86-64: FTZ or DAZ) or FPCR (aarch64: FZ, FZ16, FIZ, AH);
// any of them set gives FAILED_PRECONDITION.
//
// Thread safety: every operation may be called concurrently from several host threads (each
// enters the shared arena); bind/release must not race with an operation on the same handle.
#pragma once

#include <cstdint>

#include <twinbit/backend.h>

extern "C" tb_code tb_backend_create_cpu(uint32_t host_abi_version, tb_backend* out_backend,
                                         tb_error* err, const tb_backend_params* params);
