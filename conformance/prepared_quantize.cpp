// quantize_i8 cases: activation rows with tiny and saturating groups, NaN and infinities, the
// reference's codes and scales, one run compared byte for byte (codes) and bit for bit (scales).
#include <cmath>
#include <cstring>
#include <limits>

#include "conformance/deviations.h"
#include "conformance/guards/guarded_buffer.h"
#include "conformance/inputs.h"
#include "conformance/prepared.h"
#include "core/numerics.h"
#include "core/reference.h"

namespace twinbit::conformance::detail {
namespace {

constexpr int64_t kSlack = 32;     // canary bytes / floats after every row of xq and xd
constexpr int8_t kCodeCanary = 0x5a;  // the fill of the guarded xq

class QuantizeCase final : public PreparedCase {
 public:
  QuantizeCase(const Case& c, uint64_t seed) : c_(c), kp_(pad32(c.k)), ng_(kp_ / 32) {
    Rng rng(seed);
    ldx_ = c.k + 3;  // a leading dimension wider than the row: the tail must not be read
    x_ = random_floats(rng, c.m * ldx_);
    tiny_activation_groups(rng, x_, c.m, c.k, ldx_);
    for (int64_t r = 0; r < c.m; ++r) {  // non-finite values in some groups
      for (int64_t g = 0; g < ng_; ++g) {
        const int64_t col = g * 32 + rng.range(0, 31);
        if (col >= c.k) continue;
        if (rng.chance(60)) x_[r * ldx_ + col] = std::numeric_limits<float>::quiet_NaN();
        else if (rng.chance(40)) x_[r * ldx_ + col] = -std::numeric_limits<float>::infinity();
      }
      for (int64_t col = c.k; col < ldx_; ++col) x_[r * ldx_ + col] = 1e30f;  // never read
    }
    qref_.assign(static_cast<size_t>(c.m * kp_), 0);
    dref_.assign(static_cast<size_t>(c.m * ng_), 0.0f);
    ref::quantize_activations(c.m, c.k, x_.data(), ldx_, qref_.data(), kp_, dref_.data(), ng_);
    checked_ = Format("codes [%lld][%lld] and scales [%lld][%lld]", (long long)c.m,
                      (long long)kp_, (long long)c.m, (long long)ng_);
  }

  Attempt run(const Backend& b) const override {
    Attempt a;
    // Without the entry callers get the reference on the host: nothing of the backend to check.
    if (!b.has_quantize_i8()) {
      a.status = Error(TB_UNIMPLEMENTED, "backend '%s' has no quantize_i8 entry (callers get the "
                       "scalar reference on the host)", b.name().c_str());
      return a;
    }
    tb_op_desc d{};
    d.op = TB_OP_QUANTIZE_I8;
    d.m = c_.m;
    d.k = c_.k;
    if (a.status = b.supports(d); !a.status.ok()) return a;
    const int64_t ldq = kp_ + kSlack, ldd = ng_ + kSlack;
    guards::GuardedBuffer xqb("xq", static_cast<size_t>(c_.m * ldq), 1, 0x5a5a5a5au);
    guards::GuardedBuffer xdb("xd", static_cast<size_t>(c_.m * ldd) * 4, 4, kCanaryBits);
    const int8_t* xq = xqb.as<int8_t>();
    const float* xd = xdb.as<float>();
    const tb_quantize_args args{c_.m, c_.k, x_.data(), ldx_, xqb.as<int8_t>(), ldq, xdb.as<float>(), ldd};
    if (a.status = after_claim(b.quantize_i8(args), "quantize_i8"); !a.status.ok()) return a;
    if (a.status = xqb.check(); !a.status.ok()) return a;
    if (a.status = xdb.check(); !a.status.ok()) return a;
    for (int64_t r = 0; r < c_.m; ++r) {
      for (int64_t i = kp_; i < ldq; ++i) {
        if (xq[r * ldq + i] != kCodeCanary) return wrote_past("xq", r, kp_, a);
      }
      for (int64_t i = ng_; i < ldd; ++i) {
        if (!is_canary(xd[r * ldd + i])) return wrote_past("xd", r, ng_, a);
      }
    }
    a.output_hash = hash_bytes(xd, xdb.bytes(), hash_bytes(xq, xqb.bytes()));
    a.mismatch = compare_codes(xq, ldq);
    a.mismatch.merge(compare_bits(xd, ldd, dref_.data(), ng_, c_.m, ng_, {}, "xd"));
    return a;
  }

  std::vector<InputHash> input_hashes() const override {
    return {{"x (activations)", hash_bytes(x_.data(), x_.size() * 4)}};
  }

  // One run of the backend, then each deviation of the quantiser over every row, codes and scales.
  Explanation explain(const Backend& b) const override {
    Explanation e;
    e.checked = checked_;
    if (!b.has_quantize_i8()) {
      e.not_explained = "the backend has no quantize_i8 entry";
      return e;
    }
    std::vector<int8_t> xq(static_cast<size_t>(c_.m * kp_));
    std::vector<float> xd(static_cast<size_t>(c_.m * ng_));
    tb_op_desc d{};
    d.op = TB_OP_QUANTIZE_I8;
    d.m = c_.m;
    d.k = c_.k;
    Status s = b.supports(d);
    if (s.ok()) s = b.quantize_i8({c_.m, c_.k, x_.data(), ldx_, xq.data(), kp_, xd.data(), ng_});
    if (!s.ok()) {
      e.not_explained = "the backend did not compute it: " + s.to_string();
      return e;
    }
    e.backend = compare_codes(xq.data(), kp_);
    e.backend.merge(compare_bits(xd.data(), ng_, dref_.data(), ng_, c_.m, ng_, {}, "xd"));
    if (e.backend.differing == 0) {
      e.not_explained = "the backend's bits equal the reference's: nothing to explain";
      return e;
    }
    for (const Deviation& dev : quantize_deviations()) {
      std::vector<int8_t> q(xq.size());
      std::vector<float> dd(xd.size());
      deviant_quantize(c_.m, c_.k, x_.data(), ldx_, q.data(), kp_, dd.data(), ng_, dev);
      DeviationTrial t{dev, true, ""};
      for (size_t i = 0; i < q.size() && t.reproduces; ++i) {
        if (q[i] != xq[i]) t = {dev, false, Format("xq[%lld][%lld]", (long long)(i / kp_), (long long)(i % kp_))};
      }
      for (size_t i = 0; i < dd.size() && t.reproduces; ++i) {
        if (std::memcmp(&dd[i], &xd[i], 4) != 0) t = {dev, false, Format("xd[%lld][%lld]", (long long)(i / ng_), (long long)(i % ng_))};
      }
      e.trials.push_back(t);
    }
    return e;
  }

  std::vector<DumpArray> arrays() const override {
    auto array = [](const char* name, const char* dtype, const char* what, std::vector<int64_t> shape,
                    const void* data, size_t bytes) {
      DumpArray a{name, dtype, what, std::move(shape), std::vector<uint8_t>(bytes)};
      if (bytes) std::memcpy(a.bytes.data(), data, bytes);
      return a;
    };
    std::vector<float> x(static_cast<size_t>(c_.m * c_.k));
    for (int64_t r = 0; r < c_.m; ++r) std::memcpy(&x[r * c_.k], &x_[r * ldx_], static_cast<size_t>(c_.k) * 4);
    return {array("x", "<f4", "activations [M][K] (NaN and infinities included)", {c_.m, c_.k}, x.data(), x.size() * 4),
            array("xq_expected", "|i1", "the reference's codes [M][Kp]", {c_.m, kp_}, qref_.data(), qref_.size()),
            array("xd_expected", "<f4", "the reference's scales [M][Kp/32]", {c_.m, ng_}, dref_.data(), dref_.size() * 4)};
  }

 private:
  static Attempt wrote_past(const char* what, int64_t row, int64_t used, Attempt& a) {
    a.status = Error(TB_INTERNAL, "wrote %s[%lld] past its %lld elements", what, (long long)row,
                     (long long)used);
    return a;
  }

  // Codes are integers: a difference counts one element; max_ulp holds the largest |difference|.
  Mismatch compare_codes(const int8_t* got, int64_t ld) const {
    Mismatch mm;
    mm.total = c_.m * kp_;
    for (int64_t r = 0; r < c_.m; ++r) {
      for (int64_t i = 0; i < kp_; ++i) {
        const int want = qref_[r * kp_ + i], have = got[r * ld + i];
        if (want == have) continue;
        if (mm.differing++ == 0) {
          mm.first_m = r;
          mm.first_n = i;
          mm.first_output = "xq";
        }
        mm.max_ulp = std::max<uint64_t>(mm.max_ulp, static_cast<uint64_t>(std::abs(want - have)));
      }
    }
    return mm;
  }

  Case c_;
  int64_t kp_, ng_, ldx_ = 0;
  std::vector<float> x_;
  std::vector<int8_t> qref_;
  std::vector<float> dref_;
};

}  // namespace

std::unique_ptr<PreparedCase> prepare_quantize(const Case& c, uint64_t case_seed) {
  return std::make_unique<QuantizeCase>(c, case_seed);
}

}  // namespace twinbit::conformance::detail
