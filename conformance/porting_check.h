// The porting check (`twinbit check`): the weights of a model run on two backends, outputs
// compared bit for bit. Where the conformance suite asks "does this backend give the reference's
// bits on awkward shapes", this asks "do these two backends agree on this model's entries".
//
// WHAT RUNS, per kind of entry (given in the artifact's order):
//   strip entries     gemm at every M of `ms` in every mode of `modes` (I8: the activations are
//                     quantised once with ref::quantize_activations and both sides get the codes).
//   float matrices    gemv_f32, one line each; and gemv_f32_pair for each two consecutive float
//                     matrices of the same shape (ssm_beta + ssm_a in the synthetic model), x
//                     shared, one line per pair.
//   the gated-delta   the float matrices named gdn.state [vh*kd][vd], gdn.q and gdn.k [kh][kd],
//   set               gdn.v [vh][vd], gdn.g and gdn.beta [1][vh] are the inputs of one gdn_delta
//                     step, not gemv weights: one line comparing the updated state and o. When
//                     some of the six are present but not all, or their shapes disagree, the
//                     line is an error naming what is wrong.
// Activations (x of gemm and gemv) come from `activations(key, m, k)`; the key is the strip
// entry's name up to its last '.' (attn_q.q8 -> attn_q, so q8 and q4 of a projection see the
// same x), a matrix's name, or "A+B" for a pair. Both backends get the same bytes.
//
// ONE LINE PER COMPARISON (CheckLine): equal, differ (differing/total, first index, max ulp),
// unsupported (a side said UNIMPLEMENTED: quoted, not a failure) or error (any other error).
// Indices: gemm (m, n) of y; gemv (0, row) of y; pair (0, row) of y_a / y_b; gdn (head, dv) of o
// or (head, dk*vd + dv) of state.
//
// Thread safety: uses each backend from the calling thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "conformance/conformance.h"
#include "core/backend.hpp"

namespace twinbit::conformance {

struct CheckEntry {
  std::string name;      // as in the artifact: "attn_q.q8", "ssm_beta", "gdn.state"
  tb_weights_view view;  // verified by the caller
  std::shared_ptr<const void> keep_alive = nullptr;  // owns view's memory (null: it outlives
                                                     // the check); held by the bindings
};

// The names of the gated-delta set, in tb_gdn_args order (state, q, k, v, g, beta).
const std::vector<std::string>& gdn_entry_names();

enum class CheckOutcome { equal, differ, unsupported, error };

struct CheckLine {
  std::string entry;     // "attn_q.q8", "ssm_beta", "ssm_beta+ssm_a", "gdn.*"
  std::string what;      // "q8 K 2048 x N 2048, M 32, i8", "gemv_f32 48 x 5120", ...
  CheckOutcome outcome = CheckOutcome::equal;
  Mismatch mismatch;     // equal and differ
  std::string message;   // unsupported/error: the result text ("unsupported on B: UNIMPLEMENTED:
                         // ...", "error on A: ...", or "error: ..." when the inputs are wrong)
};

struct CheckTotals {
  int64_t lines = 0, equal = 0, differ = 0, unsupported = 0, error = 0;
};

struct PortingCheckOptions {
  std::vector<int64_t> ms = {1, 32};
  std::vector<tb_act_mode> modes = {TB_ACT_F32, TB_ACT_I8};
  std::string label_a = "A", label_b = "B";  // how lines name the two sides
  // x [m][k] for `key`; must be deterministic (the same key, m, k give the same values).
  std::function<std::vector<float>(const std::string& key, int64_t m, int64_t k)> activations;
};

// Runs every entry on `a` and `b`, calls `on_line` with each line as it is done, and returns
// the totals. Errors of one line never stop the others.
CheckTotals check_entries(const Backend& a, const Backend& b, const std::vector<CheckEntry>& entries,
                          const PortingCheckOptions& options,
                          const std::function<void(const CheckLine&)>& on_line);

// "0/2048 differ", "1/99 differ, first at y(m 1, n 5), max 1 ulp", "unsupported on B: ...".
std::string check_result_text(const CheckLine& line);

}  // namespace twinbit::conformance
