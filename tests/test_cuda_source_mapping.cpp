// The benchmark's baseline, the source engine's mapping (bench/cuda/source_mapping.h) and its
// check against the reference (bench/cuda/source_check.h). A speed-up against a baseline only
// means something if the baseline computes the same thing: both of its forms must give the bits
// of the contract's arithmetic run with the source's own nsplit (emulated here on the host), and
// the check must pass those bits and catch an output that is off. The plan, the launch's refusals
// and the check run everywhere; the kernels only where a CUDA device is present ("gpu" suite).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/test_cuda_support.h"
#ifdef TWINBIT_HAS_CUDA_SOURCE_MAPPING
#include "bench/cuda/source_check.h"
#include "bench/cuda/source_mapping.h"
#endif

namespace twinbit::cuda_test {

#ifdef TWINBIT_HAS_CUDA_SOURCE_MAPPING
namespace {

using bench::SourceForm;
using bench::SourceMappingShape;
using bench::SourceWeights;

// The source mapping's arithmetic on the host, from its own layout: per (row, column of npad)
// the group dots (fma chain in ascending k), per slice of s.nsplit the fma chain of group dot x
// scale in ascending g, then +0 + slice 0 + slice 1 + ... . y (m, npad).
std::vector<float> emulate(const SourceMappingShape& s, const SourceWeights& w, const float* x) {
  const int64_t ngroups = s.k / 32, np = s.npad;
  std::vector<float> y(static_cast<size_t>(s.m * np));
  std::vector<float> p(static_cast<size_t>(np)), acc(static_cast<size_t>(np));
  for (int64_t r = 0; r < s.m; ++r) {
    float* out = y.data() + r * np;  // every column at once: each one's operations stay in order
    std::fill(out, out + np, 0.0f);
    for (int64_t z = 0; z < s.nsplit; ++z) {
      const int64_t base = ngroups / s.nsplit, rem = ngroups % s.nsplit;
      const int64_t gb = z * base + std::min(z, rem), ge = gb + base + (z < rem ? 1 : 0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t g = gb; g < ge; ++g) {
        std::fill(p.begin(), p.end(), 0.0f);
        for (int64_t kk = 0; kk < 32; ++kk) {
          const int64_t k = g * 32 + kk;
          const int8_t* codes = w.wt.data() + k * np;
          for (int64_t n = 0; n < np; ++n) p[n] = std::fma(static_cast<float>(codes[n]), x[r * s.k + k], p[n]);
        }
        const float* scales = w.bst.data() + g * np;
        for (int64_t n = 0; n < np; ++n) acc[n] = std::fma(p[n], scales[n], acc[n]);
      }
      for (int64_t n = 0; n < np; ++n) out[n] = out[n] + acc[n];
    }
  }
  return y;
}

// The largest |float(code) * x| of row 0, column 0 over its first group: an error that size is
// what dropping (or doubling) one product would cause.
float largest_product(const tb_strips& w, const float* x) {
  float big = 0.0f;
  for (int64_t k = 0; k < 32; ++k) {
    big = std::max(big, std::fabs(static_cast<float>(ref::weight_code(w, 0, k)) * x[k] * ref::weight_scale(w, 0, 0)));
  }
  return big;
}

}  // namespace

TEST_CASE("source mapping plan: the source's nsplit and 32-bit indexing, lm_head (151936 x 2048) M 1 and 32, gate_up (12288 x 2048) M 32, lm_head M 16384") {
  const SourceMappingShape lm1 = bench::source_mapping_plan(1, 151936, 2048);
  CHECK(lm1.npad == 152576);
  CHECK(lm1.nsplit == 4);  // 149 blocks of 1024 columns: ceil(512 / 149)
  CHECK(lm1.index32);
  const SourceMappingShape lm32 = bench::source_mapping_plan(32, 151936, 2048);
  CHECK(lm32.nsplit == 1);  // 596 x 8 blocks already
  CHECK(lm32.index32);
  const SourceMappingShape gu32 = bench::source_mapping_plan(32, 12288, 2048);
  CHECK(gu32.nsplit == 2);  // 48 x 8 = 384 blocks: ceil(512 / 384)
  CHECK(gu32.index32);
  // 16384 x 152576 outputs pass 2^31: the faithful form falls back to 64-bit offsets.
  CHECK_FALSE(bench::source_mapping_plan(16384, 151936, 2048).index32);
}

TEST_CASE("source mapping launch refuses shapes outside its preconditions before touching a device: K 48, K 0, M 0, npad 1000, nsplit 0, M 262144, index32 with K 2^21") {
  SourceMappingShape ok = bench::source_mapping_plan(3, 1000, 96);
  const auto refused = [](SourceMappingShape s) {
    return bench::source_mapping_launch(s, SourceForm::kFaithful, nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr) == cudaErrorInvalidValue;
  };
  SourceMappingShape s = ok;
  s.k = 48;
  CHECK(refused(s));
  s = ok;
  s.k = 0;
  CHECK(refused(s));
  s = ok;
  s.m = 0;
  CHECK(refused(s));
  s = ok;
  s.npad = 1000;
  CHECK(refused(s));
  s = ok;
  s.nsplit = 0;
  CHECK(refused(s));
  s = ok;
  s.m = 262144;  // 65536 rows of blocks: past the grid's y limit
  CHECK(refused(s));
  s = ok;
  s.k = int64_t{1} << 21;  // codes k * npad = 2^31: 32-bit offsets claimed where they would wrap
  REQUIRE(s.index32);
  CHECK(refused(s));
}

TEST_CASE("source mapping check passes the emulated mapping within its bound and catches one product's error, q8, (N,K) {(1000,2048),(3000,256)} (nsplit != fold plan), M 1 and 3") {
  struct Case {
    int64_t n, k, m;
  };
  for (const Case c : {Case{1000, 2048, 1}, Case{3000, 256, 1}, Case{1000, 2048, 3}, Case{3000, 256, 3}}) {
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.m);
    const HostStrips h = random_strips(TB_PREC_Q8, c.n, c.k, 17 + c.n + c.m);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), 5 + c.m);
    const SourceMappingShape s = bench::source_mapping_plan(c.m, c.n, c.k);
    const SourceWeights w = bench::source_weights(h.view, s.npad);
    std::vector<float> y = emulate(s, w, x.data());
    auto passed = bench::check_source_output(h.view, s, x.data(), y.data());
    REQUIRE_MESSAGE(passed.ok(), passed.status().to_string());
    // (1000, 2048) at M 1: 1 block -> nsplit min(64, 512) = 64, the fold plan 16: not exact;
    // at M 3: 4 x 1 blocks -> 64 again. (3000, 256): nsplit 8 = ngroups, the fold plan 2.
    CHECK(passed->checked > 0);
    CHECK_FALSE(passed->exact);
    CHECK(passed->worst < 1e-5);
    // One product's worth of error in row 0, column 0 is caught.
    y[0] += largest_product(h.view, x.data());
    CHECK_FALSE(bench::check_source_output(h.view, s, x.data(), y.data()).ok());
  }
}

TEST_CASE("source mapping check wants the reference's bits where the source's nsplit is the fold plan, one ulp off fails: q8, (N,K) {(1000,32) 1 slice, (151936,512) 4 slices}, M 1") {
  // K 32: one group, so one slice both ways. lm_head's width at K 512: the source's 149 decode
  // blocks -> ceil(512 / 149) = 4 slices, and the fold plan min(16 / 4, 4) = 4.
  struct Case {
    int64_t n, k, nsplit;
  };
  for (const Case c : {Case{1000, 32, 1}, Case{151936, 512, 4}}) {
    CAPTURE(c.n);
    CAPTURE(c.k);
    const HostStrips h = random_strips(TB_PREC_Q8, c.n, c.k, 99 + c.k);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.k), 7);
    const SourceMappingShape s = bench::source_mapping_plan(1, c.n, c.k);
    REQUIRE(s.nsplit == c.nsplit);
    REQUIRE(split_plan(c.n, c.k) == c.nsplit);
    const SourceWeights w = bench::source_weights(h.view, s.npad);
    std::vector<float> y = emulate(s, w, x.data());
    auto passed = bench::check_source_output(h.view, s, x.data(), y.data());
    REQUIRE_MESSAGE(passed.ok(), passed.status().to_string());
    CHECK(passed->exact);
    CHECK(passed->bit_equal == passed->checked);
    y[0] = std::nextafter(y[0], INFINITY);
    CHECK_FALSE(bench::check_source_output(h.view, s, x.data(), y.data()).ok());
  }
}

TEST_SUITE("gpu") {

TEST_CASE("gpu source mapping: faithful (32-bit and 64-bit offsets) and legacy forms equal the emulated bits and pass the reference check, q8, (N,K) {(1000,96),(1100,2048),(3000,256)}, M 1, 3 and 32") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  struct Case {
    int64_t n, k;
  };
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  for (const Case c : {Case{1000, 96}, Case{1100, 2048}, Case{3000, 256}}) {
    const HostStrips h = random_strips(TB_PREC_Q8, c.n, c.k, 31 + c.n);
    for (int64_t m : {1, 3, 32}) {
      const SourceMappingShape plan = bench::source_mapping_plan(m, c.n, c.k);
      REQUIRE(plan.index32);
      const SourceWeights w = bench::source_weights(h.view, plan.npad);
      const std::vector<float> x = random_floats(static_cast<size_t>(m * c.k), 3 + m);
      const std::vector<float> want = emulate(plan, w, x.data());
      void *dwt = nullptr, *dbs = nullptr, *dx = nullptr, *dpart = nullptr, *dy = nullptr;
      REQUIRE(cudaMalloc(&dwt, w.wt.size()) == cudaSuccess);
      REQUIRE(cudaMalloc(&dbs, w.bst.size() * 4) == cudaSuccess);
      REQUIRE(cudaMalloc(&dx, x.size() * 4) == cudaSuccess);
      REQUIRE(cudaMalloc(&dpart, static_cast<size_t>(plan.nsplit * m * plan.npad) * 4) == cudaSuccess);
      REQUIRE(cudaMalloc(&dy, want.size() * 4) == cudaSuccess);
      REQUIRE(cudaMemcpy(dwt, w.wt.data(), w.wt.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(dbs, w.bst.data(), w.bst.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
      struct Form {
        const char* name;
        SourceForm form;
        bool index32;
      };
      for (const Form f : {Form{"faithful", SourceForm::kFaithful, true}, Form{"faithful_offsets64", SourceForm::kFaithful, false},
                           Form{"legacy", SourceForm::kLegacy, true}}) {
        CAPTURE(f.name);
        CAPTURE(c.n);
        CAPTURE(c.k);
        CAPTURE(m);
        SourceMappingShape s = plan;
        s.index32 = f.index32;  // 64-bit offsets are valid for every shape; 32-bit only where the plan allows
        REQUIRE(cudaMemset(dy, 0xff, want.size() * 4) == cudaSuccess);  // NaN: every output must be written
        REQUIRE(bench::source_mapping_launch(s, f.form, static_cast<const int8_t*>(dwt), static_cast<const float*>(dbs),
                                             static_cast<const float*>(dx), static_cast<float*>(dpart),
                                             static_cast<float*>(dy), stream) == cudaSuccess);
        std::vector<float> got(want.size());
        REQUIRE(cudaMemcpyAsync(got.data(), dy, got.size() * 4, cudaMemcpyDeviceToHost, stream) == cudaSuccess);
        REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
        const auto [diffs, first] = bit_diff(got.data(), want.data(), static_cast<int64_t>(want.size()));
        CHECK_MESSAGE(diffs == 0, diffs << " of " << want.size() << " outputs differ from the emulation, first at "
                                        << first << ": " << got[first < 0 ? 0 : first] << " vs " << want[first < 0 ? 0 : first]);
        auto checked = bench::check_source_output(h.view, s, x.data(), got.data());
        CHECK_MESSAGE(checked.ok(), checked.status().to_string());
      }
      cudaFree(dwt);
      cudaFree(dbs);
      cudaFree(dx);
      cudaFree(dpart);
      cudaFree(dy);
    }
  }
  cudaStreamDestroy(stream);
}

}  // TEST_SUITE("gpu")
#endif  // TWINBIT_HAS_CUDA_SOURCE_MAPPING

}  // namespace twinbit::cuda_test
