// The deviated references (deviations.h): ref::gemm_f32_at, gemm_i8_at, gemv_f32, gdn_delta and
// quantize_activations with one named departure each. Everything not named is the contract's, step for step.
#include "conformance/deviations.h"

#include <cmath>
#include <vector>

#include "core/numerics.h"
#include "core/reference.h"
#include "core/tb_expf.h"
#include <twinbit/status.hpp>

namespace twinbit::conformance {
namespace {

constexpr const char* kNames[] = {"unfused", "tree_fold", "flush_to_zero", "split_plan",
                                  "i8_scale_order", "round_half_away"};

// The float operations of the contract, as the deviation performs them.
struct Ops {
  const Deviation& d;
  bool ftz() const { return d.kind == DeviationKind::flush_to_zero; }
  float flush(float f) const {
    return ftz() && std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
  }
  float add(float a, float b) const { return flush(flush(a) + flush(b)); }
  float mul(float a, float b) const { return flush(flush(a) * flush(b)); }
  float div(float a, float b) const { return flush(flush(a) / flush(b)); }
  float mad(float a, float b, float c) const {  // the contract's fma(a, b, c)
    if (d.kind == DeviationKind::unfused) return add(mul(a, b), c);
    return flush(std::fma(flush(a), flush(b), flush(c)));
  }
};

int64_t nsplit_of(const tb_strips& w, const Deviation& d) {
  return d.kind == DeviationKind::split_plan ? d.nsplit : fold_plan(w);
}

// The contract's slice accumulation and fold (reference.cpp fold_slices), or a pairwise tree over
// the slice partials.
float fold(const Ops& o, const std::vector<float>& p, const std::vector<float>& t, int64_t nsplit) {
  const int64_t ngroups = static_cast<int64_t>(p.size());
  std::vector<float> acc(static_cast<size_t>(nsplit));
  for (int64_t z = 0; z < nsplit; ++z) {
    float a = +0.0f;
    for (int64_t g = slice_begin(ngroups, nsplit, z); g < slice_end(ngroups, nsplit, z); ++g) {
      a = o.mad(p[g], t[g], a);
    }
    acc[z] = a;
  }
  if (o.d.kind == DeviationKind::tree_fold && o.d.variant == 0) {
    while (acc.size() > 1) {  // adjacent pairs; an odd last partial moves up unchanged
      std::vector<float> next;
      for (size_t i = 0; i + 1 < acc.size(); i += 2) next.push_back(o.add(acc[i], acc[i + 1]));
      if (acc.size() % 2) next.push_back(acc.back());
      acc = std::move(next);
    }
    return o.add(+0.0f, acc[0]);  // the contract's out = +0 start, so only the order differs
  }
  float out = +0.0f;
  for (float a : acc) out = o.add(out, a);
  return out;
}

}  // namespace

std::string Deviation::name() const { return kNames[static_cast<int>(kind)]; }

std::string Deviation::detail() const {
  switch (kind) {
    case DeviationKind::unfused:
      return "multiply and add rounded separately where the contract has fma (no fused multiply-add)";
    case DeviationKind::tree_fold:
      return variant == 0 ? "the slice partials summed as a pairwise tree, not in sequence"
                          : "the group dot in 8 lanes (k mod 8) summed by a halving tree, not in sequence";
    case DeviationKind::flush_to_zero:
      return "subnormal operands and results flushed to zero (FTZ/DAZ)";
    case DeviationKind::split_plan:
      return Format("the group axis cut into %lld slices instead of the contract's split plan",
                    (long long)nsplit);
    case DeviationKind::i8_scale_order:
      return variant == 0 ? "I8 scales applied as fma(p * ws, xd, acc), not fma(p, ws * xd, acc)"
                          : "I8 scales applied as fma(p * xd, ws, acc), not fma(p, ws * xd, acc)";
    case DeviationKind::round_half_away:
      return "the quantiser rounds halves away from zero, not to even";
  }
  return "";
}

bool parse_deviation_kind(const std::string& text, DeviationKind* out) {
  for (int i = 0; i < 6; ++i) {
    if (text == kNames[i]) {
      *out = static_cast<DeviationKind>(i);
      return true;
    }
  }
  return false;
}

std::string deviation_kind_names() {
  std::string s;
  for (const char* n : kNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

float deviant_gemm_f32_at(const tb_strips& w, const float* x_row, int64_t n, const Deviation& d) {
  const Ops o{d};
  const int64_t ngroups = w.kp / 32;
  std::vector<float> p(ngroups), ws(ngroups);
  const bool lanes = d.kind == DeviationKind::tree_fold && d.variant == 1;
  for (int64_t g = 0; g < ngroups; ++g) {
    float lane[8] = {};  // +0
    float acc = +0.0f;
    for (int64_t kk = 0; kk < 32; ++kk) {
      const int64_t k = g * 32 + kk;
      const float xv = k < w.k ? x_row[k] : +0.0f;
      const float code = static_cast<float>(ref::weight_code(w, n, k));
      if (lanes) lane[kk % 8] = o.mad(code, xv, lane[kk % 8]);
      else acc = o.mad(code, xv, acc);
    }
    if (lanes) {
      for (int off = 4; off >= 1; off /= 2) {
        for (int l = 0; l < off; ++l) lane[l] = o.add(lane[l], lane[l + off]);
      }
      acc = lane[0];
    }
    p[g] = acc;
    ws[g] = ref::weight_scale(w, n, g);
  }
  return fold(o, p, ws, nsplit_of(w, d));
}

float deviant_gemm_i8_at(const tb_strips& w, const int8_t* xq_row, const float* xd_row, int64_t n,
                         const Deviation& d) {
  const Ops o{d};
  const int64_t ngroups = w.kp / 32;
  std::vector<float> p(ngroups), t(ngroups);
  for (int64_t g = 0; g < ngroups; ++g) {
    int32_t isum = 0;
    for (int64_t kk = 0; kk < 32; ++kk) isum += ref::weight_code(w, n, g * 32 + kk) * xq_row[g * 32 + kk];
    const float ws = ref::weight_scale(w, n, g), xd = xd_row[g];
    if (d.kind == DeviationKind::i8_scale_order) {
      // fma(p * a, b, acc) = fma(p', b, acc) with p' = p * a rounded: the fold's operands change.
      p[g] = o.mul(static_cast<float>(isum), d.variant == 0 ? ws : xd);
      t[g] = d.variant == 0 ? xd : ws;
    } else {
      p[g] = static_cast<float>(isum);
      t[g] = o.mul(ws, xd);
    }
  }
  return fold(o, p, t, nsplit_of(w, d));
}

float deviant_gemv_f32_at(const tb_matrix_f32& w, const float* x, int64_t row, const Deviation& d) {
  const Ops o{d};
  float s[32];
  for (int l = 0; l < 32; ++l) {  // the contract's 32 lanes: columns l, l + 32, ... ascending
    s[l] = +0.0f;
    for (int64_t c = l; c < w.cols; c += 32) s[l] = o.mad(w.data[row * w.cols + c], x[c], s[l]);
  }
  for (int off = 16; off >= 1; off /= 2) {  // and their halving tree
    for (int l = 0; l < off; ++l) s[l] = o.add(s[l], s[l + off]);
  }
  return s[0];
}

void deviant_gdn_delta(const tb_gdn_args& a, const Deviation& d) {
  const Ops o{d};
  const int64_t per_key = a.vh / a.kh;
  for (int64_t vi = 0; vi < a.vh; ++vi) {
    const float* q = a.q + (vi / per_key) * a.kd;
    const float* k = a.k + (vi / per_key) * a.kd;
    float* S = a.state + vi * a.kd * a.vd;  // [kd][vd]
    const float alpha = o.flush(tb_expf(o.flush(a.g[vi])));
    const float bt = a.beta[vi];
    for (int64_t dv = 0; dv < a.vd; ++dv) {
      float kv = +0.0f;
      for (int64_t dk = 0; dk < a.kd; ++dk) {  // decay the column, k . S
        float& s = S[dk * a.vd + dv];
        s = o.mul(s, alpha);
        kv = o.mad(s, k[dk], kv);
      }
      const float tmp = o.mul(o.add(a.v[vi * a.vd + dv], -kv), bt);
      float oa = +0.0f;
      for (int64_t dk = 0; dk < a.kd; ++dk) {  // the delta update, q . S
        float& s = S[dk * a.vd + dv];
        s = o.mad(k[dk], tmp, s);
        oa = o.mad(s, q[dk], oa);
      }
      a.o[vi * a.vd + dv] = oa;
    }
  }
}

void deviant_quantize(int64_t m, int64_t k, const float* x, int64_t ldx, int8_t* xq, int64_t ldxq,
                      float* xd, int64_t ldxd, const Deviation& d) {
  const Ops o{d};
  const int64_t ngroups = ngroups_of(k);
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t g = 0; g < ngroups; ++g) {
      float v[32];
      float amax = +0.0f;
      for (int64_t kk = 0; kk < 32; ++kk) {
        const int64_t col = g * 32 + kk;
        v[kk] = o.flush(col < k ? x[row * ldx + col] : +0.0f);
        const float a = std::fabs(v[kk]);
        if (a > amax) amax = a;
      }
      const float dd = o.div(amax, 127.0f);
      for (int64_t kk = 0; kk < 32; ++kk) {
        int8_t code = 0;
        if (dd != 0.0f) {
          const float q = o.div(v[kk], dd);
          const float r = d.kind == DeviationKind::round_half_away ? std::round(q) : std::nearbyint(q);
          code = r >= 127.0f ? 127 : r <= -127.0f ? -127 : r == r ? static_cast<int8_t>(r) : 0;
        }
        xq[row * ldxq + g * 32 + kk] = code;
      }
      xd[row * ldxd + g] = dd;
    }
  }
}

std::vector<Deviation> gemm_deviations(tb_act_mode mode, int64_t n_total, int64_t k) {
  std::vector<Deviation> out;
  out.push_back({DeviationKind::unfused});
  out.push_back({DeviationKind::tree_fold, 0});
  if (mode == TB_ACT_F32) out.push_back({DeviationKind::tree_fold, 1});
  out.push_back({DeviationKind::flush_to_zero});
  if (mode == TB_ACT_I8) {
    out.push_back({DeviationKind::i8_scale_order, 0});
    out.push_back({DeviationKind::i8_scale_order, 1});
  }
  const int64_t ngroups = ngroups_of(k), contract = split_plan(n_total, k);
  const int64_t b = ceil_div(pad32(n_total), 1024);
  std::vector<int64_t> plans = {1, b < 512 ? std::min(ngroups, ceil_div(512, b)) : 1};
  for (int64_t s = 2; s <= ngroups; s *= 2) plans.push_back(s);
  for (size_t i = 0; i < plans.size(); ++i) {
    bool seen = plans[i] == contract;
    for (size_t j = 0; j < i; ++j) seen = seen || plans[j] == plans[i];
    if (!seen) out.push_back({DeviationKind::split_plan, 0, plans[i]});
  }
  return out;
}

std::vector<Deviation> quantize_deviations() {
  return {{DeviationKind::flush_to_zero}, {DeviationKind::round_half_away}};
}

}  // namespace twinbit::conformance
