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

// The quadrant schedule's tuning, one int (GemmParams::amx_tuning; the switch
// cpu.set_amx_tuning): bits 0-3 the software prefetch distance in chunks of 16 groups (0: none;
// 1: the next chunk, spread over this chunk's steps), bits 4-7 log2 of the prefetch line stride
// (0: every line; 3: one line per 512 bytes; 6: one per 4 KiB page), bits 8-11 the tile
// pipeline's depth in group pairs (1: a pair's tile work is issued one pair ahead of its host
// work; 2: two pairs ahead, three buffers; 3: three ahead, four buffers), bits 12-13 the order
// of a step's work (0: the next pair's loads, dots and stores, then this pair's host work; 1: the
// stores after the host work; 2: each dot beside one group's host work, the stores last; 3, with
// depth >= 2: the previous step's stores first, then each tile part (A, B, dot) between four
// columns of host work), bits 14-15 how the host makes float(isum) (0: vcvtdq2ps, which Intel's
// tables put on one vector port; 1: an integer add of 1.5 * 2^23's bits and a float subtraction
// of it, both for either port; 2: the C tile starts at those bits instead of zero, so only the subtraction is left).
// Same bits at every value.
struct AmxTuning {
  int prefetch_chunks = 1;
  int prefetch_stride_log2 = 0;
  int depth = 1;
  int order = 0;
  int conversion = 0;
  static constexpr AmxTuning decode(int v) {
    AmxTuning t;
    t.prefetch_chunks = v & 15;
    t.prefetch_stride_log2 = (v >> 4) & 15;
    t.depth = (v >> 8) & 15;
    t.order = (v >> 12) & 3;
    t.conversion = (v >> 14) & 3;
    return t;
  }
  // A concrete tuning (kAmxTuningAuto is not one).
  static constexpr bool valid(int64_t v) {
    const AmxTuning t = decode(static_cast<int>(v & 0xffff));
    return v >= 0 && v < (1 << 16) && t.prefetch_stride_log2 <= 6 && t.depth >= 1 && t.depth <= 3 &&
           (t.order <= 2 || t.depth >= 2) && t.conversion <= 2;
  }
};
// The default, kAmxTuningAuto (0, which no concrete tuning is), picks by the weights' precision:
// q8 dots beside the host work (order 2), q4 the tile work first (order 0); both prefetch the next
// chunk, one pair in flight. Measured in docs/results/cpu-amx-2026-12-06-tuning.md: order 2 took
// 3-5% off q8 at M = 16, 32, 64 (lm_head, gate_up, three runs); q4 moved -6% .. +3% (two runs).
constexpr int kAmxTuningAuto = 0;
constexpr int kAmxTuningQ8 = 0x2101, kAmxTuningQ4 = 0x101;
constexpr int amx_tuning_for(int tuning, tb_prec prec) {
  return tuning != kAmxTuningAuto ? tuning : prec == TB_PREC_Q4 ? kAmxTuningQ4 : kAmxTuningQ8;
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
