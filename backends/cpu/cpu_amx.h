// The amx tag: the I8 gemm on Intel's tile matrix unit (AMX-INT8, Sapphire Rapids and later).
//
// WHAT IT COMPUTES. Exactly the I8 contract of docs/NUMERICS.md: TDPBSSD multiplies signed bytes
// by signed bytes into int32 tiles, so one instruction over one 32-wide group gives each (row,
// column) pair the group's exact integer sum isum[g]; the host then converts it (exact), forms
// t = ws * xd (one rounding) and runs the slice fma chain and the fold in the contract's order,
// as every other tag does. So the bits equal the reference's; only who adds the 32 products
// changes, and integer sums have no order.
//
// THE LAYOUT. The weights are the A operand, read straight from the strip: a q8 tile is 32
// columns x 32 codes, i.e. two 16 x 32-byte A tiles with a 32-byte stride (no transpose, no
// repacking at bind; q4 tiles are widened to codes on the fly, a chunk at a time). The
// activations are the B operand and are packed once per call (pack_i8_activations): per block
// of 16 rows and group, the 8 x 64-byte tile whose row q holds, for each of the 16 rows, the 4
// codes 4q .. 4q+3 (the "VNNI" order AMX reads B in); rows past M are zero. The int32 result is
// then (16 weight columns) x (16 rows): each weight column's 16 rows fill one zmm, so the host's
// slice chain runs one lane per row, one register per column.
//
// WHEN. M >= 16 (kAmxMinRows): below it the tag runs the avx512vnni kernels (the decode path),
// which the amx tag otherwise is identical to. Runnable only where the CPU has AMX-TILE and
// AMX-INT8 (cpuid leaf 7) and the OS saves tile state and grants it to this process (Linux:
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once per process; a refusal makes
// the tag unrunnable, and dispatch falls back to avx512vnni).
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_kernels.h"

namespace twinbit::cpu {

constexpr int64_t kAmxMinRows = 16;

// The tile schedule a call runs (GemmParams::amx_schedule: 0 quadrants, 1 shared tiles; the spec
// key amx_schedule). kAmxScheduleAuto, the default, takes the shared one for one block of 16
// rows and the quadrants from 17 rows: on a 16-core Xeon with AMX shared was 2-4% faster
// at M = 16 and quadrants 4-13% faster at M = 32 and 64, lm_head and gate_up, two runs
// (docs/results/cpu-amx-2026-12-06.md); on a 2-core Xeon quadrants won at every M.
constexpr int kAmxScheduleAuto = 2;
constexpr int amx_schedule_for(int schedule, int64_t m) {
  return schedule != kAmxScheduleAuto ? schedule : (m <= 16 ? 1 : 0);
}

// AMX-TILE + AMX-INT8 in cpuid, tile state enabled in XCR0, and the kernel's permission for
// this process granted (requested on the first call; the answer is cached).
bool amx_os_ready();

// The amx tag's table: avx512vnni's, with gemm_i8 on tiles at M >= kAmxMinRows and the
// activation packing entries set. Call only where isa_runnable(Isa::kAmx).
KernelTable make_amx_kernel_table();

// The same schedule with every tile instruction emulated in plain code (same packing, same
// strides, same host arithmetic): lets the tests check the schedule's bits on CPUs without AMX.
// Runnable where avx512vnni is. Never selected by dispatch.
KernelTable make_amx_emulated_kernel_table();

}  // namespace twinbit::cpu
