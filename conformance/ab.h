// Interleaved A/B timing in one process: the source engine's A/B discipline as a library, used by
// `twinbit bench` (two backends, or two variants of one) and `twinbit gate` (a gemm against the
// pure-read floor of the same bytes on the same backend).
//
// Why interleaved: clocks, thermal state and other processes drift over seconds; timing all of A
// and then all of B folds that drift into the ratio. Alternating A B A B ... exposes both sides to
// the same drift, and the per-round ratio a_i / b_i cancels most of it.
//
// A side is a backend (core/backend_spec.h: "cpu,threads=8", "cuda:1", "./libvendor.so") and a
// CASE, comma-separated key=value pairs, each defaulting to the command's options:
//   shape=KxN    the projection: K inputs x N outputs        (default: the command's --shape)
//   m=M          rows of the activation batch, 1 .. kMaxRows (core/rows.h) (default: --m)
//   prec=q8|q4   weight precision                            (default: --prec)
//   mode=f32|i8  activation mode (i8 times include the backend's quantize_i8 of the activations)
//                                                            (default: --mode)
//   op=gemm|read_floor   the gemm, or the backend's pure read of the same weight bytes
// The older one-argument form BACKEND:CASE ("cuda:m=32", "cpu:prec=q4,mode=i8") is still read:
// a ':' followed by key=value pairs starts the case, a ':' followed by digits is a device.
// Weights and activations are synthetic (conformance/inputs.h) from --seed; both sides get the
// same bytes when their shapes and precisions match, so their outputs are also compared (bits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conformance/conformance.h"

namespace twinbit::conformance {

struct BenchSpec {
  BackendSpec backend;
  tb_prec prec = TB_PREC_Q8;
  tb_act_mode mode = TB_ACT_F32;
  int64_t m = 1, k = 2048, n = 2048;
  bool read_floor = false;  // op=read_floor
  std::string text() const;  // "cpu,threads=8 case shape=2048x2048,m=1,prec=q8,mode=f32,op=gemm"
  // Host bytes run_ab holds for this side (its weights, x, xq, xd, y), so a caller can refuse an
  // M or shape that cannot fit before anything is allocated.
  uint64_t host_bytes() const;
};

// Parses a backend spec, or the older BACKEND:CASE, over `defaults`; errors say which part was
// not understood and what was expected.
Result<BenchSpec> parse_bench_spec(const std::string& spec, const BenchSpec& defaults);
// Applies a CASE ("m=32,prec=q4") to `s`.
Status parse_bench_case(const std::string& text, BenchSpec& s);
// "2048x6144" -> k 2048, n 6144.
Status parse_shape(const std::string& text, int64_t& k, int64_t& n);

struct SideStats {
  double median_us = 0, p10_us = 0, p90_us = 0;  // per call
  std::vector<double> rounds_us;                 // per call, one value per round
  int calls_per_round = 0;
};

struct AbResult {
  SideStats a, b;
  double ratio_median = 0, ratio_p10 = 0, ratio_p90 = 0;  // of a_i / b_i over rounds
  bool compared = false;  // both sides ran the same gemm on the same bytes
  Mismatch bits;          // when compared
  std::string device_a, device_b;
};

struct AbOptions {
  int warmup = 3;              // calls per side before timing
  int rounds = 15;             // A B pairs
  double min_round_us = 2000;  // each side's round repeats the call until it takes this long
  uint64_t seed = 1;
  std::function<void(const std::string&)> progress;
};

Result<AbResult> run_ab(const BenchSpec& a, const BenchSpec& b, const AbOptions& options);

// p-th percentile (0..100) of `v`, linear between neighbours; v need not be sorted.
double percentile(std::vector<double> v, double p);

}  // namespace twinbit::conformance
