// gemv_f32, gemv_f32_pair and gdn_delta cases: inputs, the shared reference, one run.
#include <cstring>

#include "conformance/guards/guarded_buffer.h"
#include "conformance/inputs.h"
#include "conformance/prepared.h"
#include "core/reference.h"

namespace twinbit::conformance::detail {
namespace {

using guards::GuardedBuffer;

std::unique_ptr<GuardedBuffer> output(const char* name, int64_t floats) {
  return std::make_unique<GuardedBuffer>(name, static_cast<size_t>(floats) * 4, 4, kCanaryBits);
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
    x_ = c.inputs == InputProfile::subnormal ? subnormal_floats(rng, 1, c.k) : random_floats(rng, c.k);
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
    if (!wa.ok()) return Attempt{after_claim(wa.status(), "weights_bind"), {}};
    auto ya = output(pair ? "y_a" : "y", c_.n), yb = output("y_b", c_.n);
    if (!pair) {
      a.status = after_claim(b.gemv_f32(wa.value(), x_.data(), ya->as<float>()), "gemv_f32");
      if (!a.status.ok()) return a;
      if (a.status = ya->check(); !a.status.ok()) return a;
      a.mismatch = compare_bits(ya->as<float>(), 1, yref_[0].data(), 1, 1, c_.n, {}, "y");
      a.output_hash = hash_bytes(ya->as<float>(), ya->bytes());
      return a;
    }
    auto wb = b.bind(vb);
    if (!wb.ok()) return Attempt{after_claim(wb.status(), "weights_bind"), {}};
    a.status = after_claim(b.gemv_f32_pair(wa.value(), wb.value(), x_.data(), ya->as<float>(),
                                           yb->as<float>()), "gemv_f32_pair");
    if (!a.status.ok()) return a;
    if (a.status = ya->check(); !a.status.ok()) return a;
    if (a.status = yb->check(); !a.status.ok()) return a;
    a.mismatch = compare_bits(ya->as<float>(), 1, yref_[0].data(), 1, 1, c_.n, {}, "y_a");
    a.mismatch.merge(compare_bits(yb->as<float>(), 1, yref_[1].data(), 1, 1, c_.n, {}, "y_b"));
    a.output_hash = hash_bytes(yb->as<float>(), yb->bytes(), hash_bytes(ya->as<float>(), ya->bytes()));
    return a;
  }

  std::vector<InputHash> input_hashes() const override {
    std::vector<InputHash> h = {{"x (activations)", hash_bytes(x_.data(), x_.size() * 4)},
                                {"matrix (weights)", hash_bytes(mats_[0].data(), mats_[0].size() * 4)}};
    if (c_.kind == CaseKind::gemv_f32_pair) {
      h.push_back({"second matrix (weights)", hash_bytes(mats_[1].data(), mats_[1].size() * 4)});
    }
    return h;
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
    // The subnormal profile: the state and v at the bottom of the range, so the decayed state,
    // the delta and the output are subnormal where a flushing backend would zero them.
    const bool tiny = c.inputs == InputProfile::subnormal;
    state0_ = tiny ? subnormal_floats(rng, c.vh, c.kd * c.vd) : random_floats(rng, c.vh * c.kd * c.vd, -1);
    q_ = random_floats(rng, c.kh * c.kd, -3);
    k_ = random_floats(rng, c.kh * c.kd, -3);
    v_ = tiny ? subnormal_floats(rng, c.vh, c.vd) : random_floats(rng, c.vh * c.vd);
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
    // The state is read and written in place: guarded like an output, starting as state0.
    auto state = output("state", c_.vh * c_.kd * c_.vd);
    std::memcpy(state->as<float>(), state0_.data(), state0_.size() * 4);
    auto o = output("o", c_.vh * c_.vd);
    a.status = after_claim(b.gdn_delta(args(state->as<float>(), o->as<float>())), "gdn_delta");
    if (!a.status.ok()) return a;
    if (a.status = o->check(); !a.status.ok()) return a;
    if (a.status = state->check(); !a.status.ok()) return a;
    a.mismatch = compare_bits(o->as<float>(), c_.vd, o_ref_.data(), c_.vd, c_.vh, c_.vd, {}, "o");
    a.mismatch.merge(compare_bits(state->as<float>(), c_.kd * c_.vd, state_ref_.data(), c_.kd * c_.vd,
                                  c_.vh, c_.kd * c_.vd, {}, "state"));
    a.output_hash = hash_bytes(state->as<float>(), state->bytes(), hash_bytes(o->as<float>(), o->bytes()));
    return a;
  }

  std::vector<InputHash> input_hashes() const override {
    return {{"q", hash_bytes(q_.data(), q_.size() * 4)}, {"k", hash_bytes(k_.data(), k_.size() * 4)},
            {"v", hash_bytes(v_.data(), v_.size() * 4)}, {"g (gates)", hash_bytes(g_.data(), g_.size() * 4)},
            {"beta", hash_bytes(beta_.data(), beta_.size() * 4)}};
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
