// gemm and batch-invariance cases: inputs, the shared reference, and one run on a backend.
#include <algorithm>
#include <cstring>

#include <xxhash.h>

#include <tbb/parallel_for.h>

#include "conformance/deviations.h"
#include "conformance/guards/guarded_buffer.h"
#include "conformance/inputs.h"
#include "conformance/prepared.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"

namespace twinbit::conformance::detail {

float canary() {
  float f;
  std::memcpy(&f, &kCanaryBits, 4);
  return f;
}

bool is_canary(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u == kCanaryBits;
}

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(data, bytes, seed);
}

Status after_claim(Status op_status, const char* op) {
  if (op_status.code() != TB_UNIMPLEMENTED) return op_status;
  return Error(TB_INTERNAL, "supports() accepted the case, then %s answered UNIMPLEMENTED (%s): "
               "a runtime trusting supports() fails at the call", op, op_status.message().c_str());
}

namespace {

// The columns the reference covers: all of them, or - past the budget - the first and last 33
// (every tail and strip edge) plus evenly spaced ones.
std::vector<int64_t> reference_columns(int64_t n, double per_column_cost, double budget) {
  std::vector<int64_t> cols;
  if (budget <= 0) return cols;  // empty = all
  const int64_t want = std::max<int64_t>(66, static_cast<int64_t>(budget / std::max(1.0, per_column_cost)));
  if (want >= n) return cols;  // empty = all
  for (int64_t c = 0; c < 33; ++c) cols.push_back(c);
  for (int64_t c = n - 33; c < n; ++c) cols.push_back(c);
  const int64_t step = std::max<int64_t>(1, (n - 66) / std::max<int64_t>(1, want - 66));
  for (int64_t c = 33 + step / 2; c < n - 33; c += step) cols.push_back(c);
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  return cols;
}

class GemmCase final : public PreparedCase {
 public:
  GemmCase(const Case& c, uint64_t seed, double budget) : c_(c) {
    Rng rng(seed);
    w_ = random_strips(rng, c.prec, c.n, c.k);
    const int64_t kp = pad32(c.k), ng = kp / 32;
    // Leading dimensions with a little slack now and then: the slack holds junk a backend must
    // not read (inputs) and a canary it must not overwrite (outputs).
    ldx_ = c.k + rng.range(0, 1) * rng.range(1, 5);
    ldxq_ = kp + rng.range(0, 1) * 32;
    ldxd_ = ng + rng.range(0, 1) * rng.range(1, 3);
    ldy_ = c.n + rng.range(0, 1) * rng.range(1, 7);
    x_ = c.inputs == InputProfile::subnormal ? subnormal_floats(rng, c.m, ldx_)
                                             : random_floats(rng, c.m * ldx_);
    // Groups whose I8 scale is subnormal: where the quantiser saturates and the scales are tiny.
    if (c.mode == TB_ACT_I8) tiny_activation_groups(rng, x_, c.m, c.k, ldx_);
    if (c.m * ng > 1 && rng.chance(300)) {  // one all-zero activation group: scale d = 0 in i8
      const int64_t row = rng.range(0, c.m - 1), g = rng.range(0, ng - 1);
      for (int64_t k = g * 32; k < std::min<int64_t>(c.k, g * 32 + 32); ++k) x_[row * ldx_ + k] = 0.0f;
    }
    if (c.mode == TB_ACT_I8) {
      xq_.resize(static_cast<size_t>(c.m * ldxq_));
      for (auto& q : xq_) q = static_cast<int8_t>(rng.range(-127, 127));  // junk in the slack
      xd_ = random_floats(rng, c.m * ldxd_);
      ref::quantize_activations(c.m, c.k, x_.data(), ldx_, xq_.data(), ldxq_, xd_.data(), ldxd_);
    }
    if (c.kind == CaseKind::gemm) {
      cols_ = reference_columns(c.n, static_cast<double>(c.m) * static_cast<double>(kp), budget);
      compute_reference();
      sampled_ = !cols_.empty();
      checked_ = sampled_ ? Format("sampled %zu of %lld columns", cols_.size(), (long long)c.n)
                          : Format("all %lld columns", (long long)c.n);
    }
  }

  Attempt run(const Backend& b) const override {
    Attempt a;
    const tb_weights_view view = weights_view();
    // Ask first, so an unclaimed case is "unsupported" even when binding would also refuse.
    tb_op_desc d = op_desc();
    if (a.status = b.supports(d); !a.status.ok()) return a;
    if (c_.kind == CaseKind::batch_invariance) {  // the rows are also run alone: ask for M = 1 too
      d.m = 1;
      if (a.status = b.supports(d); !a.status.ok()) return a;
    }
    auto bound = b.bind(view);
    if (!bound.ok()) {
      a.status = after_claim(bound.status(), "weights_bind");
      return a;
    }
    std::unique_ptr<guards::GuardedBuffer> y;
    if (c_.kind == CaseKind::gemm) {
      // Called twice on one binding, each call into fresh canaries: a backend that keeps state
      // between calls (CUDA captures its offload graph on the first call and replays it on the
      // second) must give the reference's bits both times. The first call that differs is reported.
      for (const char* output : {"y", "y_call2"}) {
        if (a.status = call(b, bound.value(), 0, c_.m, y, a); !a.status.ok()) return a;
        const Mismatch mm = compare_bits(y->as<float>(), ldy_, yref_.data(), c_.n, c_.m, c_.n, cols_, output);
        if (a.mismatch.differing == 0) a.mismatch = mm;
      }
      return a;
    }
    if (a.status = call(b, bound.value(), 0, c_.m, y, a); !a.status.ok()) return a;
    // Batch invariance: each checked row alone (M = 1) must equal that row of the M-row call.
    for (int64_t row : batch_rows()) {
      std::unique_ptr<guards::GuardedBuffer> y1;
      if (a.status = call(b, bound.value(), row, 1, y1, a); !a.status.ok()) return a;
      Mismatch mm = compare_bits(y->as<float>() + row * ldy_, ldy_, y1->as<float>(), ldy_, 1, c_.n, {}, "y");
      if (mm.differing > 0) mm.first_m = row;
      a.mismatch.merge(mm);
    }
    return a;
  }

  std::vector<InputHash> input_hashes() const override {
    std::vector<InputHash> h = {
        {"x (activations)", hash_bytes(x_.data(), x_.size() * 4)},
        {"codes (weights)", hash_bytes(w_.codes.data(), w_.codes.size())},
        {"scales (weights)", hash_bytes(w_.scales.data(), w_.scales.size() * 2)}};
    if (c_.mode == TB_ACT_I8) {
      h.push_back({"xq (activation codes)", hash_bytes(xq_.data(), xq_.size())});
      h.push_back({"xd (activation scales)", hash_bytes(xd_.data(), xd_.size() * 4)});
    }
    return h;
  }

  std::vector<int64_t> batch_rows() const {
    std::vector<int64_t> rows;
    if (c_.m <= 9) {
      for (int64_t r = 0; r < c_.m; ++r) rows.push_back(r);
    } else {
      rows = {0, 1, c_.m / 2, c_.m - 2, c_.m - 1};
    }
    return rows;
  }

  Explanation explain(const Backend& b) const override;
  std::vector<DumpArray> arrays() const override;
  std::string dump_params() const override {
    return Format("{\"n_total\": %lld, \"nsplit\": %lld, \"ldx\": %lld}", (long long)c_.n,
                  (long long)split_plan(c_.n, c_.k), (long long)ldx_);
  }

  void describe_batch() {
    std::string s = "rows";
    for (int64_t r : batch_rows()) s += Format(" %lld", (long long)r);
    checked_ = s + Format(" of %lld, alone vs in the batch", (long long)c_.m);
  }

 private:
  tb_weights_view weights_view() const {
    tb_weights_view view{};
    view.kind = TB_WEIGHTS_STRIPS;
    view.strips = w_.view();
    return view;
  }

  // The case as supports() sees it.
  tb_op_desc op_desc() const {
    return gemm_op_desc(c_.prec, c_.mode, c_.m, c_.n, c_.k);
  }

  // Runs rows [row0, row0 + m) into a fresh canary-filled, guarded y [m][ldy]; checks the row
  // slack and the bands around y; adds what was written to the attempt's output hash.
  Status call(const Backend& b, const BoundWeights& w, int64_t row0, int64_t m,
              std::unique_ptr<guards::GuardedBuffer>& y, Attempt& a) const {
    y = std::make_unique<guards::GuardedBuffer>("y", static_cast<size_t>(m * ldy_) * 4, 4, kCanaryBits);
    tb_gemm_args g{};
    g.mode = c_.mode;
    g.m = m;
    g.x = x_.data() + row0 * ldx_;
    g.ldx = ldx_;
    if (c_.mode == TB_ACT_I8) {
      g.xq = xq_.data() + row0 * ldxq_;
      g.ldxq = ldxq_;
      g.xd = xd_.data() + row0 * ldxd_;
      g.ldxd = ldxd_;
    }
    g.y = y->as<float>();
    g.ldy = ldy_;
    TB_RETURN_IF_ERROR(after_claim(b.gemm(w, g), "gemm"));
    TB_RETURN_IF_ERROR(y->check());
    const float* out = y->as<float>();
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t n = c_.n; n < ldy_; ++n) {
        if (!is_canary(out[r * ldy_ + n])) {
          return Error(TB_INTERNAL, "wrote y[%lld][%lld], outside the output (N = %lld, ldy = %lld)",
                       (long long)r, (long long)n, (long long)c_.n, (long long)ldy_);
        }
      }
    }
    a.output_hash = hash_bytes(out, y->bytes(), a.output_hash);
    return Status();
  }

  void compute_reference() {
    yref_.assign(static_cast<size_t>(c_.m * c_.n), 0.0f);
    const int64_t ncols = cols_.empty() ? c_.n : static_cast<int64_t>(cols_.size());
    const tb_strips w = w_.view();
    tbb::parallel_for(int64_t{0}, ncols, [&](int64_t i) {
      const int64_t n = cols_.empty() ? i : cols_[static_cast<size_t>(i)];
      for (int64_t r = 0; r < c_.m; ++r) {
        yref_[r * c_.n + n] = c_.mode == TB_ACT_F32
            ? ref::gemm_f32_at(w, x_.data() + r * ldx_, n)
            : ref::gemm_i8_at(w, xq_.data() + r * ldxq_, xd_.data() + r * ldxd_, n);
      }
    });
  }

  Case c_;
  OwnedStrips w_;
  int64_t ldx_ = 0, ldxq_ = 0, ldxd_ = 0, ldy_ = 0;
  std::vector<float> x_, xd_, yref_;
  std::vector<int8_t> xq_;
  std::vector<int64_t> cols_;  // reference columns (empty = all)
};

// The backend's outputs of one call, then every deviation on the checked elements: the ones the
// backend got wrong first (a wrong deviation usually fails there at once), then all the others.
Explanation GemmCase::explain(const Backend& b) const {
  Explanation e;
  e.checked = checked_;
  if (c_.kind != CaseKind::gemm) {
    e.not_explained = "a batch-invariance case compares the backend with itself: explain the gemm "
                      "case of its shape instead";
    return e;
  }
  const tb_weights_view view = weights_view();
  const tb_op_desc d = op_desc();
  std::vector<float> y;
  Status s = b.supports(d);
  if (s.ok()) {
    auto bound = b.bind(view);
    std::unique_ptr<guards::GuardedBuffer> out;
    Attempt scratch;
    s = bound.ok() ? call(b, bound.value(), 0, c_.m, out, scratch) : bound.status();
    if (s.ok()) y.assign(out->as<float>(), out->as<float>() + c_.m * ldy_);
  }
  if (!s.ok()) {
    e.not_explained = "the backend did not compute it: " + s.to_string();
    return e;
  }
  e.backend = compare_bits(y.data(), ldy_, yref_.data(), c_.n, c_.m, c_.n, cols_, "y");
  if (e.backend.differing == 0) {
    e.not_explained = "the backend's bits equal the reference's: nothing to explain";
    return e;
  }
  std::vector<std::pair<int64_t, int64_t>> order, rest;  // (row, column)
  for (int64_t r = 0; r < c_.m; ++r) {
    const int64_t ncols = cols_.empty() ? c_.n : static_cast<int64_t>(cols_.size());
    for (int64_t i = 0; i < ncols; ++i) {
      const int64_t n = cols_.empty() ? i : cols_[static_cast<size_t>(i)];
      const bool same = std::memcmp(&y[r * ldy_ + n], &yref_[r * c_.n + n], 4) == 0;
      (same ? rest : order).emplace_back(r, n);
    }
  }
  order.insert(order.end(), rest.begin(), rest.end());
  const std::vector<Deviation> devs = gemm_deviations(c_.mode, c_.n, c_.k);
  e.trials.resize(devs.size());
  const tb_strips w = w_.view();
  tbb::parallel_for(size_t{0}, devs.size(), [&](size_t t) {
    DeviationTrial& trial = e.trials[t];
    trial.deviation = devs[t];
    trial.reproduces = true;
    for (const auto& [r, n] : order) {
      const float v = c_.mode == TB_ACT_F32
          ? deviant_gemm_f32_at(w, x_.data() + r * ldx_, n, devs[t])
          : deviant_gemm_i8_at(w, xq_.data() + r * ldxq_, xd_.data() + r * ldxd_, n, devs[t]);
      if (std::memcmp(&v, &y[r * ldy_ + n], 4) != 0) {
        trial.reproduces = false;
        trial.first_miss = Format("y[%lld][%lld]", (long long)r, (long long)n);
        break;
      }
    }
  });
  return e;
}

template <class T>
DumpArray dump_array(const char* name, const char* dtype, const char* what,
                     std::vector<int64_t> shape, const std::vector<T>& values) {
  DumpArray a{name, dtype, what, std::move(shape), {}};
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

// The weights unpacked (codes per (n, k), padding included; scales as exact floats), the
// activations without their slack, and the expected output on the checked columns.
std::vector<DumpArray> GemmCase::arrays() const {
  if (c_.kind != CaseKind::gemm) return {};
  const tb_strips w = w_.view();
  const int64_t kp = pad32(c_.k), ng = kp / 32;
  std::vector<int8_t> codes(static_cast<size_t>(c_.n * kp));
  std::vector<float> scales(static_cast<size_t>(c_.n * ng));
  for (int64_t n = 0; n < c_.n; ++n) {
    for (int64_t k = 0; k < kp; ++k) codes[n * kp + k] = static_cast<int8_t>(ref::weight_code(w, n, k));
    for (int64_t g = 0; g < ng; ++g) scales[n * ng + g] = ref::weight_scale(w, n, g);
  }
  std::vector<DumpArray> out;
  out.push_back(dump_array("w_codes", "|i1", "weight codes [N][Kp] (code 0 past K)", {c_.n, kp}, codes));
  out.push_back(dump_array("w_scales", "<f4", "weight scales [N][Kp/32], the fp16 scales as floats", {c_.n, ng}, scales));
  std::vector<float> x(static_cast<size_t>(c_.m * c_.k));
  for (int64_t r = 0; r < c_.m; ++r) std::memcpy(&x[r * c_.k], &x_[r * ldx_], static_cast<size_t>(c_.k) * 4);
  out.push_back(dump_array("x", "<f4", "activations [M][K]", {c_.m, c_.k}, x));
  if (c_.mode == TB_ACT_I8) {
    std::vector<int8_t> xq(static_cast<size_t>(c_.m * kp));
    std::vector<float> xd(static_cast<size_t>(c_.m * ng));
    for (int64_t r = 0; r < c_.m; ++r) {
      std::memcpy(&xq[r * kp], &xq_[r * ldxq_], static_cast<size_t>(kp));
      std::memcpy(&xd[r * ng], &xd_[r * ldxd_], static_cast<size_t>(ng) * 4);
    }
    out.push_back(dump_array("xq", "|i1", "quantised activations [M][Kp] (the gemm's input in mode i8)", {c_.m, kp}, xq));
    out.push_back(dump_array("xd", "<f4", "activation scales [M][Kp/32]", {c_.m, ng}, xd));
  }
  std::vector<int64_t> cols = cols_;
  if (cols.empty()) {
    for (int64_t n = 0; n < c_.n; ++n) cols.push_back(n);
  }
  std::vector<float> y(static_cast<size_t>(c_.m) * cols.size());
  for (int64_t r = 0; r < c_.m; ++r) {
    for (size_t i = 0; i < cols.size(); ++i) y[r * cols.size() + i] = yref_[r * c_.n + cols[i]];
  }
  out.push_back(dump_array("columns", "<i8", "the output columns checked (and held by y_expected)",
                           {static_cast<int64_t>(cols.size())}, cols));
  out.push_back(dump_array("y_expected", "<f4", "the reference's output [M][columns]",
                           {c_.m, static_cast<int64_t>(cols.size())}, y));
  return out;
}

}  // namespace

std::unique_ptr<PreparedCase> prepare_gemm(const Case& c, uint64_t case_seed, double budget) {
  auto p = std::make_unique<GemmCase>(c, case_seed, budget);
  if (c.kind == CaseKind::batch_invariance) p->describe_batch();
  return p;
}

}  // namespace twinbit::conformance::detail
