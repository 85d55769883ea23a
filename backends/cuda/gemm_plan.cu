// The launch choice of gemm_plan.h, the entry points of gemm_kernels.h, and the slice-block
// launcher every slice-block schedule (the product's and the benchmark's) ends in.
#include "backends/cuda/gemm_plan.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/gemm_internal.h"
#include "core/numerics.h"

namespace twinbit::cuda {
namespace detail {

Result<int64_t> resident_blocks(KernelFn kernel) {
  static std::mutex mu;
  static std::map<KernelFn, int64_t> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(kernel); it != cache.end()) return it->second;
  int device = 0, sms = 0, per_sm = 0;
  TB_CUDA_TRY(cudaGetDevice(&device));
  TB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  const int64_t slots = std::max<int64_t>(1, static_cast<int64_t>(sms) * per_sm);
  cache.emplace(kernel, slots);
  return slots;
}

Status allow_smem(KernelFn kernel, size_t bytes) {
  static std::mutex mu;
  static std::map<KernelFn, size_t> allowed;
  std::lock_guard<std::mutex> lock(mu);
  size_t& have = allowed[kernel];
  if (have >= bytes) return Status();
  TB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  have = bytes;
  return Status();
}

Result<int64_t> device_sms() {
  static std::mutex mu;
  static std::map<int, int64_t> cache;
  int device = 0;
  TB_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(device); it != cache.end()) return it->second;
  int sms = 0;
  TB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cache.emplace(device, sms);
  return static_cast<int64_t>(sms);
}

namespace {
// The current device's compute capability major, asked once per device.
Result<int> device_major() {
  static std::mutex mu;
  static std::map<int, int> cache;
  int device = 0;
  TB_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(device); it != cache.end()) return it->second;
  int major = 0;
  TB_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  cache.emplace(device, major);
  return major;
}
}  // namespace

Result<bool> device_has_int_mma() {
  auto major = device_major();
  if (!major.ok()) return major.status();
  return *major >= 8;
}

Result<bool> device_has_dependent_launch() {
  auto major = device_major();
  if (!major.ok()) return major.status();
  return *major >= 9;
}

Params gemm_params(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, int64_t strip_blocks,
                   int64_t row_tiles, int64_t slices_per_block) {
  Params p{};
  p.codes = w.codes;
  p.scales = w.scales;
  p.x = a.x;
  p.xq = a.xq;
  p.xd = a.xd;
  p.y = a.y;
  p.partial = a.partial;
  p.counters = a.counters;
  p.m = a.m;
  p.n = static_cast<int>(w.n);
  p.np = static_cast<int>(w.np);
  p.ngroups = static_cast<int>(w.kp / 32);
  p.nsplit = static_cast<int>(nsplit);
  p.nstrips = static_cast<int>(w.np / 32);
  p.strip_blocks = static_cast<int>(strip_blocks);
  p.row_tiles = static_cast<int>(row_tiles);
  p.slices_per_block = static_cast<int>(slices_per_block);
  p.gbase = static_cast<int>(w.kp / 32 / nsplit);
  p.grem = static_cast<int>(w.kp / 32 % nsplit);
  return p;
}

Status launch_slice_blocks(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, KernelFn kernel,
                           int mt, int cols, int64_t slices_per_block, cudaStream_t stream, int threads,
                           size_t smem, bool overlap) {
  if (!kernel || mt < 1 || cols < 1 || cols > 2 || nsplit < 1 || slices_per_block < 1 ||
      slices_per_block > nsplit || threads < kThreads || threads % kThreads != 0 || threads > 1024) {
    return Error(TB_INTERNAL, "gemm slice-block launch: %s kernel, row tile %d, %d strips per warp, "
                 "%lld of %lld slices per block (expected a kernel, row tile >= 1, 1 or 2 strips, "
                 "1 .. nsplit slices)", kernel ? "a" : "no", mt, cols,
                 static_cast<long long>(slices_per_block), static_cast<long long>(nsplit));
  }
  const int64_t nstrips = w.np / 32;
  const int64_t row_tiles = ceil_div(a.m, mt);
  const int64_t strip_blocks = ceil_div(nstrips, kStripsPerBlock * cols);
  const int64_t blocks_per_slice = strip_blocks * row_tiles;
  const int64_t blocks = blocks_per_slice * ceil_div(nsplit, slices_per_block);
  // Geometry: every (strip, slice, row tile) must have a warp. Refuse rather than let a guard
  // inside the kernel hide missing work.
  const int64_t warps_needed = nstrips * nsplit * row_tiles;
  const int64_t warps_launched = blocks * (kThreads / 32) * slices_per_block * cols;
  if (blocks < 1 || blocks > INT_MAX || warps_launched < warps_needed ||
      static_cast<int64_t>(row_tiles) * mt < a.m) {
    return Error(TB_INTERNAL, "gemm launch geometry: %lld blocks x %d warps x %lld slices each for "
                 "%lld strips x %lld slices x %lld row tiles of %d (needs %lld warp-slices, grid "
                 "limit %d)", static_cast<long long>(blocks), kThreads / 32,
                 static_cast<long long>(slices_per_block), static_cast<long long>(nstrips),
                 static_cast<long long>(nsplit), static_cast<long long>(row_tiles), mt,
                 static_cast<long long>(warps_needed), INT_MAX);
  }
  if (nsplit > 1 && slices_per_block < nsplit && (!a.partial || !a.counters)) {
    return Error(TB_INTERNAL, "gemm launch: %lld slices need a partial buffer and counters",
                 static_cast<long long>(nsplit));
  }
  const Params p = gemm_params(w, a, nsplit, strip_blocks, row_tiles, slices_per_block);
  if (smem > 0) TB_RETURN_IF_ERROR(allow_smem(kernel, smem));
  auto pdl = device_has_dependent_launch();
  if (!pdl.ok()) return pdl.status();
  TB_CUDA_TRY(launch_after_previous(overlap && *pdl, kernel, static_cast<unsigned>(blocks),
                                    static_cast<unsigned>(threads), smem, stream, p));
  return Status();
}

Status check_launch(const DeviceStrips& w, const GemmLaunch& a) {
  if (const char* why = gemm_unsupported_reason(w.n, w.k)) {
    return Error(TB_UNIMPLEMENTED, "%s (K = %lld)", why, static_cast<long long>(w.k));
  }
  if (w.n_total < 1 || w.n_begin < 0 || w.n_begin % 32 != 0 || w.n_begin + w.n > w.n_total) {
    return Error(TB_INVALID_ARGUMENT, "gemm launch: columns [%lld, %lld) of a projection of "
                 "n_total = %lld (expected n_total >= 1, n_begin a multiple of 32, n_begin + N <= "
                 "n_total)", static_cast<long long>(w.n_begin),
                 static_cast<long long>(w.n_begin + w.n), static_cast<long long>(w.n_total));
  }
  if (a.m < 1 || a.m > kMaxRowsPerLaunch) {
    return Error(TB_INVALID_ARGUMENT, "gemm launch rows m = %lld (expected 1 .. %lld per launch)",
                 static_cast<long long>(a.m), static_cast<long long>(kMaxRowsPerLaunch));
  }
  if (!w.codes || !w.scales || !a.y || (a.mode == TB_ACT_F32 ? !a.x : (!a.xq || !a.xd))) {
    return Error(TB_INTERNAL, "gemm launch: a device pointer for mode %d is null",
                 static_cast<int>(a.mode));
  }
  return Status();
}

}  // namespace detail

namespace {

using detail::kRowTile;
using detail::kRowTileLarge;
using detail::kStripsPerBlock;

// Rows per block: 16 on vocabulary-sized outputs (more than 64 Ki columns), 8 otherwise (the
// measurement: docs/results/cuda-kernel-choices.md).
int row_tile_for(int64_t m, int64_t np, int forced = 0) {
  if (m > 1 && (forced == kRowTile || forced == kRowTileLarge)) return forced;
  if (m == 1) return 1;
  return np > 65536 ? kRowTileLarge : kRowTile;
}

// The prefill schedule (M > 1): strips per warp, slices per block and the loop order, by the
// rules of gemm_plan.h (the measurements: docs/results/cuda-kernel-choices.md).
struct PrefillPlan {
  int cols = 1;
  bool rows_inner = false, all_slices = false;
};
PrefillPlan plan_prefill(tb_act_mode mode, const GemmForce& a, int64_t nstrips, int64_t row_tiles, int64_t sms) {
  PrefillPlan pl;
  const int64_t one_strip_blocks = ceil_div(nstrips, kStripsPerBlock) * row_tiles;
  pl.cols = a.cols > 0 ? a.cols : (one_strip_blocks >= 8 * sms ? 2 : 1);
  const int64_t blocks = ceil_div(nstrips, kStripsPerBlock * pl.cols) * row_tiles;
  const bool automatic = pl.cols == 1 ? blocks >= 2 * sms : mode == TB_ACT_I8;
  pl.all_slices = a.all_slices == Toggle::kOn || (a.all_slices == Toggle::kAuto && automatic);
  const bool inner = pl.all_slices;  // rows inside the k loop paid only with the register fold
  pl.rows_inner = pl.cols == 1 && mode == TB_ACT_F32 &&
                  (a.rows_inner == Toggle::kOn || (a.rows_inner == Toggle::kAuto && inner));
  return pl;
}

// The most rows the strip blocks staging activations take (past them the row-tile blocks).
constexpr int64_t kMmaStripsMaxRows = 96;

// 64-row blocks an SM (of the three that fit: kMmaRowsMinBlocks<64>) from which the plan takes
// them over 32-row blocks.
constexpr int64_t kMmaRows64MinBlocksPerSm = 2;

// Rows per block of the row-tile tensor-core kernel: the smallest tile that holds M; past 32 rows
// 64, or 32 where there would be fewer than two 64-row blocks an SM (both kernels run three a
// SM): gate_up (96 blocks per 64-row tile) on the H200 M = 128 54.5 us at 32 rows against 65.5
// at 64, M = 256 101.2 against 81.9, M = 512 193.1 against 155.2; lm_head M = 128 565.1 against
// 416.5 (docs/results/h200-2026-12-04-smem-fold.md).
int mma_row_tile(int64_t m, int forced, int64_t nstrips, int64_t sms) {
  if (forced == 8 || forced == 16 || forced == 32 || forced == 64) return forced;
  if (m <= 32) return m <= 8 ? 8 : m <= 16 ? 16 : 32;
  const int64_t blocks64 = ceil_div(nstrips, kStripsPerBlock) * ceil_div(m, int64_t{64});
  return blocks64 < kMmaRows64MinBlocksPerSm * sms ? 32 : 64;
}

// Warps per strip of the strip blocks that stage activations over two row tiles or more (gate_up
// M = 32 on the H200: 27.52 vs 30.72 us with eight, docs/results/h200-2026-12-03-overlap.md).
constexpr int kActsWays = 4;

// Rows per block of the tensor-core strip blocks: 8 up to 16 rows, 16 above (32-row tiles hold
// 32 accumulators a thread and spill).
int mma_strips_row_tile(int64_t m, int forced) {
  if (forced == 8 || forced == 16 || forced == 32) return forced;
  return m <= 16 ? 8 : 16;
}

// The product's kernel for schedule s, or nullptr.
detail::KernelFn product_kernel(const DeviceStrips& w, const GemmLaunch& a, const GemmSchedule& s) {
  if (s.mma && s.mma_strips) {
    const bool ok = a.mode == TB_ACT_I8 && a.m > 1 && s.cols == 1 && !s.rows_inner;
    return ok ? detail::mma_strips_kernel(w.prec, s.row_tile, s.mma_stage, s.mma_acts, s.mma_l2_ahead > 0) : nullptr;
  }
  if (s.mma) {
    const bool ok = a.mode == TB_ACT_I8 && a.m > 1 && s.cols == 1 && !s.rows_inner;
    return ok ? detail::mma_kernel(w.prec, s.row_tile, s.all_slices) : nullptr;
  }
  if (s.row_tile == 1) {
    const bool decode = a.m == 1 && s.cols == 1 && !s.all_slices && !s.rows_inner;
    return decode ? detail::decode_slice_kernel(w.prec, a.mode) : nullptr;
  }
  return detail::prefill_kernel(w.prec, a.mode, s.row_tile, s.cols, s.all_slices, s.rows_inner);
}

// Launches a checked launch's schedule.
Status launch_planned(const DeviceStrips& w, const GemmLaunch& a, const GemmSchedule& s, cudaStream_t stream) {
  const bool overlap = a.overlap_previous && s.overlap_previous;
  if (s.strip_blocks) return detail::launch_strip(w, a, s.nsplit, stream, overlap);
  if (s.mma && s.mma_strips) {
    GemmLaunch la = a;
    la.overlap_previous = overlap;
    return detail::launch_mma_strips(w, la, s.nsplit, product_kernel(w, a, s), s.row_tile, stream, s.mma_stage,
                                     s.mma_acts, s.mma_ways, s.mma_l2_ahead);
  }
  return detail::launch_slice_blocks(w, a, s.nsplit, product_kernel(w, a, s), s.row_tile, s.cols,
                                     s.all_slices ? s.nsplit : 1, stream,
                                     s.mma ? detail::mma_threads(s.row_tile) : detail::kThreads,
                                     s.mma ? detail::mma_rows_smem(s.row_tile, s.all_slices) : 0, overlap);
}

}  // namespace

GemmSchedule plan_gemm(const DeviceStrips& w, const GemmLaunch& a, int64_t nsplit, int64_t sms,
                       const GemmForce& force) {
  const int64_t ngroups = w.kp / 32, nstrips = w.np / 32;
  GemmSchedule s;
  s.nsplit = nsplit;
  if (a.m == 1) {
    // Decode runs a block per strip when each warp's share of slices is in flight at once (<= 4
    // tiles), nsplit >= 8 and the strips fit one wave (one per SM; q/o, k/v, qkv), in mode I8 two
    // waves (gate). In mode I8 also wherever a warp's share is longer (down, lm_head): with the
    // group terms computed first its dp4a rounds beat the slice blocks there (H100, M = 1, back to
    // back: down 8.06 vs 10.24 us, lm_head q4 60.43 vs 67.98; gate 8.05 vs 8.68), but not on
    // gate_up's three waves of short shares (12.90 vs 12.66). Otherwise slice blocks: F32 gate,
    // gate_up, down and lm_head (F32 strip blocks: lm_head 102.46 vs 87.30 us on the H200).
    const int64_t share = ceil_div(ngroups, static_cast<int64_t>(detail::strip_warps(nsplit)));
    const bool i8 = a.mode == TB_ACT_I8;
    const bool strips_auto = share <= detail::kStripDepth ? nsplit >= 8 && nstrips <= (i8 ? 2 : 1) * sms : i8;
    s.strip_blocks = detail::strip_fits(nsplit) &&
                     (a.decode == DecodePath::kStripBlocks || (a.decode == DecodePath::kAuto && strips_auto));
    s.overlap_previous = true;
    return s;
  }
  const int mma_tile = mma_row_tile(a.m, force.row_tile, nstrips, sms);
  const int64_t mma_blocks = ceil_div(nstrips, kStripsPerBlock) * ceil_div(a.m, mma_tile);
  const bool fills_twice = mma_blocks >= 2 * sms;
  // Strip blocks of 16 rows that stage their activations: where three fit an SM's shared memory
  // and the blocks fill the GPU twice (gate, 192 blocks on 132 SMs: 15.3 vs 13.3 us with 8-row
  // tiles at M = 16), and nothing forced asks for another form.
  const int64_t strips_per_block = detail::kMmaStripWarps / std::min<int64_t>(nsplit, detail::kMmaStripWarps);
  const int64_t acts_smem = static_cast<int64_t>(detail::mma_strips_smem_bytes(
      detail::kMmaStripActsRows, static_cast<int>(strips_per_block), 0, w.prec, w.kp / 32));
  const bool acts_fit = detail::kMmaStripActsBlocksPerSm * (acts_smem + detail::kSmemReservedPerBlock) <= detail::kSmemPerSm &&
                        ceil_div(nstrips, strips_per_block) >= 2 * sms;
  const bool acts_allowed = force.mma_acts != Toggle::kOff && force.mma_staged != Toggle::kOn && acts_fit &&
                            (force.row_tile == 0 || force.row_tile == detail::kMmaStripActsRows);
  // Up to 96 rows the strip blocks staging activations beat the row-tile blocks also where those
  // fill the GPU twice (lm_head M = 24 / 32 on the H200: 176.9 / 194.9 us against 184.6 / 198.9;
  // M = 64 / 96: 364.4 / 533.0 against 381.8 / 580.8 on 64-row blocks; gate_up M = 64 / 96:
  // 41.7 / 58.6 against 72.1 on 64-row and 65.1 on 32-row blocks); at 128 rows they no longer do
  // (gate_up 76.0 against 65.3 on 32-row blocks, lm_head 699.3 against 676.5 on 64-row blocks;
  // docs/results/h200-2026-12-04-large-m.md).
  // Past 32 rows in q8 the row-tile blocks win again wherever they fill the GPU twice, since
  // their fold moved to shared memory (lm_head M = 33 / 64 / 96: 210.4 / 220.9 / 404.7 us
  // against 256.6 / 368.1 / 536.4; gate_up M = 80 / 96, 288 blocks: 54.1 / 54.9 against 54.6 /
  // 59.2). q4 keeps the strip blocks: they win at 40 rows (lm_head 279.1 against 326.6) and
  // lose at 64 / 96 (398.1 / 584.7 against 342.1 / 569.7), too few points for a rule
  // (docs/results/h200-2026-12-04-smem-fold.md section 3).
  const bool rows_past_32 = w.prec == TB_PREC_Q8 && a.m > 32 && fills_twice;
  const bool strips_auto = a.m <= 8 || (a.m <= kMmaStripsMaxRows && acts_allowed && !rows_past_32) ||
                           (a.m <= 32 && !fills_twice);
  const bool strips = force.mma_strips == Toggle::kOn || (force.mma_strips == Toggle::kAuto && strips_auto);
  const bool mma_auto = strips || a.m > 32 || (a.m >= 16 && fills_twice);
  if (a.mode == TB_ACT_I8 && force.cols != 2 &&
      (force.mma == Toggle::kOn || (force.mma == Toggle::kAuto && mma_auto))) {
    // Integer tensor cores: strip blocks, or row-tile blocks with one strip per warp and every
    // slice per block (the fold in the block; one slice per block only when forced).
    s.mma = true;
    s.mma_strips = strips;
    const bool acts = strips && acts_allowed && (a.m > 8 || force.mma_acts == Toggle::kOn);
    s.row_tile = acts ? detail::kMmaStripActsRows : strips ? mma_strips_row_tile(a.m, force.row_tile) : mma_tile;
    s.all_slices = !strips && force.all_slices != Toggle::kOff;
    s.mma_acts = acts;
    if (acts && a.m > detail::kMmaStripActsRows && std::min<int64_t>(nsplit, detail::kMmaStripWarps) > kActsWays) {
      // Two row tiles or more: two strips a block where three such blocks still fit an SM.
      const int64_t two_strips = static_cast<int64_t>(detail::mma_strips_smem_bytes(
          detail::kMmaStripActsRows, detail::kMmaStripWarps / kActsWays, 0, w.prec, w.kp / 32));
      if (detail::kMmaStripActsBlocksPerSm * (two_strips + detail::kSmemReservedPerBlock) <= detail::kSmemPerSm) {
        s.mma_ways = kActsWays;
      }
    }
    if (strips && !acts) {
      // Staged tiles pay where the blocks take more than one wave (each SM then streams tiles
      // for blocks after its first); in one wave the register ring was faster.
      const int64_t ways = std::min<int64_t>(nsplit, detail::kMmaStripWarps);
      const int64_t blocks = ceil_div(nstrips, detail::kMmaStripWarps / ways) * ceil_div(a.m, static_cast<int64_t>(s.row_tile));
      const bool staged_auto = blocks > detail::mma_strips_blocks_per_sm(s.row_tile) * sms;
      const bool staged = force.mma_staged == Toggle::kOn || (force.mma_staged == Toggle::kAuto && staged_auto);
      s.mma_stage = staged ? detail::kMmaStripStage : 0;
    }
    if (strips) {
      const int64_t ways = s.mma_ways > 0 ? s.mma_ways : std::min<int64_t>(nsplit, detail::kMmaStripWarps);
      const int64_t blocks = ceil_div(nstrips, detail::kMmaStripWarps / ways) * ceil_div(a.m, static_cast<int64_t>(s.row_tile));
      s.overlap_previous = blocks >= 2 * sms && s.mma_ways == 0;
      // Blocks after the first wave stream their tiles: ask them into L2 ahead of the ring's loads,
      // where one row tile holds every row. With two or more, the blocks of a strip's row tiles
      // run side by side and share its tiles through L2 already: there the prefetches cost
      // (lm_head M = 24 / 32 on the H200: 186.9 / 205.3 us with them, 178.8 / 198.0 without).
      const bool one_row_tile = a.m <= s.row_tile;
      if (acts && one_row_tile && blocks > detail::kMmaStripActsBlocksPerSm * sms) {
        s.mma_l2_ahead = detail::kMmaStripL2Ahead;
      }
    }
    return s;
  }
  s.row_tile = row_tile_for(a.m, w.np, force.row_tile);
  const PrefillPlan pl = plan_prefill(a.mode, force, nstrips, ceil_div(a.m, s.row_tile), sms);
  s.cols = pl.cols;
  s.all_slices = pl.all_slices;
  s.rows_inner = pl.rows_inner;
  s.overlap_previous = true;
  return s;
}

Status launch_gemm_schedule(const DeviceStrips& w, const GemmLaunch& a, const GemmSchedule& s,
                            cudaStream_t stream) {
  TB_RETURN_IF_ERROR(detail::check_launch(w, a));
  const int64_t contract_nsplit = fold_plan(w);
  if (s.nsplit < 1 || s.nsplit > contract_nsplit) {
    return Error(TB_INVALID_ARGUMENT, "gemm schedule: %lld slices (expected 1 .. %lld: fewer than the "
                 "contract's split only)", static_cast<long long>(s.nsplit),
                 static_cast<long long>(contract_nsplit));
  }
  if (s.strip_blocks) {
    if (a.m != 1 || !detail::strip_fits(s.nsplit)) {
      return Error(TB_INVALID_ARGUMENT, "gemm schedule: strip blocks need one row and 2 .. 384 slices "
                   "(got %lld rows, %lld slices)", static_cast<long long>(a.m),
                   static_cast<long long>(s.nsplit));
    }
  } else if (!product_kernel(w, a, s)) {
    return Error(TB_INVALID_ARGUMENT, "gemm schedule: the product has no kernel for %lld rows in row "
                 "tiles of %d, %d strips per warp, %s per block, rows %s the k loop, mode %s (row "
                 "tile 1 at one row, else 8 or 16; the measured alternatives are benchmark code)",
                 static_cast<long long>(a.m), s.row_tile, s.cols,
                 s.all_slices ? "every slice" : "one slice", s.rows_inner ? "inside" : "outside",
                 a.mode == TB_ACT_F32 ? "F32" : "I8");
  }
  return launch_planned(w, a, s, stream);
}

const char* gemm_unsupported_reason(int64_t /*n*/, int64_t k) {
  if (k % 32 != 0) {
    return "K % 32 != 0 is not supported by the CUDA gemm (it walks whole groups of 32 k; "
           "the runtime falls back to the CPU)";
  }
  return nullptr;
}

size_t gemm_partial_floats(const DeviceStrips& w, int64_t m) {
  const int64_t nsplit = fold_plan(w);
  return nsplit > 1 ? static_cast<size_t>(nsplit) * static_cast<size_t>(m) * static_cast<size_t>(w.np) : 0;
}

size_t gemm_counter_count(const DeviceStrips& w, int64_t m) {
  const int64_t strip_blocks = ceil_div(w.np / 32, kStripsPerBlock);
  return static_cast<size_t>(strip_blocks * ceil_div(m, m == 1 ? 1 : kRowTile));  // any row tile
}

int64_t gemm_rows_per_launch(const DeviceStrips& w, size_t max_partial_bytes) {
  const int64_t nsplit = fold_plan(w);
  if (nsplit == 1) return kMaxRowsPerLaunch;
  int64_t rows = static_cast<int64_t>(max_partial_bytes / (static_cast<size_t>(nsplit) * w.np * 4));
  if (rows >= kRowTileLarge) rows -= rows % kRowTileLarge;
  if (rows > kMaxRowsPerLaunch) rows = kMaxRowsPerLaunch;
  return rows < 1 ? 1 : rows;
}

Result<GemmSchedule> device_plan(const DeviceStrips& w, const GemmLaunch& a) {
  auto sms = detail::device_sms();
  if (!sms.ok()) return sms.status();
  auto mma = detail::device_has_int_mma();
  if (!mma.ok()) return mma.status();
  GemmForce force;
  if (!*mma) force.mma = Toggle::kOff;  // before sm_80: the dp4a slice blocks
  return plan_gemm(w, a, fold_plan(w), *sms, force);
}

Status launch_gemm(const DeviceStrips& w, const GemmLaunch& a, cudaStream_t stream) {
  TB_RETURN_IF_ERROR(detail::check_launch(w, a));
  auto s = device_plan(w, a);
  if (!s.ok()) return s.status();
  return launch_planned(w, a, *s, stream);
}

}  // namespace twinbit::cuda
