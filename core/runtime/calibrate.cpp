#include "core/runtime/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <thread>
#include <tuple>

#include "artifacts/quantize.h"
#include "artifacts/synthetic.h"
#include "core/backend.hpp"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/precision.h"
#include "core/reference.h"
#include "core/registry.h"
#include "core/strip_layout.h"
#include "core/runtime/cost_model.h"
#include "core/runtime/default_plan.h"

namespace twinbit::runtime {

namespace {

// A measurement should last at least this long; shorter calls are repeated within it.
constexpr double kMinMeasurementUs = 200.0;
constexpr int kMaxCallsPerMeasurement = 1000;
constexpr int64_t kProbeN = 32, kProbeK = 32;

struct Shape {
  int64_t n, k;
};

struct Point {
  tb_act_mode mode;
  tb_prec prec;
  int64_t m, n, k;
  bool probe;
};

std::vector<Point> sweep(bool quick) {
  const std::vector<Shape> shapes = quick ? std::vector<Shape>{{128, 64}, {512, 256}}
                                          : std::vector<Shape>{{1024, 1024}, {4096, 2048}, {16384, 2048}};
  const std::vector<int64_t> ms = quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 8, 32};
  std::vector<Point> points;
  for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      points.push_back(Point{mode, prec, 1, kProbeN, kProbeK, true});
      for (const Shape& s : shapes) {
        for (int64_t m : ms) points.push_back(Point{mode, prec, m, s.n, s.k, false});
      }
    }
  }
  return points;
}

// Strips of deterministic pseudo-random weights, quantised a block of rows at a time so the
// floats of the largest shape (128 MB) are never held at once.
quant::PackedStrips make_weights(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  quant::PackedStrips strips = quant::make_strips(prec, n, k);
  constexpr int64_t kRows = 256;
  std::vector<float> rows(static_cast<size_t>(kRows * k));
  for (int64_t n0 = 0; n0 < n; n0 += kRows) {
    const int64_t count = std::min(kRows, n - n0);
    synthetic::fill_uniform(rows.data(), count * k, seed + static_cast<uint64_t>(n0), 1.0f);
    quant::pack_rows(strips, n0, count, rows.data(), k);
  }
  return strips;
}

// The inputs and output of one point, shared by every backend (the calls are not concurrent).
struct PointData {
  std::vector<float> x, xd, y;
  std::vector<int8_t> xq;
  tb_gemm_args args{};
};

PointData make_point_data(const Point& p, uint64_t seed) {
  PointData d;
  d.x.resize(static_cast<size_t>(p.m * p.k));
  synthetic::fill_uniform(d.x.data(), p.m * p.k, seed, 1.0f);
  d.y.resize(static_cast<size_t>(p.m * p.n));
  d.args.mode = p.mode;
  d.args.m = p.m;
  d.args.y = d.y.data();
  d.args.ldy = p.n;
  if (p.mode == TB_ACT_F32) {
    d.args.x = d.x.data();
    d.args.ldx = p.k;
  } else {
    // Quantised once here, not timed: the runtime quantises once per call whatever the
    // placement, so it is no part of what one backend's choice costs.
    const int64_t kp = pad32(p.k);
    d.xq.resize(static_cast<size_t>(p.m * kp));
    d.xd.resize(static_cast<size_t>(p.m * (kp / 32)));
    ref::quantize_activations(p.m, p.k, d.x.data(), p.k, d.xq.data(), kp, d.xd.data(), kp / 32);
    d.args.xq = d.xq.data();
    d.args.ldxq = kp;
    d.args.xd = d.xd.data();
    d.args.ldxd = kp / 32;
  }
  return d;
}

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One backend at one point: its binding, how many calls a measurement makes, and the times.
struct Slot {
  const BoundWeights* weights = nullptr;  // null: supports() declined the point
  int calls = 1;
  std::vector<double> us;
};

struct Calibrated {
  Backend backend;
  std::string spec;
  std::map<std::tuple<int, int64_t, int64_t>, std::unique_ptr<BoundWeights>> bound;  // (prec, n, k)
  std::vector<Slot> slots;  // per point
};

// One part of a measured split: its backend, its columns bound there, and its call.
struct SplitPart {
  Calibrated* backend = nullptr;
  BoundWeights weights;
  tb_gemm_args args{};
};

// The parts run concurrently, `calls` times each (part 0 on this thread, part 1 on another, as
// the runtime runs a split); the wall time per call, in microseconds.
Result<double> time_split(std::vector<SplitPart>& parts, int calls) {
  Status second;
  const double t0 = now_us();
  std::thread other([&] {
    for (int i = 0; i < calls && second.ok(); ++i) second = parts[1].backend->backend.gemm(parts[1].weights, parts[1].args);
  });
  Status first;
  for (int i = 0; i < calls && first.ok(); ++i) first = parts[0].backend->backend.gemm(parts[0].weights, parts[0].args);
  other.join();
  const double us = (now_us() - t0) / calls;
  TB_RETURN_IF_ERROR(first);
  TB_RETURN_IF_ERROR(second);
  return us;
}

// The split factor of backends a and b in the (mode, prec) of the sweep's points `at` (the
// largest shape at the smallest and the largest M): each split cut where the model balances it,
// run concurrently, its median time over `reps` divided by the model's prediction; the larger of
// the two points' factors (a split must pay off at either end of the batch sizes).
Result<double> measure_split_factor(Calibrated& a, const BackendProfile& pa, Calibrated& b, const BackendProfile& pb,
                                    const std::vector<size_t>& at, const std::vector<Point>& points,
                                    std::map<std::tuple<int, int64_t, int64_t>, quant::PackedStrips>& weights,
                                    std::vector<PointData>& data, int reps) {
  double factor = 0.0;
  for (size_t i : at) {
    const Point& p = points[i];
    const GemmShape shape{p.m, p.n, p.k, p.prec, p.mode};
    const auto cut = balanced_cut(pa, pb, shape);
    if (!cut) continue;
    const tb_strips whole = weights.at(std::make_tuple(static_cast<int>(p.prec), p.n, p.k)).view();
    const int64_t split_at = cut->first_strips * 32;
    std::vector<SplitPart> parts;
    for (auto [backend, begin, count] : {std::make_tuple(&a, int64_t{0}, split_at), std::make_tuple(&b, split_at, p.n - split_at)}) {
      auto view = StripLayout::columns(whole, begin, count);
      if (!view.ok()) return view.status();
      tb_weights_view v{};
      v.kind = TB_WEIGHTS_STRIPS;
      v.strips = view.value();
      auto w = backend->backend.bind(v);
      if (!w.ok()) return w.status();
      tb_gemm_args args = data[i].args;
      args.y = data[i].y.data() + begin;  // each part writes its own columns of every row
      parts.push_back(SplitPart{backend, std::move(w.value()), args});
    }
    const int calls = static_cast<int>(std::clamp(std::ceil(kMinMeasurementUs / std::max(cut->us, 0.01)), 1.0,
                                                  double(kMaxCallsPerMeasurement)));
    TB_RETURN_IF_ERROR(time_split(parts, 1).status());  // first touch of the new bindings
    std::vector<double> us;
    for (int rep = 0; rep < reps; ++rep) {
      auto t = time_split(parts, calls);
      if (!t.ok()) return t.status();
      us.push_back(t.value());
    }
    factor = std::max(factor, median(us) / std::max(cut->us, 0.01));
  }
  return factor;
}

}  // namespace

GemmCost fit_cost(tb_act_mode mode, tb_prec prec, double probe_us, const std::vector<Measurement>& shapes) {
  GemmCost c;
  c.mode = mode;
  c.prec = prec;
  c.fixed_us = std::max(0.0, probe_us);
  // A call no slower than the probe says nothing about bandwidth or compute; the floor keeps the
  // estimates finite (they come out as the largest rates seen, which such a call is anyway).
  auto rest_s = [&](const Measurement& s) { return std::max(s.us - c.fixed_us, 0.01) * 1e-6; };
  const Measurement* stream = nullptr;
  for (const Measurement& s : shapes) {
    const double bytes = strip_bytes(prec, s.n, s.k);
    if (stream == nullptr || bytes > strip_bytes(prec, stream->n, stream->k) ||
        (bytes == strip_bytes(prec, stream->n, stream->k) && s.m < stream->m)) {
      stream = &s;
    }
    c.flops_per_s = std::max(c.flops_per_s, gemm_flops(s.m, s.n, s.k) / rest_s(s));
  }
  c.bytes_per_s = stream == nullptr ? 0.0 : strip_bytes(prec, stream->n, stream->k) / rest_s(*stream);
  return c;
}

Result<Profile> calibrate(const std::vector<std::string>& backend_specs, const CalibrateOptions& options) {
  const int reps = options.reps > 0 ? options.reps : (options.quick ? 3 : 5);
  // Declared before the backends: their bindings point into these strips, so they must go first
  // on every return.
  std::map<std::tuple<int, int64_t, int64_t>, quant::PackedStrips> weights;
  std::vector<Calibrated> backends;
  for (const std::string& text : backend_specs) {
    auto spec = parse_backend_spec(text);
    if (!spec.ok()) return spec.status();
    const std::string label = spec->to_string();
    for (const Calibrated& c : backends) {
      if (c.spec == label) return Error(TB_INVALID_ARGUMENT, "backend '%s' is listed twice", text.c_str());
    }
    auto b = create_backend(spec.value());
    if (!b.ok()) return b.status();
    backends.push_back(Calibrated{std::move(b.value()), label, {}, {}});
  }
  if (backends.empty()) return Error(TB_INVALID_ARGUMENT, "calibrate: no backend to measure");

  const std::vector<Point> points = sweep(options.quick);
  std::vector<PointData> data;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const auto key = std::make_tuple(static_cast<int>(p.prec), p.n, p.k);
    if (!weights.count(key)) weights.emplace(key, make_weights(p.prec, p.n, p.k, 1000 + i));
    data.push_back(make_point_data(p, 2000 + i));
  }

  // Bind where supports() accepts, and warm up: the first call pays for first touch and kernel
  // loading; the second's time sets how many calls a measurement makes.
  for (Calibrated& c : backends) {
    c.slots.resize(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      tb_op_desc op = gemm_op_desc(p.prec, p.mode, p.m, p.n, p.k);
      const Status s = c.backend.supports(op);
      if (s.code() == TB_UNIMPLEMENTED) continue;
      TB_RETURN_IF_ERROR(s);
      const auto key = std::make_tuple(static_cast<int>(p.prec), p.n, p.k);
      auto& bound = c.bound[key];
      if (!bound) {
        tb_weights_view view{};
        view.kind = TB_WEIGHTS_STRIPS;
        view.strips = weights.at(key).view();
        auto w = c.backend.bind(view);
        if (!w.ok()) return w.status();
        bound = std::make_unique<BoundWeights>(std::move(w.value()));
      }
      Slot& slot = c.slots[i];
      slot.weights = bound.get();
      TB_RETURN_IF_ERROR(c.backend.gemm(*slot.weights, data[i].args));  // first touch, not timed
      const double t0 = now_us();
      TB_RETURN_IF_ERROR(c.backend.gemm(*slot.weights, data[i].args));
      const double first = std::max(now_us() - t0, 0.01);
      slot.calls = static_cast<int>(std::clamp(std::ceil(kMinMeasurementUs / first), 1.0, double(kMaxCallsPerMeasurement)));
    }
  }

  std::string names;
  for (const Calibrated& c : backends) names += (names.empty() ? "" : ", ") + c.spec;
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t i = 0; i < points.size(); ++i) {
      for (Calibrated& c : backends) {
        Slot& slot = c.slots[i];
        if (slot.weights == nullptr) continue;
        const double t0 = now_us();
        for (int call = 0; call < slot.calls; ++call) TB_RETURN_IF_ERROR(c.backend.gemm(*slot.weights, data[i].args));
        slot.us.push_back((now_us() - t0) / slot.calls);
      }
      if (options.progress) {
        const Point& p = points[i];
        options.progress(Format("calibrate: rep %d/%d, shape %zu/%zu (%lld x %lld, M %lld, %s %s) on %s", rep + 1, reps,
                                i + 1, points.size(), static_cast<long long>(p.n), static_cast<long long>(p.k),
                                static_cast<long long>(p.m), mode_name(p.mode), precision_traits(p.prec).name,
                                names.c_str()));
      }
    }
  }

  Profile profile;
  profile.machine = this_machine();
  profile.date = utc_now_iso8601();
  profile.twinbit_version = twinbit_version();
  profile.source = "calibrated in this process";
  for (Calibrated& c : backends) {
    BackendProfile b{c.spec, c.backend.name(), c.backend.device(), {}};
    for (size_t i = 0; i < points.size(); ++i) {
      if (!points[i].probe || c.slots[i].weights == nullptr) continue;
      std::vector<Measurement> shapes;
      for (size_t j = i + 1; j < points.size() && !points[j].probe; ++j) {
        if (c.slots[j].weights != nullptr) shapes.push_back(Measurement{points[j].m, points[j].n, points[j].k, median(c.slots[j].us)});
      }
      if (!shapes.empty()) b.costs.push_back(fit_cost(points[i].mode, points[i].prec, median(c.slots[i].us), shapes));
    }
    profile.backends.push_back(std::move(b));
  }

  // Each pair's split factor per (mode, prec), at the largest shape of the sweep.
  for (size_t x = 0; x < backends.size(); ++x) {
    for (size_t y = x + 1; y < backends.size(); ++y) {
      for (size_t i = 0; i < points.size(); ++i) {
        if (!points[i].probe) continue;
        const Point& probe = points[i];
        if (!profile.backends[x].find(probe.mode, probe.prec) || !profile.backends[y].find(probe.mode, probe.prec)) continue;
        std::vector<size_t> at;  // the largest shape of this (mode, prec), at its smallest and largest M
        for (size_t j = i + 1; j < points.size() && !points[j].probe; ++j) {
          if (at.empty() || points[j].n * points[j].k > points[at.front()].n * points[at.front()].k) at = {j};
          else if (points[j].n == points[at.front()].n && points[j].k == points[at.front()].k) at.push_back(j);
        }
        if (at.size() > 2) at = {at.front(), at.back()};
        if (options.progress) {
          options.progress(Format("calibrate: split %s + %s, %s %s", backends[x].spec.c_str(), backends[y].spec.c_str(),
                                  mode_name(probe.mode), precision_traits(probe.prec).name));
        }
        auto factor = measure_split_factor(backends[x], profile.backends[x], backends[y], profile.backends[y], at, points,
                                           weights, data, reps);
        if (!factor.ok()) return factor.status();
        if (factor.value() > 0.0) {
          profile.splits.push_back(SplitCost{backends[x].spec, backends[y].spec, probe.mode, probe.prec, factor.value()});
        }
      }
    }
  }
  return profile;
}

}  // namespace twinbit::runtime
