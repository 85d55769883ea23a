#include "conformance/porting_check.h"

#include <cstring>
#include <map>
#include <optional>

#include "core/op_checks.h"
#include "core/reference.h"

namespace twinbit::conformance {
namespace {

// Each side's outputs start as a different NaN, so an element that neither side writes still
// differs (the same canary on both would read as equal).
float canary(bool side_b) {
  const uint32_t bits = side_b ? 0x7fc0b0b0u : 0x7fc0a0a0u;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class Checker {
 public:
  Checker(const Backend& a, const Backend& b, const PortingCheckOptions& o,
          const std::function<void(const CheckLine&)>& on_line)
      : a_(a), b_(b), o_(o), on_line_(on_line) {}

  void strips(const CheckEntry& e);
  void gemv(const CheckEntry& e, const BoundWeights& wa, const BoundWeights& wb);
  void pair(const CheckEntry& e1, const CheckEntry& e2, const BoundWeights& a1, const BoundWeights& a2,
            const BoundWeights& b1, const BoundWeights& b2);
  void gdn(const std::vector<const CheckEntry*>& set);
  CheckTotals totals() const { return t_; }

  // Emits the line for two statuses and (when both are ok) their comparison.
  void emit(const std::string& entry, const std::string& what, const Status& sa, const Status& sb,
            const Mismatch& mm) {
    CheckLine l{entry, what, CheckOutcome::equal, mm, ""};
    if (!sa.ok() || !sb.ok()) {
      const Status& bad = sa.ok() ? sb : sa;
      const bool unimplemented = bad.code() == TB_UNIMPLEMENTED;
      l.outcome = unimplemented ? CheckOutcome::unsupported : CheckOutcome::error;
      l.message = (unimplemented ? "unsupported on " : "error on ") +
                  (sa.ok() ? o_.label_b : o_.label_a) + ": " + bad.to_string();
      l.mismatch = {};
    } else if (mm.differing > 0) {
      l.outcome = CheckOutcome::differ;
    }
    count_and_send(l);
  }
  // A line that is wrong before either side runs (the inputs themselves).
  void emit_input_error(const std::string& entry, const std::string& what, const Status& why) {
    // Filled field by field: GCC 12 reads the braced temporary's `{}` Mismatch as possibly
    // uninitialised (-Wmaybe-uninitialized in Release) although its members all have defaults.
    CheckLine l;
    l.entry = entry;
    l.what = what;
    l.outcome = CheckOutcome::error;
    l.message = "error: " + why.to_string();
    count_and_send(l);
  }

 private:
  void count_and_send(const CheckLine& l) {
    ++t_.lines;
    switch (l.outcome) {
      case CheckOutcome::equal: ++t_.equal; break;
      case CheckOutcome::differ: ++t_.differ; break;
      case CheckOutcome::unsupported: ++t_.unsupported; break;
      case CheckOutcome::error: ++t_.error; break;
    }
    on_line_(l);
  }

  const Backend& a_;
  const Backend& b_;
  const PortingCheckOptions& o_;
  const std::function<void(const CheckLine&)>& on_line_;
  CheckTotals t_;
};

Status run_gemm(const Backend& b, const BoundWeights& w, tb_act_mode mode, int64_t m,
                const std::vector<float>& x, const std::vector<int8_t>& xq,
                const std::vector<float>& xd, std::vector<float>& y, bool side_b) {
  const tb_strips& s = w.view().strips;
  y.assign(static_cast<size_t>(m * s.n), canary(side_b));
  tb_gemm_args a{};
  a.mode = mode;
  a.m = m;
  a.x = x.data();
  a.ldx = s.k;
  a.xq = xq.data();
  a.ldxq = s.kp;
  a.xd = xd.data();
  a.ldxd = s.kp / 32;
  a.y = y.data();
  a.ldy = s.n;
  return b.gemm(w, a);
}

void Checker::strips(const CheckEntry& e) {
  auto wa = a_.bind(e.view, e.keep_alive);
  auto wb = b_.bind(e.view, e.keep_alive);
  if (!wa.ok() || !wb.ok()) {
    emit(e.name, "(bind)", wa.status(), wb.status(), {});
    return;
  }
  const tb_strips& s = e.view.strips;
  const std::string key = e.name.substr(0, e.name.rfind('.'));
  for (int64_t m : o_.ms) {
    const std::vector<float> x = o_.activations(key, m, s.k);
    std::vector<int8_t> xq(static_cast<size_t>(m * s.kp));
    std::vector<float> xd(static_cast<size_t>(m * s.kp / 32)), ya, yb;
    bool quantised = false;
    for (tb_act_mode mode : o_.modes) {
      if (mode == TB_ACT_I8 && !quantised) {
        ref::quantize_activations(m, s.k, x.data(), s.k, xq.data(), s.kp, xd.data(), s.kp / 32);
        quantised = true;
      }
      const Status sa = run_gemm(a_, wa.value(), mode, m, x, xq, xd, ya, false);
      const Status sb = run_gemm(b_, wb.value(), mode, m, x, xq, xd, yb, true);
      Mismatch mm;
      if (sa.ok() && sb.ok()) mm = compare_bits(ya.data(), s.n, yb.data(), s.n, m, s.n, {}, "y");
      emit(e.name, Format("%s K %lld x N %lld, M %lld, %s", prec_name(s.prec), (long long)s.k,
                          (long long)s.n, (long long)m, act_mode_name(mode)), sa, sb, mm);
    }
  }
}

void Checker::gemv(const CheckEntry& e, const BoundWeights& wa, const BoundWeights& wb) {
  const tb_matrix_f32& w = e.view.matrix;
  const std::vector<float> x = o_.activations(e.name, 1, w.cols);
  std::vector<float> ya(static_cast<size_t>(w.rows), canary(false)), yb(static_cast<size_t>(w.rows), canary(true));
  const Status sa = a_.gemv_f32(wa, x.data(), ya.data());
  const Status sb = b_.gemv_f32(wb, x.data(), yb.data());
  Mismatch mm;
  if (sa.ok() && sb.ok()) mm = compare_bits(ya.data(), w.rows, yb.data(), w.rows, 1, w.rows, {}, "y");
  emit(e.name, Format("gemv_f32 %lld x %lld", (long long)w.rows, (long long)w.cols), sa, sb, mm);
}

void Checker::pair(const CheckEntry& e1, const CheckEntry& e2, const BoundWeights& a1,
                   const BoundWeights& a2, const BoundWeights& b1, const BoundWeights& b2) {
  const tb_matrix_f32& w = e1.view.matrix;
  const std::string name = e1.name + "+" + e2.name;
  const std::vector<float> x = o_.activations(name, 1, w.cols);
  const size_t rows = static_cast<size_t>(w.rows);
  std::vector<float> ya_a(rows, canary(false)), yb_a(rows, canary(false));
  std::vector<float> ya_b(rows, canary(true)), yb_b(rows, canary(true));
  const Status sa = a_.gemv_f32_pair(a1, a2, x.data(), ya_a.data(), yb_a.data());
  const Status sb = b_.gemv_f32_pair(b1, b2, x.data(), ya_b.data(), yb_b.data());
  Mismatch mm;
  if (sa.ok() && sb.ok()) {
    mm = compare_bits(ya_a.data(), w.rows, ya_b.data(), w.rows, 1, w.rows, {}, "y_a");
    mm.merge(compare_bits(yb_a.data(), w.rows, yb_b.data(), w.rows, 1, w.rows, {}, "y_b"));
  }
  emit(name, Format("gemv_f32_pair 2 x %lld x %lld", (long long)w.rows, (long long)w.cols), sa, sb, mm);
}

void Checker::gdn(const std::vector<const CheckEntry*>& set) {
  const std::vector<std::string>& names = gdn_entry_names();
  std::string missing;
  for (size_t i = 0; i < set.size(); ++i) {
    if (!set[i]) missing += (missing.empty() ? "" : ", ") + names[i];
  }
  const std::string what = "gdn_delta";
  if (!missing.empty()) {
    emit_input_error("gdn.*", what, Error(TB_INVALID_ARGUMENT, "the gated-delta set is incomplete: "
                                          "no %s", missing.c_str()));
    return;
  }
  const tb_matrix_f32 &st = set[0]->view.matrix, &q = set[1]->view.matrix, &k = set[2]->view.matrix,
                      &v = set[3]->view.matrix, &g = set[4]->view.matrix, &beta = set[5]->view.matrix;
  const int64_t vh = v.rows, vd = v.cols, kh = q.rows, kd = q.cols;
  auto shape = [](const tb_matrix_f32& m) { return Format("[%lld][%lld]", (long long)m.rows, (long long)m.cols); };
  if (k.rows != kh || k.cols != kd || st.rows != vh * kd || st.cols != vd || g.rows != 1 ||
      g.cols != vh || beta.rows != 1 || beta.cols != vh || vh % kh != 0) {
    emit_input_error("gdn.*", what, Error(TB_INVALID_ARGUMENT, "the gated-delta set's shapes disagree: gdn.v %s "
                              "gives vh x vd, gdn.q %s kh x kd (vh a multiple of kh), so gdn.k must be "
                              "%s, gdn.state [%lld][%lld], gdn.g and gdn.beta [1][%lld]; found gdn.k "
                              "%s, gdn.state %s, gdn.g %s, gdn.beta %s", shape(v).c_str(),
                              shape(q).c_str(), shape(q).c_str(), (long long)(vh * kd), (long long)vd,
                              (long long)vh, shape(k).c_str(), shape(st).c_str(), shape(g).c_str(),
                              shape(beta).c_str()));
    return;
  }
  const size_t n_state = static_cast<size_t>(vh * kd * vd), n_o = static_cast<size_t>(vh * vd);
  std::vector<float> sa_state(st.data, st.data + n_state), sb_state = sa_state;
  std::vector<float> oa(n_o, canary(false)), ob(n_o, canary(true));
  tb_gdn_args args{vh, kh, kd, vd, sa_state.data(), q.data, k.data, v.data, g.data, beta.data, oa.data()};
  const Status sa = a_.gdn_delta(args);
  args.state = sb_state.data();
  args.o = ob.data();
  const Status sb = b_.gdn_delta(args);
  Mismatch mm;
  if (sa.ok() && sb.ok()) {
    mm = compare_bits(oa.data(), vd, ob.data(), vd, vh, vd, {}, "o");
    mm.merge(compare_bits(sa_state.data(), kd * vd, sb_state.data(), kd * vd, vh, kd * vd, {}, "state"));
  }
  emit("gdn.*", Format("gdn_delta vh %lld kh %lld kd %lld vd %lld", (long long)vh, (long long)kh,
                       (long long)kd, (long long)vd), sa, sb, mm);
}

}  // namespace

const std::vector<std::string>& gdn_entry_names() {
  static const std::vector<std::string> names = {"gdn.state", "gdn.q", "gdn.k", "gdn.v", "gdn.g", "gdn.beta"};
  return names;
}

CheckTotals check_entries(const Backend& a, const Backend& b, const std::vector<CheckEntry>& entries,
                          const PortingCheckOptions& options,
                          const std::function<void(const CheckLine&)>& on_line) {
  Checker c(a, b, options, on_line);
  const std::vector<std::string>& gdn_names = gdn_entry_names();
  std::vector<const CheckEntry*> gdn_set(gdn_names.size(), nullptr);
  bool any_gdn = false;
  // Float matrices bound on both sides (on[0] on a, on[1] on b), kept for the pairs.
  struct Matrix {
    const CheckEntry* entry;
    std::optional<BoundWeights> on[2];
  };
  std::vector<Matrix> matrices;
  for (const CheckEntry& e : entries) {
    if (e.view.kind == TB_WEIGHTS_STRIPS) {
      c.strips(e);
      continue;
    }
    bool is_gdn = false;
    for (size_t i = 0; i < gdn_names.size(); ++i) {
      if (e.name == gdn_names[i]) {
        gdn_set[i] = &e;
        is_gdn = any_gdn = true;
      }
    }
    if (is_gdn) continue;
    auto wa = a.bind(e.view, e.keep_alive);
    auto wb = b.bind(e.view, e.keep_alive);
    if (!wa.ok() || !wb.ok()) {
      c.emit(e.name, "(bind)", wa.status(), wb.status(), {});
      continue;
    }
    c.gemv(e, wa.value(), wb.value());
    Matrix m{&e, {}};
    m.on[0].emplace(std::move(wa.value()));
    m.on[1].emplace(std::move(wb.value()));
    matrices.push_back(std::move(m));
  }
  for (size_t i = 0; i + 1 < matrices.size();) {
    const tb_matrix_f32& x = matrices[i].entry->view.matrix;
    const tb_matrix_f32& y = matrices[i + 1].entry->view.matrix;
    if (x.rows != y.rows || x.cols != y.cols) {
      ++i;
      continue;
    }
    c.pair(*matrices[i].entry, *matrices[i + 1].entry, *matrices[i].on[0], *matrices[i + 1].on[0],
           *matrices[i].on[1], *matrices[i + 1].on[1]);
    i += 2;
  }
  if (any_gdn) c.gdn(gdn_set);
  return c.totals();
}

std::string check_result_text(const CheckLine& l) {
  const Mismatch& mm = l.mismatch;
  switch (l.outcome) {
    case CheckOutcome::unsupported:
    case CheckOutcome::error: return l.message;
    case CheckOutcome::equal: return Format("0/%lld differ", (long long)mm.total);
    case CheckOutcome::differ: break;
  }
  return Format("%lld/%lld differ, first at %s(m %lld, n %lld), max %llu ulp", (long long)mm.differing,
                (long long)mm.total, mm.first_output.c_str(), (long long)mm.first_m,
                (long long)mm.first_n, static_cast<unsigned long long>(mm.max_ulp));
}

}  // namespace twinbit::conformance
