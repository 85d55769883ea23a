// The CPU backend's kernels: one table of single-threaded entry points per instruction-set tag
// (cpu_isa.h). The backend (cpu_backend.cpp) splits work across oneTBB threads by output strips
// and rows only - never inside a sum - and calls these on each piece.
//
// THE NUMERIC CONTRACT. Each entry performs exactly the operations of docs/NUMERICS.md in the
// written order, so its output is bit-identical (memcmp) to the scalar reference:
//   gemm_f32   == twinbit::ref::gemm_f32      (core/reference.h)
//   gemm_i8    == twinbit::ref::gemm_i8
//   gemv_f32   == twinbit::ref::gemv_f32
//   gdn_delta  == twinbit::ref::gdn_delta
//   expf       == twinbit::tb_expf, lane by lane (core/tb_expf.h)
//   quantize   == twinbit::ref::quantize_activations
// How SIMD keeps the order: the F32 mode's group dot is a sequential fma chain along k for each
// column, so the kernels vectorise ACROSS the 32 columns of a strip (one lane = one column, the
// chain runs down k inside the lane) after transposing the 32 x 32 code tile; the I8 mode's group
// dot is exact int32 arithmetic, so any order (VNNI's 4-byte partial sums, reduction trees) gives
// the same integer; the slice accumulation is again one lane per column, ascending g, with the
// slice fold (out = out + a_z) after each slice's last group. Nothing depends on M: a row gives
// the same bits whether it is computed alone (row kernel, NR = 1) or in a 4-row group.
//
// THREAD SAFETY. Every entry is re-entrant; distinct calls may run concurrently on distinct
// output ranges. None allocates on the heap; none keeps state.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_isa.h"
#include <twinbit/backend.h>
#include "core/precision.h"

namespace twinbit::cpu {

// The kernels are written for q8 and q4 (they branch on p.prec between the two packings). A row
// added to the precision table stops the build here until its kernels exist; until then
// kernels_have() keeps the backend from binding weights of a precision it has no kernel for.
static_assert(kPrecisionCount == 2, "cpu kernels exist for q8 and q4 only: write the new "
                                    "precision's kernels, then extend kernels_have()");
constexpr bool kernels_have(tb_prec prec) {
  switch (prec) {
    case TB_PREC_Q8:
    case TB_PREC_Q4:
      return true;
  }
  return false;
}

// One gemm call as the kernels see it. Shapes in (dims) comments; all pointers are borrowed.
struct GemmParams {
  tb_prec prec;
  int64_t n, k;             // logical output columns and inputs
  int64_t np, kp;           // 32*ceil(n/32), 32*ceil(k/32)
  int64_t ngroups;          // kp / 32
  int64_t tile_bytes;       // codes of one (strip, group) tile (StripLayout::tile_code_bytes)
  int64_t nsplit;           // fold_plan: split_plan(n_total, k) of the projection
  const uint8_t* codes;     // q8: (np/32, ngroups, 32 col, 32 k) int8; q4: (.., 32 col, 16) bytes
  const uint16_t* scales;   // (np/32, ngroups, 32 col) binary16 bits
  // mode F32
  const float* x;           // (m, ldx) floats; kp values per row readable, +0.0f past k
  int64_t ldx;
  // mode I8
  const int8_t* xq;         // (m, ldxq) codes, kp per row
  int64_t ldxq;
  const float* xd;          // (m, ldxd) activation scales, ngroups per row
  int64_t ldxd;
  const int32_t* xsum;      // (m, ngroups): sum of each row's 32 codes of group g (VNNI
                            // correction term; exact int32). May be null for non-VNNI tables.
  float* y;                 // (m, ldy) floats; columns n' < n written
  int64_t ldy;
  const void* xpack = nullptr;  // the activations in the tag's own layout (KernelTable::i8_pack), or null
  int amx_schedule = 0;         // the amx tag's tile schedule (kernels_amx.cpp): 0 quadrants, 1 shared tiles
                                // (the backend's default: 1)
  int amx_tuning = 0x101;       // the quadrant schedule's tuning, a concrete one (cpu_amx.h, AmxTuning):
                                // prefetch distance and stride, tile pipeline depth, order, conversion
  int64_t prefetch_bytes = 8192;  // software prefetch distance in bytes of codes (0: none); the
                                  // lines go into L2 only (cpu_kernels_impl.hpp, prefetch_ahead)
};

struct KernelTable {
  Isa isa;
  // Output strips [strip_begin, strip_end) x rows [row_begin, row_end) of one gemm.
  void (*gemm_f32)(const GemmParams& p, int64_t strip_begin, int64_t strip_end,
                   int64_t row_begin, int64_t row_end);
  void (*gemm_i8)(const GemmParams& p, int64_t strip_begin, int64_t strip_end,
                  int64_t row_begin, int64_t row_end);
  // Rows [row_begin, row_end) of y = W x (32-lane order, see the reference).
  void (*gemv_f32)(const tb_matrix_f32& w, const float* x, float* y, int64_t row_begin,
                   int64_t row_end);
  // Value heads [head_begin, head_end) of one gated-delta step (state updated in place).
  void (*gdn_delta)(const tb_gdn_args& a, int64_t head_begin, int64_t head_end);
  // out[i] = tb_expf(in[i]) for i < count.
  void (*expf)(const float* in, float* out, int64_t count);
  // A pure read of bytes [0, count) (the floor a gemm is measured against), with the kernels'
  // software prefetch prefetch_bytes ahead: returns a value that depends on every byte, so the
  // reads cannot be optimised away.
  uint64_t (*read_bytes)(const uint8_t* bytes, int64_t count, int64_t prefetch_bytes);
  // Rows [row_begin, row_end) of the I8 activation quantiser, codes clamped to [-127, 127] as
  // the reference does; also writes xsum (m, ngroups_of(k)) when it is non-null (the VNNI
  // correction term).
  void (*quantize)(int64_t k, const float* x, int64_t ldx, int8_t* xq, int64_t ldxq, float* xd,
                   int64_t ldxd, int32_t* xsum, int64_t row_begin, int64_t row_end);
  // Optional (null where the tag reads xq as is): the bytes of the tag's packed I8 activations
  // for m rows (0: this m needs none), and the packing of rows [0, m) of p.xq / p.xd into them;
  // the caller passes the result as GemmParams::xpack (the amx tag: cpu_amx.h).
  int64_t (*i8_pack_bytes)(int64_t m, int64_t ngroups) = nullptr;
  void (*i8_pack)(const GemmParams& p, int64_t m, void* out) = nullptr;
};

// The table of one tag; instantiated in isa/kernels_<tag>.cpp with that tag's flags.
template <Isa I>
KernelTable make_kernel_table();
#if defined(__x86_64__)
extern template KernelTable make_kernel_table<Isa::kSse2>();
extern template KernelTable make_kernel_table<Isa::kFma3Avx2>();
extern template KernelTable make_kernel_table<Isa::kAvx512bw>();
extern template KernelTable make_kernel_table<Isa::kAvx512vnni>();
#elif defined(__aarch64__)
extern template KernelTable make_kernel_table<Isa::kNeon>();
extern template KernelTable make_kernel_table<Isa::kNeonDotprod>();
#endif

// The table of a tag this build compiled (any tag of compiled_isas()). The caller must check
// isa_runnable() before calling into it.
const KernelTable& kernel_table(Isa isa);

}  // namespace twinbit::cpu
