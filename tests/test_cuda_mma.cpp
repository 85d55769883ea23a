// The CUDA gemm in mode I8 through the public call (the plan runs the integer tensor cores at
// every M > 1: strip blocks, backends/cuda/gemm_mma_strips.cuh, or row-tile blocks, gemm_mma.cu;
// gemm_plan.h says which) against the scalar reference, bit for bit, over every M from 1 to 64 and 128, 256, 512,
// ragged N, K past 8192, both precisions. Mode F32 runs the same M list (its kernels are not
// new, but the conformance sweep stops near 70 rows). Every tensor-core tile and slice choice
// forced at small M: tests/test_cuda_gemm_variants.cpp. Bits are per row, so one reference of
// the largest M serves every M: the first M rows of it. Runs only where a CUDA device is present.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/op_checks.h"
#include "tests/test_cuda_support.h"

namespace twinbit::cuda_test {

TEST_SUITE("gpu") {

TEST_CASE("gpu gemm tensor cores (I8) and F32 equal reference bits for M 1..64, 80, 96, 97, 128, 256, 512, q8 q4, (N,K) {(1000,2048) ragged, (257,8256) K > 8192 over 64 slices, (12288,256), (40000,512), (8448,1024) two strips a block past 16 rows, and 1 to 5 slices: (1000,128), (999,160), (300,96), (200,32)}") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  struct ShapeCase {
    int64_t n, k, max_m;
  };
  // The last four have fewer slices than a strip block has warps (split_plan: 4, 5, 3, 1): two
  // or eight strips per block, idle warps.
  // (8448, 1024): 8 slices, 264 strips; on 132 SMs the 16-row blocks stage their activations at
  // 9-96 rows and take two strips each (4 warps per strip) from 17 rows; row-tile blocks of 32
  // rows from 97.
  const ShapeCase shapes[] = {{1000, 2048, 512}, {257, 8256, 512}, {12288, 256, 512}, {40000, 512, 64},
                              {8448, 1024, 128}, {1000, 128, 64}, {999, 160, 64}, {300, 96, 64}, {200, 32, 64}};
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 64; ++m) ms.push_back(m);
  for (int64_t m : {80, 96, 97, 128, 256, 512}) ms.push_back(m);
  int64_t calls = 0;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (const ShapeCase& sc : shapes) {
      HostStrips h = random_strips(prec, sc.n, sc.k, 401 + sc.n + sc.k + prec);
      auto bound = cuda->bind(strips_view(h));
      REQUIRE(bound.ok());
      Activations a = make_activations(sc.max_m, sc.k, 77 + sc.n + sc.k);
      for (tb_act_mode mode : {TB_ACT_I8, TB_ACT_F32}) {
        const auto want = reference(mode, sc.max_m, h.view, a);
        std::vector<float> got(want.size());
        for (int64_t m : ms) {
          if (m > sc.max_m) break;
          std::fill(got.begin(), got.end(), std::nanf("0x7ab"));
          const Status st = cuda->gemm(*bound, gemm_args(mode, m, h.view, a, got.data()));
          REQUIRE_MESSAGE(st.ok(), st.to_string());
          ++calls;
          const auto d = bit_diff(want.data(), got.data(), m * sc.n);
          CHECK_MESSAGE(d.first == 0, std::string(prec_name(prec)) << " " << std::string(act_mode_name(mode))
                                          << " N=" << sc.n << " K=" << sc.k << " M=" << m << ": " << d.first
                                          << " floats differ, first at " << d.second);
        }
      }
    }
  }
  MESSAGE("tensor-core sweep: " << calls << " calls compared with the reference");
}

}  // TEST_SUITE

}  // namespace twinbit::cuda_test
