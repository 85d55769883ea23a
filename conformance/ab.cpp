#include "conformance/ab.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>

#include "conformance/inputs.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/precision.h"
#include "core/reference.h"
#include "core/rows.h"

namespace twinbit::conformance {

std::string BenchSpec::text() const {
  return Format("%s case shape=%lldx%lld,m=%lld,prec=%s,mode=%s,op=%s",
                backend.to_string().c_str(), (long long)k,
                (long long)n, (long long)m, prec_name(prec), act_mode_name(mode),
                read_floor ? "read_floor" : "gemm");
}

uint64_t BenchSpec::host_bytes() const {
  const uint64_t um = static_cast<uint64_t>(m), kp = static_cast<uint64_t>(pad32(k));
  return strip_codes_bytes(prec, n, k) + strip_scales_bytes(n, k) +
         um * static_cast<uint64_t>(k) * 4 + um * kp + um * (kp / 32) * 4 +
         um * static_cast<uint64_t>(n) * 4;
}

Status parse_shape(const std::string& t, int64_t& k, int64_t& n) {
  long long kk = 0, nn = 0;
  char x = 0, extra = 0;
  if (std::sscanf(t.c_str(), "%lld%c%lld%c", &kk, &x, &nn, &extra) != 3 || x != 'x' || kk < 1 ||
      nn < 1 || kk > kMaxDim || nn > kMaxDim) {
    return Error(TB_INVALID_ARGUMENT, "shape '%s' is not KxN (expected e.g. 2048x6144, each 1 .. %lld)",
                 t.c_str(), (long long)kMaxDim);
  }
  k = kk;
  n = nn;
  return Status();
}

Status parse_bench_case(const std::string& text, BenchSpec& s) {
  std::stringstream in(text);
  std::string kv;
  while (std::getline(in, kv, ',')) {
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (key == "shape") {
      TB_RETURN_IF_ERROR(parse_shape(value, s.k, s.n));
    } else if (key == "m") {
      char* end = nullptr;
      errno = 0;
      const long long m = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end || errno == ERANGE) {
        return Error(TB_INVALID_ARGUMENT, "case '%s': m=%s is not a row count (expected %lld .. %lld)",
                     text.c_str(), value.c_str(), (long long)kMinRows, (long long)kMaxRows);
      }
      TB_RETURN_IF_ERROR(check_rows(m, Format("case '%s': m", text.c_str()).c_str()));
      s.m = m;
    } else if (key == "prec" && find_precision(value).ok()) {
      s.prec = find_precision(value).value()->prec;
    } else if (key == "mode" && (value == "f32" || value == "i8")) {
      s.mode = value == "f32" ? TB_ACT_F32 : TB_ACT_I8;
    } else if (key == "op" && (value == "gemm" || value == "read_floor")) {
      s.read_floor = value == "read_floor";
    } else {
      return Error(TB_INVALID_ARGUMENT, "case '%s': '%s' is not understood (expected shape=KxN, "
                   "m=M, prec=%s, mode=f32|i8 or op=gemm|read_floor; a backend's creation "
                   "parameters follow its name after a comma: cpu,threads=8)", text.c_str(),
                   kv.c_str(), precision_alternatives().c_str());
    }
  }
  return Status();
}

Result<BenchSpec> parse_bench_spec(const std::string& spec, const BenchSpec& defaults) {
  BenchSpec s = defaults;
  s.backend = {};
  // The older form BACKEND:CASE ("cuda:m=32", "./lib.so:shape=64x64"): a ':' followed by
  // key=value pairs. A device index after ':' has no '=' before the next ',', so "cuda:1,..."
  // is the spec grammar.
  size_t colon = spec.find(':');
  while (colon != std::string::npos) {
    const std::string after = spec.substr(colon + 1, spec.find(',', colon) - colon - 1);
    if (after.find('=') != std::string::npos) break;
    colon = spec.find(':', colon + 1);
  }
  auto backend = parse_backend_spec(spec.substr(0, colon));
  if (!backend.ok()) return backend.status();
  s.backend = std::move(backend).value();
  if (colon != std::string::npos) TB_RETURN_IF_ERROR(parse_bench_case(spec.substr(colon + 1), s));
  return s;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

// One side: its backend, its weights bound there, its inputs, and the call it times.
struct Side {
  BenchSpec spec;
  const Backend* backend = nullptr;
  std::shared_ptr<OwnedStrips> weights;
  BoundWeights bound;
  std::vector<float> x, xd, y;
  std::vector<int8_t> xq;
  int reps = 1;

  Status call() {
    if (spec.read_floor) return backend->read_floor(bound, spec.m);
    tb_gemm_args a{};
    a.mode = spec.mode;
    a.m = spec.m;
    a.x = x.data();
    a.ldx = spec.k;
    a.xq = xq.data();
    a.ldxq = pad32(spec.k);
    a.xd = xd.data();
    a.ldxd = pad32(spec.k) / 32;
    a.y = y.data();
    a.ldy = spec.n;
    if (spec.mode == TB_ACT_I8) {  // timed as an engine runs it: quantise, then the gemm
      const tb_quantize_args q{spec.m, spec.k, x.data(), spec.k, xq.data(), a.ldxq, xd.data(), a.ldxd};
      TB_RETURN_IF_ERROR(backend->quantize_i8(q));
    }
    return backend->gemm(bound, a);
  }
  Result<double> timed_round() {
    const double t0 = now_us();
    for (int i = 0; i < reps; ++i) TB_RETURN_IF_ERROR(call());
    return (now_us() - t0) / reps;
  }
};

}  // namespace

Result<AbResult> run_ab(const BenchSpec& sa, const BenchSpec& sb, const AbOptions& o) {
  // One backend instance per distinct backend: "two variants of one" share it.
  std::map<std::string, std::unique_ptr<Backend>> backends;
  std::map<std::string, std::shared_ptr<OwnedStrips>> weights;
  Side sides[2];
  const BenchSpec* specs[2] = {&sa, &sb};
  for (int i = 0; i < 2; ++i) {
    Side& s = sides[i];
    s.spec = *specs[i];
    const std::string key = s.spec.backend.to_string();
    if (!backends.count(key)) {
      auto b = create_backend(s.spec.backend);
      if (!b.ok()) return b.status();
      backends[key] = std::make_unique<Backend>(std::move(b).value());
    }
    s.backend = backends[key].get();
    const std::string wkey = Format("%s_%lldx%lld", prec_name(s.spec.prec), (long long)s.spec.k, (long long)s.spec.n);
    if (!weights.count(wkey)) {
      Rng rng(case_seed(o.seed, "bench_weights_" + wkey));
      weights[wkey] = std::make_shared<OwnedStrips>(random_strips(rng, s.spec.prec, s.spec.n, s.spec.k));
    }
    s.weights = weights[wkey];
    tb_weights_view view{};
    view.kind = TB_WEIGHTS_STRIPS;
    view.strips = s.weights->view();
    auto bound = s.backend->bind(view);
    if (!bound.ok()) return Status(bound.status().code(), s.spec.text() + ": " + bound.status().message());
    s.bound = std::move(bound).value();
    Rng rng(case_seed(o.seed, Format("bench_x_%lldx%lld", (long long)s.spec.m, (long long)s.spec.k)));
    s.x = random_floats(rng, s.spec.m * s.spec.k);
    const int64_t kp = pad32(s.spec.k);
    s.xq.assign(static_cast<size_t>(s.spec.m * kp), 0);
    s.xd.assign(static_cast<size_t>(s.spec.m * kp / 32), 0.0f);
    ref::quantize_activations(s.spec.m, s.spec.k, s.x.data(), s.spec.k, s.xq.data(), kp, s.xd.data(), kp / 32);
    s.y.assign(static_cast<size_t>(s.spec.m * s.spec.n), 0.0f);
    // Warm-up, and the calls per round: enough that a round is not dominated by timer noise.
    for (int w = 0; w < std::max(1, o.warmup); ++w) {
      if (Status st = s.call(); !st.ok()) return Status(st.code(), s.spec.text() + ": " + st.message());
    }
    const double t0 = now_us();
    TB_RETURN_IF_ERROR(s.call());
    const double one = std::max(0.05, now_us() - t0);
    s.reps = static_cast<int>(std::clamp(o.min_round_us / one, 1.0, 10000.0));
  }

  AbResult r;
  r.device_a = sides[0].backend->device();
  r.device_b = sides[1].backend->device();
  std::vector<double> ratios;
  for (int round = 0; round < std::max(1, o.rounds); ++round) {
    double t[2];
    for (int i = 0; i < 2; ++i) {
      auto dt = sides[i].timed_round();
      if (!dt.ok()) return Status(dt.status().code(), sides[i].spec.text() + ": " + dt.status().message());
      t[i] = dt.value();
    }
    r.a.rounds_us.push_back(t[0]);
    r.b.rounds_us.push_back(t[1]);
    ratios.push_back(t[0] / t[1]);
    if (o.progress) o.progress(Format("round %d: A %.1f us, B %.1f us", round + 1, t[0], t[1]));
  }
  for (int i = 0; i < 2; ++i) {
    SideStats& st = i == 0 ? r.a : r.b;
    st.median_us = percentile(st.rounds_us, 50);
    st.p10_us = percentile(st.rounds_us, 10);
    st.p90_us = percentile(st.rounds_us, 90);
    st.calls_per_round = sides[i].reps;
  }
  r.ratio_median = percentile(ratios, 50);
  r.ratio_p10 = percentile(ratios, 10);
  r.ratio_p90 = percentile(ratios, 90);
  const BenchSpec &a = sides[0].spec, &b = sides[1].spec;
  if (!a.read_floor && !b.read_floor && a.prec == b.prec && a.mode == b.mode && a.m == b.m &&
      a.k == b.k && a.n == b.n) {
    r.compared = true;
    r.bits = compare_bits(sides[0].y.data(), a.n, sides[1].y.data(), b.n, a.m, a.n, {}, "y");
  }
  return r;
}

}  // namespace twinbit::conformance
