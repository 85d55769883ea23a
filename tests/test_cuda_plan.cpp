// The CUDA gemm's launch choice (backends/cuda/gemm_plan.h) on the host, without a device: the
// plan's rules on the measured shapes, every schedule it can choose has a kernel in the library,
// and the library refuses (INVALID_ARGUMENT, before any device call) the measured-slower forms,
// which only the benchmark compiles (bench/cuda/gemm_variants.h).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#ifdef TWINBIT_HAS_CUDA_BACKEND
#include "backends/cuda/gemm_internal.h"
#include "backends/cuda/gemm_plan.h"
#include "core/numerics.h"

namespace twinbit::cuda_test {
namespace {

using cuda::DecodePath;
using cuda::GemmSchedule;

cuda::DeviceStrips strips_of(tb_prec prec, int64_t n, int64_t k) {
  cuda::DeviceStrips w;
  w.prec = prec;
  w.n = n;
  w.k = k;
  w.np = pad32(n);
  w.kp = pad32(k);
  w.n_total = n;
  return w;
}

GemmSchedule plan(int64_t n, int64_t k, int64_t m, tb_act_mode mode, int64_t sms = 132,
                  DecodePath decode = DecodePath::kAuto, tb_prec prec = TB_PREC_Q8) {
  cuda::GemmLaunch a;
  a.mode = mode;
  a.m = m;
  a.decode = decode;
  return cuda::plan_gemm(strips_of(prec, n, k), a, split_plan(n, k), sms);
}

GemmSchedule plan_q4(int64_t n, int64_t k, int64_t m, tb_act_mode mode) {
  return plan(n, k, m, mode, 132, DecodePath::kAuto, TB_PREC_Q4);
}

std::string describe(const GemmSchedule& s) {
  if (s.mma && s.mma_strips) {
    return "tensor-core strip blocks, row tile " + std::to_string(s.row_tile) + (s.mma_stage > 0 ? ", staged" : "") +
           (s.mma_acts ? ", activations staged" : "") +
           (s.mma_ways > 0 ? ", " + std::to_string(s.mma_ways) + " warps per strip" : "") +
           (s.mma_l2_ahead > 0 ? ", L2 " + std::to_string(s.mma_l2_ahead) + " ahead" : "");
  }
  if (s.mma) {
    return "tensor cores, row tile " + std::to_string(s.row_tile) + ", " +
           (s.all_slices ? "every slice" : "one slice");
  }
  return s.strip_blocks ? std::string("strip blocks")
                        : "row tile " + std::to_string(s.row_tile) + ", " + std::to_string(s.cols) +
                              " strips per warp, " + (s.all_slices ? "every slice" : "one slice") +
                              ", rows " + (s.rows_inner ? "inside" : "outside");
}

}  // namespace

TEST_CASE("cuda gemm plan on 132 SMs: decode of q/o, k/v, qkv runs strip blocks; in mode F32 gate, gate_up, down, lm_head slice blocks, in mode I8 strip blocks except gate_up") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2048, 2048}, {1024, 2048}, {4096, 2048}}) {
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      CHECK_MESSAGE(plan(n, k, 1, mode).strip_blocks, "N=" << n << " K=" << k);
    }
  }
  for (auto [n, k] : {std::pair<int64_t, int64_t>{6144, 2048}, {12288, 2048}, {2048, 6144}, {151936, 2048}}) {
    const GemmSchedule s = plan(n, k, 1, TB_ACT_F32);
    CHECK_MESSAGE(!s.strip_blocks, "N=" << n << " K=" << k);
    CHECK(s.row_tile == 1);
    CHECK(s.cols == 1);
    CHECK_FALSE(s.all_slices);
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {  // I8: gate_up's three waves of short shares stay on slice blocks
      CHECK_MESSAGE(plan(n, k, 1, TB_ACT_I8, 132, DecodePath::kAuto, prec).strip_blocks == (n != 12288),
                    "I8 N=" << n << " K=" << k);
    }
  }
  // Where the strip kernel cannot run (one slice: N past 2^19 columns, or K of one group), slice blocks.
  CHECK_FALSE(plan(int64_t{1} << 20, 2048, 1, TB_ACT_I8).strip_blocks);
  CHECK_FALSE(plan(4096, 32, 1, TB_ACT_I8).strip_blocks);
  // Forced either way, both decode kernels are the product's.
  CHECK_FALSE(plan(2048, 2048, 1, TB_ACT_F32, 132, DecodePath::kSliceBlocks).strip_blocks);
  CHECK(plan(151936, 2048, 1, TB_ACT_F32, 132, DecodePath::kStripBlocks).strip_blocks);
}

TEST_CASE("cuda gemm plan on 132 SMs, M32: F32 lm_head two strips per warp in row tiles of 16, one slice; gate_up every slice with rows inside; q/o one slice, rows outside. I8: lm_head and gate_up on tensor-core strip blocks of 16 rows staging their activations (gate_up: two strips a block)") {
  GemmSchedule s = plan(151936, 2048, 32, TB_ACT_F32);
  CHECK(describe(s) == "row tile 16, 2 strips per warp, one slice, rows outside");
  s = plan(151936, 2048, 32, TB_ACT_I8);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 16, activations staged");
  s = plan(12288, 2048, 32, TB_ACT_F32);
  CHECK(describe(s) == "row tile 8, 1 strips per warp, every slice, rows inside");
  s = plan(12288, 2048, 32, TB_ACT_I8);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 16, activations staged, 4 warps per strip");
  s = plan(2048, 2048, 32, TB_ACT_F32);
  CHECK(describe(s) == "row tile 8, 1 strips per warp, one slice, rows outside");
}

TEST_CASE("cuda gemm plan, mode I8 on 132 SMs: tensor cores for every M > 1: strip blocks up to 8 rows, up to 96 where 16-row blocks staging their activations fit (in q8 only up to 32 where row-tile blocks fill the GPU twice), up to 32 where row-tile blocks would not fill the GPU twice, in tiles of 8 rows up to 8, 16 staging activations above (tiles into L2 ahead past one wave of one row tile); row-tile blocks otherwise (the smallest of 8/16/32 holding M; past 32 rows 64, or 32 where there would be fewer than two 64-row blocks an SM); never at M = 1 or in mode F32; forced on or off") {
  for (int64_t m : {33, 64, 96}) {  // gate_up: 16-row strip blocks staging activations, two strips a block
    const std::string staged = "tensor-core strip blocks, row tile 16, activations staged";
    CHECK(describe(plan_q4(12288, 2048, m, TB_ACT_I8)) == staged + ", 4 warps per strip");
    CHECK(describe(plan_q4(151936, 2048, m, TB_ACT_I8)) == staged);
    // q8: row-tile blocks wherever they fill the GPU twice (gate_up: 96 blocks per 32-row tile,
    // three tiles at 96 rows; lm_head always); strip blocks where they would not.
    CHECK_MESSAGE(describe(plan(12288, 2048, m, TB_ACT_I8)) ==
                      (m == 96 ? "tensor cores, row tile 32, every slice" : staged + ", 4 warps per strip"), "M=" << m);
    CHECK(describe(plan(151936, 2048, m, TB_ACT_I8)) == "tensor cores, row tile 64, every slice");
  }
  // gate_up: 96 blocks of 4 strips per row tile; 64-row tiles reach two blocks an SM (264) from
  // M = 129 on (three row tiles). lm_head (1187 per row tile) always.
  for (int64_t m : {97, 128, 129, 256, 320, 321, 512}) {
    CHECK_MESSAGE(describe(plan(12288, 2048, m, TB_ACT_I8)) ==
                      "tensor cores, row tile " + std::to_string(m <= 128 ? 32 : 64) + ", every slice", "M=" << m);
    CHECK(describe(plan(151936, 2048, m, TB_ACT_I8)) == "tensor cores, row tile 64, every slice");
    CHECK_FALSE(plan(12288, 2048, m, TB_ACT_F32).mma);
  }
  for (int64_t m : {2, 8, 9, 16, 17, 32}) {
    // 384 strips of 16 slices: one block each per row tile; one wave (3 blocks per SM of 8-row
    // tiles) up to 8 rows, then 16-row tiles staging their activations (3 blocks per SM).
    CHECK(describe(plan(12288, 2048, m, TB_ACT_I8)) ==
          std::string("tensor-core strip blocks, row tile ") +
              (m <= 8 ? "8" : m <= 16 ? "16, activations staged" : "16, activations staged, 4 warps per strip"));
  }
  for (int64_t m : {2, 5, 8}) CHECK(describe(plan(151936, 2048, m, TB_ACT_I8)) == "tensor-core strip blocks, row tile 8, staged");
  for (int64_t m : {9, 16}) {  // 4 slices: 4 warps per strip, two strips a block, many waves, one row tile
    CHECK(describe(plan(151936, 2048, m, TB_ACT_I8)) == "tensor-core strip blocks, row tile 16, activations staged, L2 4 ahead");
  }
  for (int64_t m : {17, 32}) {  // two row tiles: their blocks share each tile through L2 already
    CHECK(describe(plan(151936, 2048, m, TB_ACT_I8)) == "tensor-core strip blocks, row tile 16, activations staged");
  }
  CHECK_FALSE(plan(151936, 2048, 1, TB_ACT_I8).mma);
  cuda::GemmLaunch a;
  a.mode = TB_ACT_I8;
  a.m = 32;
  cuda::GemmForce force;
  force.mma = cuda::Toggle::kOff;
  GemmSchedule s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 151936, 2048), a, split_plan(151936, 2048), 132, force);
  CHECK(describe(s) == "row tile 16, 2 strips per warp, every slice, rows outside");
  a.m = 2;
  force.mma = cuda::Toggle::kOn;
  force.mma_strips = cuda::Toggle::kOff;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, force);
  CHECK(describe(s) == "tensor cores, row tile 8, every slice");
  force.all_slices = cuda::Toggle::kOff;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, force);
  CHECK(describe(s) == "tensor cores, row tile 8, one slice");
  a.m = 40;
  force = {};
  force.mma_strips = cuda::Toggle::kOn;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 151936, 2048), a, split_plan(151936, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 16, activations staged");
  force.mma_acts = cuda::Toggle::kOff;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 151936, 2048), a, split_plan(151936, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 16, staged");
  force.mma_acts = cuda::Toggle::kAuto;
  force.row_tile = 32;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 151936, 2048), a, split_plan(151936, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 32, staged");
  force.mma_staged = cuda::Toggle::kOff;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 151936, 2048), a, split_plan(151936, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 32");
}

TEST_CASE("cuda gemm plan: past 16 rows the strip blocks that stage activations take two strips (4 warps each) where three such blocks still fit an SM") {
  // gate_up (16 slices): 8 warps per strip at 16 rows, 4 from 17 rows on.
  CHECK(describe(plan(12288, 2048, 16, TB_ACT_I8)) == "tensor-core strip blocks, row tile 16, activations staged");
  for (int64_t m : {17, 24, 32}) {
    CHECK(describe(plan(12288, 2048, m, TB_ACT_I8)) ==
          "tensor-core strip blocks, row tile 16, activations staged, 4 warps per strip");
  }
  // K = 2304: one strip's blocks fit three to an SM (77.3 KiB each with the reserve), two strips'
  // (79.4 KiB) do not.
  CHECK(describe(plan(12288, 2304, 32, TB_ACT_I8)) == "tensor-core strip blocks, row tile 16, activations staged");
  CHECK(describe(plan(12288, 2304, 16, TB_ACT_I8)) == "tensor-core strip blocks, row tile 16, activations staged");
  // lm_head (4 slices) already runs 4 warps per strip: the plan does not set them.
  CHECK(plan(151936, 2048, 32, TB_ACT_I8).mma_ways == 0);
  // The launch refuses warps per strip that exceed the slices or leave a block's warps unused
  // (before it touches a device).
  cuda::GemmLaunch a;
  a.mode = TB_ACT_I8;
  a.m = 32;
  const cuda::DeviceStrips w = strips_of(TB_PREC_Q8, 12288, 2048);
  const auto kernel = cuda::detail::mma_strips_kernel(TB_PREC_Q8, 16);
  REQUIRE((kernel != nullptr));
  for (int ways : {3, 16, -1}) {
    const Status st = cuda::detail::launch_mma_strips(w, a, split_plan(12288, 2048), kernel, 16, nullptr, 0, false, ways);
    CHECK(st.code() == TB_INTERNAL);
    CHECK(st.to_string().find("warps per strip") != std::string::npos);
  }
  const Status few = cuda::detail::launch_mma_strips(w, a, 2, kernel, 16, nullptr, 0, false, 4);  // 2 slices
  CHECK(few.code() == TB_INTERNAL);
  const Status behind = cuda::detail::launch_mma_strips(w, a, split_plan(12288, 2048), kernel, 16, nullptr, 0, false, 0, -1);
  CHECK(behind.code() == TB_INTERNAL);
  CHECK(behind.to_string().find("L2 -1 groups ahead") != std::string::npos);
  // The kernel that asks tiles into L2 exists for the activation-staging blocks alone.
  CHECK((cuda::detail::mma_strips_kernel(TB_PREC_Q8, 16, 0, true, true) != nullptr));
  CHECK((cuda::detail::mma_strips_kernel(TB_PREC_Q4, 16, 0, true, true) != nullptr));
  CHECK((cuda::detail::mma_strips_kernel(TB_PREC_Q8, 16, 0, false, true) == nullptr));
  CHECK((cuda::detail::mma_strips_kernel(TB_PREC_Q8, 8, 4, false, true) == nullptr));
}

TEST_CASE("cuda gemm plan: tensor-core strip blocks start during the kernel before them (dependent launch) where they are two per SM or more and not given two strips by the plan; decode and the slice blocks always; never the row-tile tensor-core blocks") {
  CHECK(plan(12288, 2048, 2, TB_ACT_I8).overlap_previous);     // gate_up: 384 blocks
  CHECK(plan(12288, 2048, 16, TB_ACT_I8).overlap_previous);
  CHECK_FALSE(plan(12288, 2048, 32, TB_ACT_I8).overlap_previous);  // two strips a block
  CHECK(plan(151936, 2048, 8, TB_ACT_I8).overlap_previous);    // lm_head
  CHECK(plan(6144, 2048, 16, TB_ACT_I8).overlap_previous);     // gate: two 8-row tiles, 384 blocks
  CHECK_FALSE(plan(2048, 2048, 16, TB_ACT_I8).overlap_previous);   // q/o: 128 blocks
  CHECK_FALSE(plan(2048, 6144, 16, TB_ACT_I8).overlap_previous);   // down: 128 blocks
  CHECK_FALSE(plan(4096, 2048, 32, TB_ACT_I8).overlap_previous);  // qkv: 256 blocks, under 2 x 132
  CHECK(plan(151936, 2048, 32, TB_ACT_I8).overlap_previous);  // lm_head: 4 slices, two strips by nsplit
  CHECK(plan_q4(151936, 2048, 96, TB_ACT_I8).overlap_previous);  // lm_head q4: strip blocks up to 96 rows
  CHECK_FALSE(plan_q4(151936, 2048, 97, TB_ACT_I8).overlap_previous);  // row-tile blocks
  CHECK_FALSE(plan(151936, 2048, 33, TB_ACT_I8).overlap_previous);  // q8: row-tile blocks past 32 rows
  CHECK(plan(12288, 2048, 1, TB_ACT_I8).overlap_previous);    // decode: slice blocks
  CHECK(plan(2048, 2048, 1, TB_ACT_F32).overlap_previous);     // decode: strip blocks
  CHECK(plan(12288, 2048, 8, TB_ACT_F32).overlap_previous);    // prefill slice blocks
  CHECK(plan(151936, 2048, 32, TB_ACT_F32).overlap_previous);
  cuda::GemmLaunch a;  // mode I8 on the dp4a slice blocks (devices before sm_80, or forced)
  a.mode = TB_ACT_I8;
  a.m = 16;
  cuda::GemmForce dp4a;
  dp4a.mma = cuda::Toggle::kOff;
  const GemmSchedule s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, dp4a);
  CHECK_FALSE(s.mma);
  CHECK(s.overlap_previous);
  const GemmSchedule rows = plan(151936, 2048, 128, TB_ACT_I8);  // row-tile tensor-core blocks
  CHECK((rows.mma && !rows.mma_strips));
  CHECK_FALSE(rows.overlap_previous);
}

TEST_CASE("cuda gemm plan: 16-row strip blocks stage their activations only where three such blocks fit an SM's shared memory and the blocks fill the GPU twice; forced off, or a forced form without them, gives the other forms") {
  // K = 2048: 34.8 KiB of slots and outputs + 36 KiB of activations, three blocks in 228 KiB.
  CHECK(plan(12288, 2048, 16, TB_ACT_I8).mma_acts);
  CHECK(plan(12288, 2304, 16, TB_ACT_I8).mma_acts);
  // K = 2560, 6144: three blocks no longer fit; the 8-row tiles (staged weights) as before.
  for (int64_t k : {2560, 6144}) {
    const GemmSchedule s = plan(12288, k, 16, TB_ACT_I8);
    CHECK_FALSE(s.mma_acts);
    CHECK(describe(s) == "tensor-core strip blocks, row tile 8, staged");
  }
  // 2048 and 6144 columns: 64 and 192 strip blocks do not fill 132 SMs twice.
  CHECK_FALSE(plan(2048, 2048, 16, TB_ACT_I8).mma_acts);
  CHECK_FALSE(plan(6144, 2048, 16, TB_ACT_I8).mma_acts);
  CHECK(plan(6144, 2048, 16, TB_ACT_I8, 96).mma_acts);
  CHECK(plan(2048, 2048, 16, TB_ACT_I8, 32).mma_acts);
  // Up to 8 rows the 8-row tiles stay (no activations staged) unless forced.
  CHECK_FALSE(plan(12288, 2048, 8, TB_ACT_I8).mma_acts);
  cuda::GemmLaunch a;
  a.mode = TB_ACT_I8;
  a.m = 4;
  cuda::GemmForce force;
  force.mma_acts = cuda::Toggle::kOn;
  GemmSchedule s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 16, activations staged");
  a.m = 16;
  force.mma_acts = cuda::Toggle::kAuto;
  force.mma_staged = cuda::Toggle::kOn;  // staged weights have no form with staged activations
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 8, staged");
  force = {};
  force.row_tile = 8;
  s = cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, force);
  CHECK(describe(s) == "tensor-core strip blocks, row tile 8, staged");
  // Every planned form has a product kernel.
  for (int64_t m : {2, 9, 16, 24, 32}) {
    const GemmSchedule p = plan(12288, 2048, m, TB_ACT_I8);
    CHECK(p.mma_strips);
    CHECK((cuda::detail::mma_strips_kernel(TB_PREC_Q8, p.row_tile, p.mma_stage, p.mma_acts) != nullptr));
    CHECK((cuda::detail::mma_strips_kernel(TB_PREC_Q4, p.row_tile, p.mma_stage, p.mma_acts) != nullptr));
  }
}

TEST_CASE("cuda gemm plan: tensor-core strip blocks stage their weight tiles in shared memory when they take more than one wave, on any SM count; forced either way") {
  // gate_up at 2 rows: 384 blocks, one wave of 3 per SM on 132 SMs, two waves on 100.
  CHECK(plan(12288, 2048, 2, TB_ACT_I8, 132).mma_stage == 0);
  CHECK(plan(12288, 2048, 2, TB_ACT_I8, 100).mma_stage == cuda::detail::kMmaStripStage);
  CHECK(plan(12288, 2048, 2, TB_ACT_I8, 128).mma_stage == 0);   // 384 = 3 x 128: exactly one wave
  CHECK(plan(12288, 2048, 2, TB_ACT_I8, 127).mma_stage == cuda::detail::kMmaStripStage);
  cuda::GemmLaunch a;
  a.mode = TB_ACT_I8;
  a.m = 2;
  cuda::GemmForce force;
  force.mma_staged = cuda::Toggle::kOn;
  CHECK(cuda::plan_gemm(strips_of(TB_PREC_Q8, 12288, 2048), a, split_plan(12288, 2048), 132, force).mma_stage ==
        cuda::detail::kMmaStripStage);
  force.mma_staged = cuda::Toggle::kOff;
  a.m = 8;
  CHECK(cuda::plan_gemm(strips_of(TB_PREC_Q8, 151936, 2048), a, split_plan(151936, 2048), 132, force).mma_stage == 0);
  // Never outside the strip blocks.
  CHECK(plan(151936, 2048, 32, TB_ACT_I8).mma_stage == 0);
  CHECK(plan(151936, 2048, 1, TB_ACT_I8).mma_stage == 0);
}

TEST_CASE("cuda gemm plan: every schedule it chooses has a product kernel, N{1..151936} x K{32,2048,6144} x M{1..1024} x SMs{1,16,132,1024}, q8 q4 x f32 i8") {
  int64_t plans = 0;
  for (int64_t sms : {1, 16, 132, 1024}) {
    for (int64_t n : {1, 33, 1000, 2048, 12288, 65536, 65537, 70000, 151936}) {
      for (int64_t k : {32, 2048, 6144}) {
        for (int64_t m : {1, 2, 8, 9, 16, 17, 33, 64, 256, 1024}) {
          for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
            for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
              cuda::GemmLaunch a;
              a.mode = mode;
              a.m = m;
              const GemmSchedule s = cuda::plan_gemm(strips_of(prec, n, k), a, split_plan(n, k), sms);
              ++plans;
              if (s.strip_blocks) {
                CHECK(m == 1);
                continue;
              }
              if (s.mma) CHECK((m > 1 && mode == TB_ACT_I8));
              if (m > 64 && mode == TB_ACT_I8) CHECK(s.mma);
              const bool has = m == 1 ? cuda::detail::decode_slice_kernel(prec, mode) != nullptr && s.row_tile == 1
                               : s.mma_strips ? s.mma && cuda::detail::mma_strips_kernel(prec, s.row_tile, s.mma_stage, s.mma_acts, s.mma_l2_ahead > 0) != nullptr && s.cols == 1
                               : s.mma ? cuda::detail::mma_kernel(prec, s.row_tile, s.all_slices) != nullptr && s.cols == 1
                                       : cuda::detail::prefill_kernel(prec, mode, s.row_tile, s.cols, s.all_slices,
                                                                      s.rows_inner) != nullptr;
              CHECK_MESSAGE(has, "N=" << n << " K=" << k << " M=" << m << " SMs=" << sms << ": " << describe(s));
            }
          }
        }
      }
    }
  }
  MESSAGE(plans << " plans checked");
}

TEST_CASE("cuda gemm schedule without a product kernel is INVALID_ARGUMENT naming it, before any device call: two strips every slice F32, two strips one slice I8, one strip rows inner one slice, one strip rows outer every slice F32, row tile 4") {
  // Forms the benchmark measured slower; only bench/cuda/gemm_variants.cu compiles them.
  const cuda::DeviceStrips w = [] {
    cuda::DeviceStrips d = strips_of(TB_PREC_Q8, 1000, 2048);
    d.codes = reinterpret_cast<const uint8_t*>(uintptr_t{4096});  // never dereferenced: the
    d.scales = reinterpret_cast<const uint16_t*>(uintptr_t{8192});  // launch is refused first
    return d;
  }();
  static float y[4];
  static float x[4];
  static int8_t xq[4];
  struct Case {
    tb_act_mode mode;
    GemmSchedule s;
  };
  const int64_t nsplit = split_plan(1000, 2048);
  const Case cases[] = {
      {TB_ACT_F32, {nsplit, false, 8, 2, true, false}},
      {TB_ACT_I8, {nsplit, false, 16, 2, false, false}},
      {TB_ACT_F32, {nsplit, false, 8, 1, false, true}},
      {TB_ACT_F32, {nsplit, false, 8, 1, true, false}},
      {TB_ACT_F32, {nsplit, false, 4, 1, false, false}},
      {TB_ACT_I8, {nsplit, false, 8, 1, false, true}},
      {TB_ACT_F32, {nsplit, false, 32, 1, true, false, true}},   // tensor cores in mode F32
      {TB_ACT_I8, {nsplit, false, 12, 1, true, false, true}},    // a row tile they lack
      {TB_ACT_I8, {nsplit, false, 32, 2, true, false, true}},    // two strips per warp
  };
  for (const Case& c : cases) {
    cuda::GemmLaunch a;
    a.mode = c.mode;
    a.m = 33;
    a.x = x;
    a.xq = xq;
    a.xd = x;
    a.y = y;
    const Status st = cuda::launch_gemm_schedule(w, a, c.s, nullptr);
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("the product has no kernel") != std::string::npos, st.to_string());
    const bool compiled = c.s.mma ? c.mode == TB_ACT_I8 && c.s.cols == 1 &&
                                        (c.s.mma_strips ? cuda::detail::mma_strips_kernel(TB_PREC_Q8, c.s.row_tile)
                                                        : cuda::detail::mma_kernel(TB_PREC_Q8, c.s.row_tile, c.s.all_slices)) != nullptr
                                  : cuda::detail::prefill_kernel(TB_PREC_Q8, c.mode, c.s.row_tile, c.s.cols,
                                                                 c.s.all_slices, c.s.rows_inner) != nullptr;
    CHECK_FALSE(compiled);
  }
  // A slice count above the contract's, and strip blocks at M > 1, are refused the same way.
  cuda::GemmLaunch a;
  a.mode = TB_ACT_F32;
  a.m = 33;
  a.x = x;
  a.y = y;
  CHECK(cuda::launch_gemm_schedule(w, a, {nsplit + 1, false, 8, 1, false, false}, nullptr).code() == TB_INVALID_ARGUMENT);
  CHECK(cuda::launch_gemm_schedule(w, a, {nsplit, true, 1, 1, false, false}, nullptr).code() == TB_INVALID_ARGUMENT);
}

}  // namespace twinbit::cuda_test
#endif
