// The conformance suite: one suite, written once, run against any backend - built in or loaded
// from a plugin - comparing its bits with the scalar reference (core/reference.h) by memcmp.
//
// WHAT IS CHECKED. A case list is generated from a seed (generate_cases): a fixed sweep of gemm
// shapes (M x N x K around the 32-wide group and strip sizes, K % 32 != 0 tails, both precisions,
// both activation modes), gemv_f32, gemv_f32_pair, gdn_delta and quantize_i8 shapes, batch-invariance checks,
// a subnormal family (InputProfile) that only a backend keeping subnormals passes, plus
// `random_cases` random awkward shapes. Every case draws fresh inputs from (seed, case name),
// so a case is reproducible on its own and never depends on which other cases ran.
//
// Every gemm case is called twice on one binding (the second call must give the same bits: a
// backend may capture work on the first call and replay it, as CUDA does with its graphs).
//
// ONE VERDICT PER CASE (Verdict):
//   equal        every checked output element has the reference's bits (and nothing outside the
//                output was written).
//   differ       `differing/total` elements differ; the first differing index (m, n) and the max
//                ulp distance are reported.
//   unsupported  supports() or the operation said UNIMPLEMENTED (with the backend's reason). The
//                case is then re-run on the next backend of the fallback order that supports it
//                (the runtime's fallback: built-in registry order) and must equal the reference.
//   xfail        the case differs (or failed) and is on the backend's expected-failure list.
//   xpass        the case is on the expected-failure list but passed: the entry is stale.
//   error        the backend returned an error other than UNIMPLEMENTED, wrote outside its
//                output (a canary band or a guard page around it), changed an input, answered
//                UNIMPLEMENTED after supports() accepted the case, or gave other bits when the
//                case was run again (alone, then from two threads at once: "nondeterministic").
//   crash        the worker process running the case died (a signal, an exit): isolated runs only.
//   timeout      the case ran past the time limit; its worker was killed: isolated runs only.
// A run passes when there is no differ, error, xpass, and every unsupported case fell back to a
// backend that produced the reference's bits.
//
// BATCH INVARIANCE is its own case kind: row m of an M-row gemm call must equal the same row run
// alone (M = 1), bit for bit, on the backend under test.
//
// THE REFERENCE is computed once per case and shared by the backend under test and its fallback.
// Where a case is huge (more than `reference_budget` multiply-adds), the reference is computed on
// a sample of the columns (always the first and last 33, plus evenly spaced ones) with
// ref::gemm_f32_at / gemm_i8_at, and the case says "sampled C of N columns".
//
// THREAD SAFETY. run_suite calls the backend from up to two threads at once (the repeat of every
// case, as the backend contract allows) and computes the reference on worker threads (oneTBB). Different suites may run concurrently on different backends.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/backend_spec.h"
#include "core/registry.h"
#include <twinbit/status.hpp>

namespace twinbit::conformance {

// --- backends ------------------------------------------------------------------------------
// Backends are named and created by the core (core/backend_spec.h, core/registry.h); the suite
// reads the capability tags each one declares in describe().features (split_feature_tags,
// has_feature_tag: core/backend.hpp).

// --- cases ---------------------------------------------------------------------------------

enum class CaseKind { gemm, batch_invariance, gemv_f32, gemv_f32_pair, gdn_delta, quantize_i8 };

// How a case's activations are drawn (inputs.h).
//   standard   mostly normal values across several binades, with signed zeros and a sprinkle of
//              subnormals (which the normal terms then round away).
//   subnormal  activations at the bottom of the float range (subnormal, or normal below 2^-103),
//              so that products, partial sums and often the outputs are subnormal: only there
//              does a backend that flushes subnormals to zero (FTZ/DAZ, forbidden by
//              docs/NUMERICS.md) give other bits. gemm in F32 mode, gemv_f32, gemv_f32_pair
//              and gdn_delta (there the state and v are drawn so).
enum class InputProfile { standard, subnormal };

struct Case {
  CaseKind kind = CaseKind::gemm;
  tb_prec prec = TB_PREC_Q8;     // gemm, batch_invariance
  tb_act_mode mode = TB_ACT_F32;  // gemm, batch_invariance
  int64_t m = 0, n = 0, k = 0;   // gemm: M, N, K; gemv: n = rows, k = cols; quantize_i8: M, K
  int64_t vh = 0, kh = 0, kd = 0, vd = 0;  // gdn_delta
  InputProfile inputs = InputProfile::standard;
  bool random = false;           // drawn by the random part (else the fixed sweep)

  // The case's name spells out its parameters, e.g. "gemm_q8_f32_M3_N33_K96",
  // "batch_q4_i8_M33_N257_K96", "gemv_f32_N257_K100", "gemv_f32_pair_N31_K2048",
  // "gdn_delta_VH16_KH16_KD128_VD128", "quantize_i8_M3_K100"; the subnormal input profile adds
  // "_subnormal" ("gemm_q8_f32_M3_N33_K96_subnormal"). Names are unique within a generated list.
  std::string name() const;
};

Case gemm_case(tb_prec prec, tb_act_mode mode, int64_t m, int64_t n, int64_t k);
Case batch_case(tb_prec prec, tb_act_mode mode, int64_t m, int64_t n, int64_t k);
Case gemv_case(bool pair, int64_t rows, int64_t cols);
Case gdn_case(int64_t vh, int64_t kh, int64_t kd, int64_t vd);
Case quantize_case(int64_t m, int64_t k);
Case with_inputs(Case c, InputProfile inputs);

enum class Sweep {
  full,   // the fixed sweep (thinned pairwise, see cases.cpp) - the default of the CLI
  quick,  // a small subset of it, for unit tests and smoke runs
  none,   // random cases only
  // The cross product of the sweep's M x N x K for every (prec, mode), unthinned (2520 cases),
  // and of its K % 32 != 0 part (2016), plus the rest of the full sweep: what the backends' own
  // sweeps covered before the suite existed. Slow on the scalar reference: the "slow" label.
  exhaustive,
};

// The random part's generator. Each version changes every seed's case list; a report names the
// version its list came from, and `--generator 1` draws the old lists again.
//   1  the first one: ~80% of random gemm cases with K % 32 != 0.
//   2  K a whole number of groups for at least half of the random gemm cases.
constexpr int kGeneratorVersion = 2;

// The exhaustive sweep's reference budget: every column of every case is checked except in the
// vocabulary's prefill (M 32 x N 151936 x K 2048 = 1e10 multiply-adds, checked on a 1e9 sample:
// computed whole, its 8 cases cost minutes of scalar reference). The largest case of the sweeps'
// grids, 64 x 1000 x 6144, is 3.9e8.
constexpr double kExhaustiveReferenceBudget = 1e9;

struct CaseOptions {
  uint64_t seed = 1;
  int generator = kGeneratorVersion;  // 1 or 2
  Sweep sweep = Sweep::full;
  int random_cases = 100;  // the random part: awkward shapes drawn from the seed
  // The model sweep (cases.cpp) in the full, quick and exhaustive sweeps. Off only where a scalar
  // test backend runs the quick sweep in a unit test: it would compute whole model projections.
  bool model_shapes = true;
};

std::vector<Case> generate_cases(const CaseOptions& options);

// --- expected failures -----------------------------------------------------------------------

// "This backend is known to fail these cases, for this reason." `pattern` is a case name or a
// glob over case names ('*' and '?'); `backend` is a backend name.
struct ExpectedFailure {
  std::string backend;
  std::string pattern;
  std::string reason;
};

// The built-in list (conformance/expected_failures.cpp), kept honest by xpass reports.
const std::vector<ExpectedFailure>& builtin_expected_failures();
// A vendor's list in a text file: one entry per line, "BACKEND PATTERN REASON...", '#' comments.
Result<std::vector<ExpectedFailure>> read_expected_failures(const std::string& path);

// --- outcomes ------------------------------------------------------------------------------

enum class Verdict { equal, differ, unsupported, xfail, xpass, error, crash, timeout };
const char* verdict_name(Verdict v);  // "equal", "differ", ...

// A bit comparison of an output against the reference.
struct Mismatch {
  int64_t differing = 0;     // elements whose bits differ
  int64_t total = 0;         // elements compared
  int64_t first_m = -1;      // first differing element (row-major order of the output):
  int64_t first_n = -1;      //   gemm (m, n); gemv (0, row); gdn o (head, dv), state (head, dk*vd+dv)
  std::string first_output;  // which output holds it: "y", "y_call2" (the second call of a
                             // gemm case), "y_a", "y_b", "o", "state"
  uint64_t max_ulp = 0;      // largest distance in units in the last place (see ulp_distance)
  void merge(const Mismatch& other);
};

// Distance between two floats in ulps: the count of representable floats between them, with
// -0 and +0 one apart so that a sign-of-zero difference is never reported as 0 ulp.
uint64_t ulp_distance(float a, float b);
// Compares rows x cols floats, `got` with leading dimension ld_got, `want` with ld_want,
// restricted to `cols_checked` (all columns when empty).
Mismatch compare_bits(const float* got, int64_t ld_got, const float* want, int64_t ld_want,
                      int64_t rows, int64_t cols, const std::vector<int64_t>& cols_checked,
                      const std::string& output_name);

struct FallbackResult {
  bool ran = false;
  std::string backend;      // the backend that took the case ("" when none did)
  Verdict verdict = Verdict::equal;  // equal, differ or error
  Mismatch mismatch;
  std::string message;      // why none took it, or its error
};

struct CaseResult {
  Case c;
  std::string name;
  Verdict verdict = Verdict::equal;
  Mismatch mismatch;         // differ / xfail
  std::string message;       // unsupported: the backend's reason; error: the error; x*: reason
  std::string checked;       // "all 257 columns", "sampled 98 of 5000 columns", "rows 0, 1, 32"
  bool sampled = false;      // the reference covered a sample of the columns
  FallbackResult fallback;   // unsupported only
  double seconds = 0;
  bool failed() const;       // counts against the run (see the header comment)
};

struct Totals {
  int64_t cases = 0, equal = 0, differ = 0, unsupported = 0, xfail = 0, xpass = 0, error = 0;
  int64_t crash = 0, timeout = 0;  // isolated runs only
  int64_t fallback_failed = 0;  // unsupported cases no backend reproduced exactly
  int64_t sampled = 0;          // cases whose reference covered a sample of columns
};

struct Report {
  std::string backend, source, device, features;  // identity of the backend under test
  std::string library_version;                    // "twinbit 0.1.0 (backend ABI 2)"
  std::string date;                               // UTC start of the run, ISO 8601
  uint64_t seed = 0;
  int random_cases = 0;
  int generator = kGeneratorVersion;              // of the random cases (CaseOptions::generator)
  std::string sweep;                              // "full", "quick", "none", "custom"
  std::vector<std::string> fallback_order;        // backend names tried for unsupported cases
  std::vector<CaseResult> results;
  Totals totals;
  double seconds = 0;
  bool passed() const;
};

// --- running -------------------------------------------------------------------------------

struct SuiteOptions {
  // Inputs of every case are drawn from (seed, case name): use the seed the cases came from.
  uint64_t seed = 1;
  // Extra expected failures (e.g. a vendor's file); the built-in ones for the backend's name are
  // always included.
  std::vector<ExpectedFailure> expected;
  // Fallback order for unsupported cases; empty = the built-in registry order. Entries whose
  // name equals the backend under test are skipped.
  std::vector<BackendEntry> fallback_order;
  // Reference multiply-adds per case above which the reference is computed on sampled columns;
  // 0 = never sample: every column of every case is checked. Exhaustive runs use
  // kExhaustiveReferenceBudget.
  double reference_budget = 3e7;
  // Runs every case that succeeded once more from two threads at once; all runs must give the
  // same bits (judge.h). Off only for long sweeps whose determinism a quick run already checks:
  // it triples the backend's calls.
  bool repeat = true;
  // Progress lines ("[120/612] gemm_q8_f32_M33_N257_K96 ..."), called from the running thread.
  std::function<void(const std::string&)> progress;
  // Called for every finished case (index, count, result), from the running thread: a live log.
  std::function<void(size_t, size_t, const CaseResult&)> on_case;
};

// Runs `cases` on `backend`. Never fails as a whole: every problem is a case's verdict.
Report run_suite(const Backend& backend, const std::vector<Case>& cases,
                 const SuiteOptions& options);

// Runs `cases` on each of `backends` (e.g. every instruction-set tag of the CPU backend),
// drawing the inputs and computing the reference of each case once for all of them. One report
// per backend, in their order; each equals what run_suite gives that backend alone (only the
// seconds differ: they count the whole run).
std::vector<Report> run_suites(const std::vector<const Backend*>& backends,
                               const std::vector<Case>& cases, const SuiteOptions& options);

// Sets a report's identity from a backend's own (untrusted) text, sanitised
// (guards/untrusted_text.h), with the library version, the seed and the date.
void fill_identity(Report& rep, const std::string& name, const std::string& device,
                   const std::string& features, uint64_t seed);

// --- reports (report.cpp; formats documented in docs/CONFORMANCE.md) -------------------------

std::string library_version();            // "twinbit 0.1.0 (backend ABI 2)"
std::string format_text(const Report& r);  // the hand-in report: header, non-equal cases, totals
std::string format_json(const Report& r);  // one object: identity, totals, every case
std::string format_junit(const Report& r); // JUnit XML: one testcase per case

}  // namespace twinbit::conformance
