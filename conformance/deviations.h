// The contract's usual deviations, as variants of the scalar reference (core/reference.h).
//
// When a backend's bits differ from the reference by an ulp or two, the cause is nearly always one
// of a handful of departures from docs/NUMERICS.md. Each is written here as the reference with
// that one departure, so `twinbit conformance --explain` can recompute a differing case under each
// and say which reproduces the backend's bits exactly. The test backends of
// tests/deviant_backends compute through these same functions, one deviation each.
//
//   unfused          a multiply and an add rounded separately where the contract fuses them
//                    (std::fma): what a compiler gives when contraction is off and the source
//                    says `acc + a * b`, or a target without fused multiply-add. (The opposite -
//                    contracting where the contract rounds twice - has no site in gemm: every
//                    multiply-add there is already an fma.)
//   tree_fold        a tree instead of a sequential fold: variant 0 sums the slice partials
//                    pairwise; variant 1 computes the f32 group dot in 8 lanes (fma per lane,
//                    k mod 8) summed by a halving tree, as an 8-wide SIMD kernel would.
//   flush_to_zero    subnormal operands and results of every float operation become zero of the
//                    same sign (FTZ + DAZ, a GPU's or an NPU's fast mode).
//   split_plan       another nsplit than split_plan(N_total, K): the draft plan (cap = ngroups),
//                    no split, or any other count.
//   i8_scale_order   the I8 scale applied in another order: variant 0 fma(p * ws, xd, acc),
//                    variant 1 fma(p * xd, ws, acc), instead of fma(p, ws * xd, acc).
//   round_half_away  the quantiser rounds halves away from zero (roundf) instead of to even.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <twinbit/backend.h>

namespace twinbit::conformance {

enum class DeviationKind { unfused, tree_fold, flush_to_zero, split_plan, i8_scale_order, round_half_away };

struct Deviation {
  DeviationKind kind = DeviationKind::unfused;
  int variant = 0;     // tree_fold, i8_scale_order (see the file comment)
  int64_t nsplit = 0;  // split_plan: the slice count used instead of the contract's
  std::string name() const;    // "unfused", "tree_fold", ... (the kind)
  std::string detail() const;  // one line a porter reads, e.g. "split plan nsplit 64 (contract 16)"
};

// Parses a kind name ("unfused", "tree_fold", ...); false if unknown.
bool parse_deviation_kind(const std::string& text, DeviationKind* out);
// Every kind name, for messages: "unfused, tree_fold, ...".
std::string deviation_kind_names();

// One output element of gemm (F32 / I8 mode) computed with the deviation; the arguments are
// those of ref::gemm_f32_at / ref::gemm_i8_at. A deviation that has no site in the mode (e.g.
// i8_scale_order in F32) gives the reference's value.
float deviant_gemm_f32_at(const tb_strips& w, const float* x_row, int64_t n, const Deviation& d);
float deviant_gemm_i8_at(const tb_strips& w, const int8_t* xq_row, const float* xd_row, int64_t n,
                         const Deviation& d);
// One output element (row) of ref::gemv_f32 computed with the deviation (unfused, flush_to_zero;
// others: exact).
float deviant_gemv_f32_at(const tb_matrix_f32& w, const float* x, int64_t row, const Deviation& d);
// ref::gdn_delta with the deviation (unfused, flush_to_zero; others: exact).
void deviant_gdn_delta(const tb_gdn_args& a, const Deviation& d);
// ref::quantize_activations with the deviation (flush_to_zero, round_half_away; others: exact).
void deviant_quantize(int64_t m, int64_t k, const float* x, int64_t ldx, int8_t* xq, int64_t ldxq,
                      float* xd, int64_t ldxd, const Deviation& d);

// The deviations worth trying for a gemm case (mode, and the projection's N and K): every kind
// with a site there, split plans included (the draft plan, no split, powers of two up to the
// group count, the contract's own excluded).
std::vector<Deviation> gemm_deviations(tb_act_mode mode, int64_t n_total, int64_t k);
std::vector<Deviation> quantize_deviations();

}  // namespace twinbit::conformance
