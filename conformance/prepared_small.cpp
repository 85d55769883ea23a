// gemv_f32, gemv_f32_pair and gdn_delta cases: inputs, the shared reference, one run.
#include "conformance/inputs.h"
#include "conformance/prepared.h"
#include "core/reference.h"

namespace twinbit::conformance::detail {
namespace {

constexpr int64_t kSlack = 4;  // canary floats after every output

Status check_slack(const std::vector<float>& y, int64_t used, const char* what) {
  for (int64_t i = used; i < static_cast<int64_t>(y.size()); ++i) {
    if (!is_canary(y[static_cast<size_t>(i)])) {
      return Error(TB_INTERNAL, "wrote %s[%lld], past the end of the output (%lld elements)", what,
                   (long long)i, (long long)used);
    }
  }
  return Status();
}

class GemvCase final : public PreparedCase {
 public:
  GemvCase(const Case& c, uint64_t seed) : c_(c) {
    Rng rng(seed);
    const int count = c.kind == CaseKind::gemv_f32_pair ? 2 : 1;
    for (int i = 0; i < count; ++i) {
      mats_[i] = random_floats(rng, c.n * c.k);
      yref_[i].assign(static_cast<size_t>(c.n), 0.0f);
    }
    x_ = random_floats(rng, c.k);
    for (int i = 0; i < count; ++i) ref::gemv_f32(matrix(i), x_.data(), yref_[i].data());
    checked_ = Format("all %lld rows", (long long)c.n);
  }

  Attempt run(const Backend& b) const override {
    Attempt a;
    const bool pair = c_.kind == CaseKind::gemv_f32_pair;
    tb_op_desc d{};
    d.op = pair ? TB_OP_GEMV_F32_PAIR : TB_OP_GEMV_F32;
    d.n = c_.n;
    d.k = c_.k;
    // A backend without a pair entry gets core's default (two gemv_f32 calls): ask for what runs.
    if (pair && !b.has_gemv_f32_pair()) d.op = TB_OP_GEMV_F32;
    if (a.status = b.supports(d); !a.status.ok()) return a;
    tb_weights_view va{}, vb{};
    va.kind = vb.kind = TB_WEIGHTS_F32;
    va.matrix = matrix(0);
    vb.matrix = matrix(pair ? 1 : 0);
    auto wa = b.bind(va);
    if (!wa.ok()) return Attempt{wa.status(), {}};
    std::vector<float> ya(static_cast<size_t>(c_.n + kSlack), canary()), yb = ya;
    if (!pair) {
      if (a.status = b.gemv_f32(wa.value(), x_.data(), ya.data()); !a.status.ok()) return a;
      if (a.status = check_slack(ya, c_.n, "y"); !a.status.ok()) return a;
      a.mismatch = compare_bits(ya.data(), 1, yref_[0].data(), 1, 1, c_.n, {}, "y");
      return a;
    }
    auto wb = b.bind(vb);
    if (!wb.ok()) return Attempt{wb.status(), {}};
    a.status = b.gemv_f32_pair(wa.value(), wb.value(), x_.data(), ya.data(), yb.data());
    if (!a.status.ok()) return a;
    if (a.status = check_slack(ya, c_.n, "y_a"); !a.status.ok()) return a;
    if (a.status = check_slack(yb, c_.n, "y_b"); !a.status.ok()) return a;
    a.mismatch = compare_bits(ya.data(), 1, yref_[0].data(), 1, 1, c_.n, {}, "y_a");
    a.mismatch.merge(compare_bits(yb.data(), 1, yref_[1].data(), 1, 1, c_.n, {}, "y_b"));
    return a;
  }

 private:
  tb_matrix_f32 matrix(int i) const { return tb_matrix_f32{c_.n, c_.k, mats_[i].data()}; }
  Case c_;
  std::vector<float> mats_[2], yref_[2], x_;
};

class GdnCase final : public PreparedCase {
 public:
  GdnCase(const Case& c, uint64_t seed) : c_(c) {
    Rng rng(seed);
    state0_ = random_floats(rng, c.vh * c.kd * c.vd, -1);
    q_ = random_floats(rng, c.kh * c.kd, -3);
    k_ = random_floats(rng, c.kh * c.kd, -3);
    v_ = random_floats(rng, c.vh * c.vd);
    g_ = random_gates(rng, c.vh);
    beta_ = random_unit(rng, c.vh);
    state_ref_ = state0_;
    o_ref_.assign(static_cast<size_t>(c.vh * c.vd), 0.0f);
    ref::gdn_delta(args(state_ref_.data(), o_ref_.data()));
    checked_ = Format("o [%lld][%lld] and state [%lld][%lld][%lld]", (long long)c.vh,
                      (long long)c.vd, (long long)c.vh, (long long)c.kd, (long long)c.vd);
  }

  Attempt run(const Backend& b) const override {
    Attempt a;
    tb_op_desc d{};
    d.op = TB_OP_GDN_DELTA;
    d.vh = c_.vh;
    d.kh = c_.kh;
    d.kd = c_.kd;
    d.vd = c_.vd;
    if (a.status = b.supports(d); !a.status.ok()) return a;
    std::vector<float> state = state0_;
    std::vector<float> o(static_cast<size_t>(c_.vh * c_.vd + kSlack), canary());
    if (a.status = b.gdn_delta(args(state.data(), o.data())); !a.status.ok()) return a;
    if (a.status = check_slack(o, c_.vh * c_.vd, "o"); !a.status.ok()) return a;
    a.mismatch = compare_bits(o.data(), c_.vd, o_ref_.data(), c_.vd, c_.vh, c_.vd, {}, "o");
    a.mismatch.merge(compare_bits(state.data(), c_.kd * c_.vd, state_ref_.data(), c_.kd * c_.vd,
                                  c_.vh, c_.kd * c_.vd, {}, "state"));
    return a;
  }

 private:
  tb_gdn_args args(float* state, float* o) const {
    return tb_gdn_args{c_.vh, c_.kh, c_.kd, c_.vd, state, q_.data(), k_.data(), v_.data(),
                       g_.data(), beta_.data(), o};
  }
  Case c_;
  std::vector<float> state0_, q_, k_, v_, g_, beta_, state_ref_, o_ref_;
};

}  // namespace

std::unique_ptr<PreparedCase> prepare_gemv(const Case& c, uint64_t case_seed) {
  return std::make_unique<GemvCase>(c, case_seed);
}

std::unique_ptr<PreparedCase> prepare_gdn(const Case& c, uint64_t case_seed) {
  return std::make_unique<GdnCase>(c, case_seed);
}

std::unique_ptr<PreparedCase> prepare(const Case& c, uint64_t seed, double budget) {
  const uint64_t s = case_seed(seed, c.name());
  switch (c.kind) {
    case CaseKind::gemm:
    case CaseKind::batch_invariance:
      return prepare_gemm(c, s, budget);
    case CaseKind::gemv_f32:
    case CaseKind::gemv_f32_pair:
      return prepare_gemv(c, s);
    case CaseKind::gdn_delta:
      return prepare_gdn(c, s);
    case CaseKind::quantize_i8:
      return prepare_quantize(c, s);
  }
  return nullptr;
}

}  // namespace twinbit::conformance::detail
