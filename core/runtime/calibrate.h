// `twinbit calibrate`'s measuring, usable in-process: times gemm calls of each backend on
// synthetic strip sets it makes itself (no artifact needed) and fits the profile's costs
// (core/runtime/profile.h) per activation mode and weight precision.
//
// THE SWEEP, per (mode, prec) in {f32, i8} x {q8, q4}:
//   a probe    N x K = 32 x 32, M = 1: moves and computes almost nothing, so its time is the
//              fixed cost of a call;
//   the shapes N x K in {1024 x 1024, 4096 x 2048, 16384 x 2048} x M in {1, 8, 32}
//              (quick: {128 x 64, 512 x 256} x M in {1, 8}, for tests: well under 2 s).
// Each measurement is the time of a few calls in a row (as many as make >= 200 us; a single
// call of a few microseconds is below the clock's noise) divided by their number. The
// measurements are INTERLEAVED - each repetition runs every point on every backend in turn - so
// a slow phase of the machine (another process, a clock change) spreads over all of them instead
// of biasing one; the median of the repetitions is kept.
//
// THE FIT (min-based estimates, not least squares: a roofline has a kink that least squares
// blurs, and three numbers read off the right measurements are easier to check by hand):
//   fixed_us    = the probe's median;
//   bytes_per_s = weight bytes / (time - fixed) of the largest shape at the smallest M: a model's
//                 projections are each read once per step and do not stay in cache, so the
//                 bandwidth that counts is the one least helped by caches;
//   flops_per_s = the largest 2*M*N*K / (time - fixed) over all shapes: the compute-bound points
//                 (large M) give it, the stream-bound ones give less and do not count.
// A (mode, prec) whose probe or every shape the backend's supports() declines gets no cost.
//
// THE SPLITS: for each pair of backends and (mode, prec) both were measured in, the largest shape
// at the smallest and the largest M is cut where the fitted costs balance it, and the two parts
// run concurrently (one host thread each, as the runtime runs a split), reps times; the pair's
// split factor is the larger of the two points' median time / predicted time (Profile::splits):
// what sharing the host costs a split, which single-backend costs cannot show.
//
// Errors: a spec that does not parse or a backend that cannot be created (UNAVAILABLE: no device
// here), a spec given twice, a gemm that fails (other than UNIMPLEMENTED at supports()).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/runtime/profile.h"
#include <twinbit/status.hpp>

namespace twinbit::runtime {

struct CalibrateOptions {
  bool quick = false;  // the tiny sweep, for tests
  // Called after each point of each repetition with a line such as
  // "calibrate: rep 2/5, shape 14/40 (4096 x 2048, M 8, i8 q4) on cpu, cuda"; may be empty.
  std::function<void(const std::string&)> progress;
  int reps = 0;  // repetitions of the sweep; 0: 5 (3 when quick)
};

// One point of the sweep: its shape and the median time of a call, in microseconds.
struct Measurement {
  int64_t m = 0, n = 0, k = 0;
  double us = 0.0;
};

// The fit above, from the probe's median and the shapes' medians of one (mode, prec).
GemmCost fit_cost(tb_act_mode mode, tb_prec prec, double probe_us, const std::vector<Measurement>& shapes);

// Measures every backend of `backend_specs` (spec text as core/backend_spec.h parses it; the
// profile's spec is its canonical text, as the runtime writes it) and returns the profile of
// this machine, dated now. The source of the profile is "calibrated in this process".
Result<Profile> calibrate(const std::vector<std::string>& backend_specs, const CalibrateOptions& options);

}  // namespace twinbit::runtime
