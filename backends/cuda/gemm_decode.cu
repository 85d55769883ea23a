// The decode kernels of the CUDA gemm (M = 1; gemm_kernels.h, MAPPING): one block per strip
// (the small projections), and the slice-block kernel held to 40 registers (everything else).
// Which one runs is the plan's choice (gemm_plan.cu).
#include <algorithm>
#include <climits>
#include <cstdint>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_lanes.cuh"
#include "backends/cuda/gemm_slice_kernel.cuh"
#include "core/numerics.h"
#include "core/op_checks.h"

namespace twinbit::cuda::detail {
namespace {

// The parameters of the one-row decode kernel that owns a strip's slices (strip blocks).
struct DecodeParams {
  const uint8_t* codes;     // as Params
  const uint16_t* scales;   // as Params
  const float* x;           // F32: (kp)
  const int8_t* xq;         // I8: (kp)
  const float* xd;          // I8: (ngroups)
  float* y;                 // (n)
  int n, ngroups, nsplit;
  // split_plan's remainder rule in 32 bits, divided once on the host (a 64-bit division is a
  // long subroutine on the GPU): warp j of a strip's Q runs slices [j * wbase + min(j, wrem), ...),
  // slice z starts at group z * gbase + min(z, grem).
  int wbase, wrem;          // nsplit / Q, nsplit % Q
  int gbase, grem;          // ngroups / nsplit, ngroups % nsplit
};

DecodeParams decode_params(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, int64_t q) {
  DecodeParams p{};
  p.codes = w.codes;
  p.scales = w.scales;
  p.x = a.x;
  p.xq = a.xq;
  p.xd = a.xd;
  p.y = a.y;
  p.n = static_cast<int>(w.n);
  p.ngroups = static_cast<int>(w.kp / 32);
  p.nsplit = static_cast<int>(nsplit);
  p.wbase = static_cast<int>(nsplit / q);
  p.wrem = static_cast<int>(nsplit % q);
  p.gbase = static_cast<int>(w.kp / 32 / nsplit);
  p.grem = static_cast<int>(w.kp / 32 % nsplit);
  return p;
}

// ---- decode: one block per strip, its slices spread over the block's warps ----

constexpr int kStripMaxWarps = 16;     // warps per block of the strip kernel (512 threads)
constexpr int kStripFoldBatch = 16;    // shared-memory partial reads in flight per folding lane

using StripParams = DecodeParams;

// Block = one strip (32 columns), Q warps; warp j runs a contiguous range of the strip's slices
// with kStripDepth tiles in flight, reading the activations straight from global memory (one
// broadcast per load; L1 keeps them), and leaves each slice's partial in shared memory. After one
// block barrier warp 0 folds the nsplit partials in ascending z. No global partials, fence or
// counter: the critical path is the warp's DRAM round trips plus one barrier.
// Launched during the kernel before it (dependent_launch.cuh), the first tiles load meanwhile: the
// activations are read, and the output written, only after griddep_wait.
// kTermsFirst: per round of kStripDepth groups, every group's term (the F32 dot or the I8 integer
// sum, and its scale) first, with no branch between them, so their independent chains
// interleave; then their accumulation in ascending g. Otherwise each group's term and
// accumulation in turn. Same operations, same bits; the product's form is kStripTermsFirst.
template <tb_prec P, tb_act_mode A, bool kTermsFirst>
__global__ void __launch_bounds__(kStripMaxWarps * 32) gemm_strip_kernel(const StripParams p) {
  griddep_launch_dependents();  // the next kernel may start its own weight loads
  extern __shared__ float part[];  // (nsplit, 32 lanes)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int zb = warp * p.wbase + min(warp, p.wrem);
  const int ze = zb + p.wbase + (warp < p.wrem ? 1 : 0);
  const int gb = zb * p.gbase + min(zb, p.grem);
  const int ge = ze * p.gbase + min(ze, p.grem);
  const TileCursor tc = tile_cursor<P>(p.codes, p.scales, static_cast<int64_t>(blockIdx.x) * p.ngroups, lane);
  Tile ring[kStripDepth];
#pragma unroll
  for (int i = 0; i < kStripDepth; ++i) {
    ring[i] = Tile{};  // a slot past the warp's groups computes on zeros, never accumulated
    if (gb + i < ge) ring[i] = load_tile_at<P>(tc, gb + i);
  }
  griddep_wait();
  float a = 0.0f;
  int z = zb;
  int z_end = (z + 1) * p.gbase + min(z + 1, p.grem);  // group where slice z ends
#pragma unroll 1
  for (int g0 = gb; g0 < ge; g0 += kStripDepth) {
    if constexpr (kTermsFirst) {
      float term[kStripDepth], scale[kStripDepth];  // a = fma(term, scale, a) per group
#pragma unroll
      for (int i = 0; i < kStripDepth; ++i) {
        const int g = g0 + i < ge ? g0 + i : g0;  // past the range: group g0's activations, unused
        const Tile cur = ring[i];
        if (g0 + i + kStripDepth < ge) ring[i] = load_tile_at<P>(tc, g0 + i + kStripDepth);
        const float ws = scale_to_float(cur.scale);
        if constexpr (A == TB_ACT_F32) {
          term[i] = group_dot_streamed<P, false>(cur, reinterpret_cast<const float4*>(p.x) + g * 8, 0.0f);
          scale[i] = ws;
        } else {
          int w[8];
          codes_to_i8x4<P>(cur, w);
          term[i] = __int2float_rn(group_dot_i8(w, reinterpret_cast<const int4*>(p.xq) + g * 2));
          scale[i] = __fmul_rn(ws, __ldg(p.xd + g));
        }
      }
#pragma unroll
      for (int i = 0; i < kStripDepth; ++i) {
        const int g = g0 + i;
        if (g < ge) {
          a = __fmaf_rn(term[i], scale[i], a);  // ascending g
          if (g + 1 == z_end) {  // slice z complete: its partial
            part[z * 32 + lane] = a;
            a = 0.0f;
            ++z;
            z_end = (z + 1) * p.gbase + min(z + 1, p.grem);
          }
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kStripDepth; ++i) {
        const int g = g0 + i;
        if (g < ge) {
          const Tile cur = ring[i];
          if (g + kStripDepth < ge) ring[i] = load_tile_at<P>(tc, g + kStripDepth);
          const float ws = scale_to_float(cur.scale);
          if constexpr (A == TB_ACT_F32) {
            const float4* xr = reinterpret_cast<const float4*>(p.x) + g * 8;
            a = __fmaf_rn(group_dot_streamed<P, false>(cur, xr, 0.0f), ws, a);  // ascending g
          } else {
            int w[8];
            codes_to_i8x4<P>(cur, w);
            const int isum = group_dot_i8(w, reinterpret_cast<const int4*>(p.xq) + g * 2);
            a = __fmaf_rn(__int2float_rn(isum), __fmul_rn(ws, __ldg(p.xd + g)), a);
          }
          if (g + 1 == z_end) {  // slice z complete: its partial
            part[z * 32 + lane] = a;
            a = 0.0f;
            ++z;
            z_end = (z + 1) * p.gbase + min(z + 1, p.grem);
          }
        }
      }
    }
  }
  __syncthreads();
  if (warp == 0) {  // out = +0 + a[0] + a[1] + ... + a[nsplit-1]
    float out = 0.0f;
#pragma unroll 1
    for (int z0 = 0; z0 < p.nsplit; z0 += kStripFoldBatch) {
      const int cnt = min(kStripFoldBatch, p.nsplit - z0);
      float v[kStripFoldBatch];
#pragma unroll
      for (int j = 0; j < kStripFoldBatch; ++j) {
        if (j < cnt) v[j] = part[(z0 + j) * 32 + lane];
      }
#pragma unroll
      for (int j = 0; j < kStripFoldBatch; ++j) {
        if (j < cnt) out = __fadd_rn(out, v[j]);
      }
    }
    const int col = static_cast<int>(blockIdx.x) * 32 + lane;
    if (col < p.n) p.y[col] = out;
  }
}

using StripKernelFn = void (*)(StripParams);

// The strip kernel's form per precision and mode (H100, M = 1, same process; 2026-12-06): terms
// first wherever it won - q8 F32 q_o 7.74 vs 9.22 us alone, 4.94 vs 6.26 back to back; q8 I8
// 6.72 vs 7.36; q4 I8 6.18 vs 6.82 - but not in q4 F32, whose nibble unpacking four groups at
// once made it slower (q_o 8.19 vs 7.68, back to back 5.53 vs 5.22).
template <tb_prec P, tb_act_mode A>
constexpr bool kStripTermsFirst = !(P == TB_PREC_Q4 && A == TB_ACT_F32);

template <tb_prec P, tb_act_mode A>
StripKernelFn strip_kernel_form(bool product) {
  constexpr bool kProduct = kStripTermsFirst<P, A>;
  return product ? gemm_strip_kernel<P, A, kProduct> : gemm_strip_kernel<P, A, !kProduct>;
}
template <tb_prec P>
StripKernelFn pick_strip_kernel_for(tb_act_mode mode, bool product) {
  return mode == TB_ACT_F32 ? strip_kernel_form<P, TB_ACT_F32>(product) : strip_kernel_form<P, TB_ACT_I8>(product);
}
StripKernelFn pick_strip_kernel(tb_prec prec, tb_act_mode mode, bool product) {
  switch (prec) {
    case TB_PREC_Q8: return pick_strip_kernel_for<TB_PREC_Q8>(mode, product);
    case TB_PREC_Q4: return pick_strip_kernel_for<TB_PREC_Q4>(mode, product);
  }
  return nullptr;  // no kernels for this precision (kernels_have refuses it at bind)
}

}  // namespace

// Warps per strip block: one per slice up to kStripMaxWarps.
int strip_warps(int64_t nsplit) { return static_cast<int>(std::min<int64_t>(nsplit, kStripMaxWarps)); }

// The strip kernel takes decode with nsplit > 1 when its partials fit the default shared memory.
bool strip_fits(int64_t nsplit) { return nsplit > 1 && nsplit * 32 * 4 <= 48 * 1024; }

Status launch_strip(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, cudaStream_t stream, bool overlap,
                    bool product_form) {
  const int64_t ngroups = w.kp / 32, nstrips = w.np / 32;
  const int q = strip_warps(nsplit);
  // Geometry: a block per strip, every slice on a warp (q <= nsplit), partials in shared memory.
  if (!strip_fits(nsplit) || q < 1 || q > nsplit || nstrips > INT_MAX || ngroups > INT_MAX / 2) {
    return Error(TB_INTERNAL, "gemm strip launch geometry: %lld strips, %lld groups, %lld slices over "
                 "%d warps (expected 2 .. 384 slices, 1 <= warps <= slices, strips and 2 x groups "
                 "below 2^31)", static_cast<long long>(nstrips), static_cast<long long>(ngroups),
                 static_cast<long long>(nsplit), q);
  }
  const StripKernelFn kernel = pick_strip_kernel(w.prec, a.mode, product_form);
  if (!kernel) {
    return Error(TB_UNIMPLEMENTED, "cuda: no strip kernel for precision %s", prec_name(w.prec));
  }
  const StripParams p = decode_params(w, a, nsplit, q);
  const size_t smem = static_cast<size_t>(nsplit) * 32 * sizeof(float);
  auto pdl = device_has_dependent_launch();
  if (!pdl.ok()) return pdl.status();
  TB_CUDA_TRY(launch_after_previous(overlap && *pdl, kernel, static_cast<unsigned>(nstrips),
                                    static_cast<unsigned>(q * 32), smem, stream, p));
  return Status();
}

// The packed decode kernel (one slice per block, depth 1, 12 blocks per SM): the product's
// slice-block decode.
namespace {
template <tb_prec P>
KernelFn decode_slice_kernel_for(tb_act_mode mode) {
  constexpr SliceRun k1 = SliceRun::kOne;
  return mode == TB_ACT_F32 ? gemm_kernel<P, TB_ACT_F32, 1, false, k1, 1, false, 1, 12>
                            : gemm_kernel<P, TB_ACT_I8, 1, false, k1, 1, false, 1, 12>;
}
}  // namespace

KernelFn decode_slice_kernel(tb_prec prec, tb_act_mode mode) {
  switch (prec) {
    case TB_PREC_Q8: return decode_slice_kernel_for<TB_PREC_Q8>(mode);
    case TB_PREC_Q4: return decode_slice_kernel_for<TB_PREC_Q4>(mode);
  }
  return nullptr;  // no kernels for this precision (kernels_have refuses it at bind)
}

}  // namespace twinbit::cuda::detail
