#include "core/reference.h"

#include <cassert>
#include <cmath>
#include <vector>

#include "core/numerics.h"
#include "core/strip_layout.h"
#include "core/tb_expf.h"

namespace twinbit::ref {

int weight_code(const tb_strips& w, int64_t n, int64_t k) {
  return StripLayout::of(w).code(w.codes, n, k);
}

float weight_scale(const tb_strips& w, int64_t n, int64_t g) {
  return fp16_to_float(w.scales[StripLayout::of(w).scale_index(n, g)]);
}

namespace {
// The slice accumulation and fixed-order fold shared by both modes:
//   for z: acc[z] = +0; for g in slice z: acc[z] = fma(p[g], t[g], acc[z])
//   out = +0; for z: out = out + acc[z]
float fold_slices(const std::vector<float>& p, const std::vector<float>& t, int64_t nsplit) {
  const int64_t ngroups = static_cast<int64_t>(p.size());
  float out = +0.0f;
  for (int64_t z = 0; z < nsplit; ++z) {
    float acc = +0.0f;
    for (int64_t g = slice_begin(ngroups, nsplit, z); g < slice_end(ngroups, nsplit, z); ++g) {
      acc = std::fma(p[g], t[g], acc);
    }
    out = out + acc;
  }
  return out;
}

// code = clamp(rint(q), -127, 127), rint rounding half to even (the default mode). The clamp
// matters only when d is subnormal: d = amax / 127 then carries few significant bits, so amax / d
// reaches up to 190 (amax between 128 and 16065 times 2^-149); elsewhere |q| <= 127 already. A
// NaN quotient (a NaN x, or an infinite x whose group has d = inf) gives 0.
int8_t activation_code(float q) {
  const float r = std::nearbyint(q);
  if (r >= 127.0f) return 127;
  if (r <= -127.0f) return -127;
  return r == r ? static_cast<int8_t>(r) : 0;
}
}  // namespace

float gemm_f32_at(const tb_strips& w, const float* x_row, int64_t n) {
  const int64_t ngroups = w.kp / 32;
  std::vector<float> p(ngroups), ws(ngroups);
  for (int64_t g = 0; g < ngroups; ++g) {  // group dot, sequential in k
    float acc = +0.0f;
    for (int64_t kk = 0; kk < 32; ++kk) {
      const int64_t k = g * 32 + kk;
      const float xv = k < w.k ? x_row[k] : +0.0f;  // positions k >= K are +0
      acc = std::fma(static_cast<float>(weight_code(w, n, k)), xv, acc);
    }
    p[g] = acc;
    ws[g] = weight_scale(w, n, g);
  }
  return fold_slices(p, ws, fold_plan(w));
}

void gemm_f32(const tb_strips& w, int64_t m, const float* x, int64_t ldx, float* y, int64_t ldy) {
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t n = 0; n < w.n; ++n) y[row * ldy + n] = gemm_f32_at(w, x + row * ldx, n);
  }
}

void quantize_activations(int64_t m, int64_t k, const float* x, int64_t ldx, int8_t* xq,
                          int64_t ldxq, float* xd, int64_t ldxd) {
  const int64_t ngroups = ngroups_of(k);
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t g = 0; g < ngroups; ++g) {
      float v[32];
      float amax = +0.0f;
      for (int64_t kk = 0; kk < 32; ++kk) {
        const int64_t col = g * 32 + kk;
        v[kk] = col < k ? x[row * ldx + col] : +0.0f;
        const float a = std::fabs(v[kk]);
        if (a > amax) amax = a;  // a NaN never compares greater: amax is the max of the others
      }
      const float d = amax / 127.0f;
      for (int64_t kk = 0; kk < 32; ++kk) {
        xq[row * ldxq + g * 32 + kk] = d == 0.0f ? 0 : activation_code(v[kk] / d);
      }
      xd[row * ldxd + g] = d;
    }
  }
}

float gemm_i8_at(const tb_strips& w, const int8_t* xq_row, const float* xd_row, int64_t n) {
  const int64_t ngroups = w.kp / 32;
  std::vector<float> p(ngroups), t(ngroups);
  for (int64_t g = 0; g < ngroups; ++g) {
    int32_t isum = 0;  // exact: |isum| <= 32 * 128 * 127 (a q8 code may be -128)
    for (int64_t kk = 0; kk < 32; ++kk) {
      isum += weight_code(w, n, g * 32 + kk) * xq_row[g * 32 + kk];
    }
    p[g] = static_cast<float>(isum);             // exact: fits 24 bits
    t[g] = weight_scale(w, n, g) * xd_row[g];    // one rounding
  }
  return fold_slices(p, t, fold_plan(w));
}

void gemm_i8(const tb_strips& w, int64_t m, const int8_t* xq, int64_t ldxq, const float* xd,
             int64_t ldxd, float* y, int64_t ldy) {
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t n = 0; n < w.n; ++n) {
      y[row * ldy + n] = gemm_i8_at(w, xq + row * ldxq, xd + row * ldxd, n);
    }
  }
}

void gemv_f32(const tb_matrix_f32& w, const float* x, float* y) {
  for (int64_t r = 0; r < w.rows; ++r) {
    float s[32];
    for (int l = 0; l < 32; ++l) {  // lane l: columns l, l+32, l+64, ... ascending
      s[l] = +0.0f;
      for (int64_t c = l; c < w.cols; c += 32) s[l] = std::fma(w.data[r * w.cols + c], x[c], s[l]);
    }
    for (int off = 16; off >= 1; off /= 2) {  // halving tree
      for (int l = 0; l < off; ++l) s[l] = s[l] + s[l + off];
    }
    y[r] = s[0];
  }
}

void gdn_delta(const tb_gdn_args& a) {
  assert(a.kh > 0 && a.vh % a.kh == 0);
  const int64_t per_key = a.vh / a.kh;
  for (int64_t vi = 0; vi < a.vh; ++vi) {
    const float* q = a.q + (vi / per_key) * a.kd;
    const float* k = a.k + (vi / per_key) * a.kd;
    float* S = a.state + vi * a.kd * a.vd;  // [kd][vd]
    const float alpha = tb_expf(a.g[vi]);
    const float bt = a.beta[vi];
    for (int64_t dv = 0; dv < a.vd; ++dv) {
      const float vv = a.v[vi * a.vd + dv];
      float kv = +0.0f;
      for (int64_t dk = 0; dk < a.kd; ++dk) {
        const float t = S[dk * a.vd + dv] * alpha;
        S[dk * a.vd + dv] = t;
        kv = std::fma(t, k[dk], kv);
      }
      const float tmp = (vv - kv) * bt;
      float oa = +0.0f;
      for (int64_t dk = 0; dk < a.kd; ++dk) {
        const float t = std::fma(k[dk], tmp, S[dk * a.vd + dv]);
        S[dk * a.vd + dv] = t;
        oa = std::fma(t, q[dk], oa);
      }
      a.o[vi * a.vd + dv] = oa;
    }
  }
}

}  // namespace twinbit::ref
