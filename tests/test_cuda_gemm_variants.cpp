// The CUDA gemm's benchmark-only schedules (bench/cuda/gemm_variants.h) against the scalar
// reference, bit for bit: the benchmark times them against the product's schedule, and a time
// only means something if the bits are right too. Runs only where a CUDA device is present (ctest
// entry "gpu"; SKIPPED elsewhere); compiled where the benchmark's CUDA variants are built.
// TWINBIT_VARIANT_FILTER=TEXT keeps only the variants whose name contains TEXT (a sanitizer run
// over a few kernels: compute-sanitizer --tool racecheck twinbit_tests --test-case='*variant*').
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/op_checks.h"
#include "tests/test_cuda_support.h"
#ifdef TWINBIT_HAS_CUDA_GEMM_VARIANTS
#include "backends/cuda/cuda_backend.h"
#include "bench/cuda/gemm_variants.h"
#endif

namespace twinbit::cuda_test {

#ifdef TWINBIT_HAS_CUDA_GEMM_VARIANTS
namespace {

// Device memory for one test launch, freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(cudaMalloc(&p, std::max<size_t>(bytes, 4)) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// The tensor-core row-tile blocks of `tile` rows over every slice, forced (the base of the
// row-tile variants).
void every_slice_rows(bench::GemmVariant& v, int tile) {
  v.force.mma = cuda::Toggle::kOn;
  v.force.mma_strips = cuda::Toggle::kOff;
  v.force.row_tile = tile;
  v.force.all_slices = cuda::Toggle::kOn;
}

// The tensor-core strip blocks of `tile` rows, forced.
void strip_blocks(bench::GemmVariant& v, int tile) {
  v.force.mma = cuda::Toggle::kOn;
  v.force.mma_strips = cuda::Toggle::kOn;
  v.force.row_tile = tile;
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("gpu gemm every benchmark variant (bench/cuda/gemm_variants.h) equals reference bits, q8 q4 x f32 i8, (N,K) {(1000,2048),(257,6144)}, M 1, 2 and 33") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  using bench::GemmVariant;
  using cuda::Toggle;
  struct Variant {
    const char* name;
    int64_t m;
    cuda::DecodePath decode;
    void (*set)(GemmVariant&);
    bool f32_only;
  };
  constexpr cuda::DecodePath kAuto = cuda::DecodePath::kAuto, kSlice = cuda::DecodePath::kSliceBlocks;
  const Variant variants[] = {
      {"decode: strip blocks", 1, cuda::DecodePath::kStripBlocks, [](GemmVariant&) {}, false},
      {"decode: strip blocks in the other form (terms first or in turn)", 1, cuda::DecodePath::kStripBlocks,
       [](GemmVariant& v) { v.strip_other_form = true; }, false},
      {"decode: slice blocks", 1, kSlice, [](GemmVariant&) {}, false},
      {"decode: slice blocks unpacked", 1, kSlice, [](GemmVariant& v) { v.unpacked = true; }, false},
      {"decode: merged slices", 1, kSlice, [](GemmVariant& v) { v.merged = true; }, false},
      {"decode: prefetch 2", 1, kSlice, [](GemmVariant& v) { v.depth = 2; }, false},
      {"decode: merged, prefetch 2", 1, kSlice, [](GemmVariant& v) {
         v.merged = true;
         v.depth = 2;
       }, false},
      {"decode: merged, unpacked", 1, kSlice, [](GemmVariant& v) {
         v.merged = true;
         v.unpacked = true;
       }, false},
      {"decode: the other code conversion (q8 I2F, q4 byte permute)", 1, kSlice, [](GemmVariant& v) { v.alt_codes = true; }, true},
      {"prefill: one strip, rows outer, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 1;
         v.force.rows_inner = Toggle::kOff;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: one strip, rows outer, every slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 1;
         v.force.rows_inner = Toggle::kOff;
         v.force.all_slices = Toggle::kOn;
       }, false},
      {"prefill: one strip, rows inner, every slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 1;
         v.force.rows_inner = Toggle::kOn;
         v.force.all_slices = Toggle::kOn;
       }, false},
      {"prefill: one strip, rows inner, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 1;
         v.force.rows_inner = Toggle::kOn;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: two strips, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 2;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: two strips, every slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 2;
         v.force.all_slices = Toggle::kOn;
       }, false},
      {"prefill: two strips unpacked, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 2;
         v.unpacked = true;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: two strips unpacked, every slice", 33, kAuto, [](GemmVariant& v) {
         v.force.cols = 2;
         v.unpacked = true;
         v.force.all_slices = Toggle::kOn;
       }, false},
      {"prefill: row tile 16", 33, kAuto, [](GemmVariant& v) { v.force.row_tile = 16; }, false},
      {"prefill: row tile 16, two strips, every slice", 33, kAuto, [](GemmVariant& v) {
         v.force.row_tile = 16;
         v.force.cols = 2;
         v.force.all_slices = Toggle::kOn;
       }, false},
      // Mode I8 at M > 1: the dp4a slice blocks and the tensor cores, each forced, at every
      // tensor-core row tile and slice choice.
      {"prefill: dp4a, plan's schedule", 33, kAuto, [](GemmVariant& v) { v.force.mma = Toggle::kOff; }, false},
      {"prefill: dp4a, one strip, every slice", 33, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOff;
         v.force.cols = 1;
         v.force.all_slices = Toggle::kOn;
       }, false},
      {"prefill: dp4a, one strip, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOff;
         v.force.cols = 1;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: mma, plan's tile and slices", 33, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOff;
       }, false},
      {"prefill: mma, row tile 8, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOff;
         v.force.row_tile = 8;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: mma, row tile 16, every slice", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 16);
       }, false},
      {"prefill: mma, row tile 32, every slice", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 32);
       }, false},
      {"prefill: mma, row tile 64, one slice", 33, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOff;
         v.force.row_tile = 64;
         v.force.all_slices = Toggle::kOff;
       }, false},
      {"prefill: mma, row tile 64, every slice", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 64);
       }, false},
      {"prefill: mma, row tile 8, every slice, M 2", 2, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 8);
       }, false},
      {"prefill: mma row tile 32, two warps per strip, M 33", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 32);
         v.mma_row_warps = 2;
         v.mma_rows_min_blocks = 2;
       }, false},
      {"prefill: mma row tile 16, two warps per strip, M 11", 11, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 16);
         v.mma_row_warps = 2;
         v.mma_rows_min_blocks = 2;
       }, false},
      {"prefill: mma row tile 32, ptxas's registers, M 20", 20, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 32);
         v.mma_rows_min_blocks = 0;
       }, false},
      {"prefill: mma row tile 64, register fold, M 33", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 64);
         v.mma_reg_fold = true;
       }, false},
      {"prefill: mma row tile 32, register fold, M 33", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 32);
         v.mma_reg_fold = true;
       }, false},
      {"prefill: mma row tile 64, ptxas's registers, M 33", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 64);
         v.mma_rows_min_blocks = 0;
       }, false},
      {"prefill: mma row tile 64, unbiased mmas, M 33", 33, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 64);
         v.mma_unbiased = true;
       }, false},
      // The tensor-core strip blocks: every row tile, partial tiles, one and several row tiles,
      // and the mmas in program order (benchmark instantiation).
      {"prefill: mma strips, plan's tile, M 2", 2, kAuto, [](GemmVariant& v) { v.force.mma_strips = Toggle::kOn; }, false},
      {"prefill: mma strips, row tile 8, M 33", 33, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 8);
       }, false},
      {"prefill: mma strips, row tile 16, M 17", 17, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
       }, false},
      {"prefill: mma strips, row tile 32, M 33", 33, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 32);
       }, false},
      {"prefill: mma strips ordered, row tile 32, M 31", 31, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_ordered = true;
       }, false},
      {"prefill: mma strips ordered, row tile 8, M 5", 5, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_ordered = true;
       }, false},
      {"prefill: mma strips, register ring rotated by copies, M 3", 3, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_ring = cuda::detail::kRingRotate;
       }, false},
      {"prefill: mma strips, register ring refilled early, row tile 16, M 17", 17, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_ring = cuda::detail::kRingEarly;
       }, false},
      {"prefill: mma strips, the product's staged form forced, M 7", 7, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.force.mma_staged = Toggle::kOn;
       }, false},
      {"prefill: mma strips of 16 rows held to 3 blocks per SM, register ring, M 19", 19, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_strips_min_blocks = 3;
       }, false},
      {"prefill: mma strips of 16 rows held to 3 blocks per SM, 4 staged, M 12", 12, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_strips_min_blocks = 3;
         v.mma_stage = 4;
       }, false},
      {"prefill: mma, the plan's kernel in the other kLean form, M 9", 9, kAuto, [](GemmVariant& v) { v.mma_unlean = true; }, false},
      {"prefill: mma strips in the other kLean form, M 3", 3, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_unlean = true;
       }, false},
      {"prefill: mma row tile 32 in the other kLean form, M 30", 30, kAuto, [](GemmVariant& v) {
         every_slice_rows(v, 32);
         v.mma_unlean = true;
       }, false},
      {"prefill: mma strips of 16 rows held to 3 blocks per SM, activations staged, M 21", 21, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_strips_min_blocks = 3;
         v.mma_acts = true;
       }, false},
      {"prefill: mma strips, activations forced off (staged on no shape here: a check of the toggle), M 16", 16, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.force.mma_acts = Toggle::kOff;
       }, false},
      {"prefill: mma strips, activations forced on where they do not fit (the plan's other form), M 4", 4, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.force.mma_acts = Toggle::kOn;
       }, false},
      {"prefill: mma strips in the other kLean form, M 13", 13, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_unlean = true;
       }, false},
      {"prefill: mma strips, activations staged, M 2", 2, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_acts = true;
       }, false},
      {"prefill: mma strips, 4 warps per strip, M 6", 6, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_ways = 4;
       }, false},
      {"prefill: mma strips, 2 warps per strip, M 30", 30, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_ways = 2;
       }, false},
      {"prefill: mma strips, activations staged, row tile 16, M 29", 29, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_acts = true;
       }, false},
      {"prefill: mma strips, pair loads, M 5", 5, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_pairs = true;
       }, false},
      {"prefill: mma strips, activations staged, pair loads, M 27", 27, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_acts = true;
         v.mma_pairs = true;
       }, false},
      {"prefill: mma strips, the fold by floats, M 11", 11, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_fold1 = true;
       }, false},
      {"prefill: mma strips, activations staged, the fold by floats, M 32", 32, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_acts = true;
         v.mma_fold1 = true;
       }, false},
      {"prefill: mma strips, activations staged, tiles into L2 2 ahead, M 9", 9, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_acts = true;
         v.mma_l2_ahead = 2;
       }, false},
      {"prefill: mma strips, activations staged, tiles into L2 8 ahead, M 31", 31, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_acts = true;
         v.mma_l2_ahead = 8;
       }, false},
      {"prefill: mma strips, row tile 32, the fold by floats, M 33", 33, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 32);
         v.mma_fold1 = true;
       }, false},
      {"prefill: mma strips, 4 tiles staged in shared memory, M 2", 2, kAuto, [](GemmVariant& v) {
         v.force.mma = Toggle::kOn;
         v.force.mma_strips = Toggle::kOn;
         v.mma_stage = 4;
       }, false},
      {"prefill: mma strips, 6 tiles staged, row tile 16, M 13", 13, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 16);
         v.mma_stage = 6;
       }, false},
      {"prefill: mma strips, 8 tiles staged, row tile 32, M 33", 33, kAuto, [](GemmVariant& v) {
         strip_blocks(v, 32);
         v.mma_stage = 8;
       }, false},
  };
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  int64_t calls = 0;
  const char* filter = std::getenv("TWINBIT_VARIANT_FILTER");
  const auto chosen = [&](const Variant& v) { return !filter || std::string(v.name).find(filter) != std::string::npos; };
  const int64_t shapes[][2] = {{1000, 2048}, {257, 6144}};
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (const auto& nk : shapes) {
      const int64_t n = nk[0], k = nk[1], kp = pad32(k), ng = kp / 32, max_m = 33;
      HostStrips h = random_strips(prec, n, k, 29 + n + k + prec);
      auto bound = cuda->bind(strips_view(h));
      REQUIRE(bound.ok());
      cuda::DeviceStrips dev;
      REQUIRE(cuda::device_strips(cuda->raw(), bound->handle(), &dev).ok());
      Activations a = make_activations(max_m, k, 3 + n + k);
      DeviceBuffer dx(a.x.size() * 4), dq(a.xq.size()), dd(a.xd.size() * 4), dy(static_cast<size_t>(max_m * n) * 4);
      DeviceBuffer dpart(cuda::gemm_partial_floats(dev, max_m) * 4);
      const size_t counter_bytes = cuda::gemm_counter_count(dev, max_m) * 4;
      DeviceBuffer dcnt(counter_bytes);
      REQUIRE(cudaMemset(dcnt.p, 0, std::max<size_t>(counter_bytes, 4)) == cudaSuccess);
      REQUIRE(cudaMemcpy(dx.p, a.x.data(), a.x.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(dq.p, a.xq.data(), a.xq.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(dd.p, a.xd.data(), a.xd.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        const auto want = reference(mode, max_m, h.view, a);
        for (const Variant& v : variants) {
          if (!chosen(v) || (v.f32_only && mode != TB_ACT_F32)) continue;
          const bool tensor_cores = std::string(v.name).find("mma") != std::string::npos;
          if (tensor_cores && mode != TB_ACT_I8) continue;  // integer mma: mode I8 only
          cuda::GemmLaunch l;
          l.mode = mode;
          l.m = v.m;
          l.x = static_cast<const float*>(dx.p);
          l.xq = static_cast<const int8_t*>(dq.p);
          l.xd = static_cast<const float*>(dd.p);
          l.y = static_cast<float*>(dy.p);
          l.partial = static_cast<float*>(dpart.p);
          l.counters = static_cast<unsigned*>(dcnt.p);
          l.decode = v.decode;
          GemmVariant gv;
          v.set(gv);
          REQUIRE(cudaMemset(dy.p, 0xff, static_cast<size_t>(max_m * n) * 4) == cudaSuccess);
          const Status st = bench::launch_gemm_variant(dev, l, gv, stream);
          REQUIRE_MESSAGE(st.ok(), v.name << ": " << st.to_string());
          REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
          std::vector<float> got(static_cast<size_t>(v.m * n));
          REQUIRE(cudaMemcpy(got.data(), dy.p, got.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
          ++calls;
          CHECK_MESSAGE(bit_diff(want.data(), got.data(), v.m * n).first == 0,
                        std::string(v.name) << ", " << std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                               << " N=" << n << " K=" << k << " M=" << v.m << " (ng " << ng << ")");
        }
      }
    }
  }
  cudaStreamDestroy(stream);
  MESSAGE("benchmark variants: " << calls << " launches compared with the reference"
          << (filter ? " (TWINBIT_VARIANT_FILTER=" + std::string(filter) + ")" : std::string()));
  if (filter) CHECK_MESSAGE(calls > 0, "TWINBIT_VARIANT_FILTER=" << filter << " matches no variant");
}

}  // TEST_SUITE
#endif

}  // namespace twinbit::cuda_test
