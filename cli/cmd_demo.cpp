// `twinbit demo`: the whole promise on one screen. Generates (once) the synthetic Qwen3-VL-2B
// projection set, binds it on every backend that can run here, runs every projection at M = 1
// and M = 32 in both activation modes, and checks the bits:
//   - every backend's full output is compared with every other backend's (memcmp), and
//   - each output is compared with the scalar reference on a sample of columns (all of them for
//     small projections), since the reference is too slow to run whole on lm_head in a demo;
//   - then the runtime (core/runtime) runs each call where its default plan places it over the
//     same backends, and its rows show that placement and why: the plan a user gets, with bits
//     equal to every backend's.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "artifacts/synthetic.h"
#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"
#include "core/runtime/runtime.h"

namespace twinbit::cli {
namespace {

struct DemoOptions {
  uint64_t seed = 42;
  bool json = false;
  bool small = false;
  std::vector<std::string> specs, backends;  // --backend, --backends; both empty = every built-in
  std::string cache;
  double ref_budget = 4e7;  // reference multiply-adds per case before sampling columns
  artifact::OpenOptions open;
};

struct Row {
  std::string projection, shape, prec, mode, backend, note;
  int64_t m = 0;
  double time_us = 0;
  bool bits_equal = false;
  std::string checked;  // "all 2048 columns", "sampled 512 of 151936 columns", ...
  std::string placement, why;  // the runtime's rows: where the plan ran the call, and why
};

struct LiveBackend {
  Backend backend;
  bool is_reference = false;  // its kernels ARE the scalar reference: no real comparison
};

// The columns checked against the reference: all, or (past the budget) the first and last strip
// plus evenly spaced columns - a deterministic sample that always touches padding edges.
std::vector<int64_t> reference_columns(int64_t n, int64_t per_column_cost, double budget) {
  std::vector<int64_t> cols;
  const int64_t want = std::max<int64_t>(64, static_cast<int64_t>(budget / std::max<int64_t>(1, per_column_cost)));
  if (want >= n) {
    for (int64_t c = 0; c < n; ++c) cols.push_back(c);
    return cols;
  }
  for (int64_t c = 0; c < 32 && c < n; ++c) cols.push_back(c);
  for (int64_t c = std::max<int64_t>(0, n - 32); c < n; ++c) cols.push_back(c);
  const int64_t step = std::max<int64_t>(1, n / (want - 64));
  for (int64_t c = 32; c < n - 32; c += step) cols.push_back(c);
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  return cols;
}

// Times `call`: the first call (whose output is the one checked) and, when it is fast, a few
// more; the median. A slow call (lm_head at M = 32 on a CPU) is timed once, to keep the demo short.
double time_call(const std::function<Status()>& call, Status& status) {
  double t0 = now_us();
  status = call();
  const double first = now_us() - t0;
  if (!status.ok() || first > 5e4) return first;
  std::vector<double> t = {first};
  double spent = first;
  for (int i = 0; i < 5 && spent < 1e5; ++i) {
    t0 = now_us();
    Status s = call();
    const double dt = now_us() - t0;
    if (!s.ok()) {
      status = s;
      return 0;
    }
    t.push_back(dt);
    spent += dt;
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

class Demo {
 public:
  explicit Demo(DemoOptions o) : opt_(std::move(o)) {}
  int run();

 private:
  void log(const char* fmt, const std::string& a = "") const {
    std::fprintf(stderr, fmt, a.c_str());
  }
  void run_gemm(const artifact::Entry& e, tb_weights_view view, std::map<std::string, BoundWeights>& bound,
                const std::map<std::string, Status>& unbound);
  void run_gemv(const artifact::Artifact& art);
  void run_gdn(const artifact::Artifact& art);
  void print_table() const;
  void open_runtime(const std::string& artifact_path);
  void run_planned(const artifact::Entry& e, int64_t m, tb_act_mode mode, const float* x, Row row,
                   const std::function<std::string(const std::vector<float>&)>& check);

  DemoOptions opt_;
  std::vector<LiveBackend> live_;
  std::vector<std::string> live_specs_;  // as given, for the runtime
  std::unique_ptr<runtime::Runtime> runtime_;
  std::vector<std::string> skipped_;  // "cuda: UNAVAILABLE: no CUDA device"
  std::vector<Row> rows_;
};

int Demo::run() {
  const double t_start = now_us();
  std::vector<std::string> names = opt_.specs;
  names.insert(names.end(), opt_.backends.begin(), opt_.backends.end());
  if (names.empty()) {
    for (const BackendEntry& e : builtin_backends()) names.push_back(e.name);
  }
  for (const std::string& name : names) {
    // As every command names a backend (cli/backend_option.h): a bad spec, unknown name or
    // rejected parameter is a usage error, a plugin that does not load a failure; a built-in
    // without a device here is left out and listed.
    auto spec = backend_spec_from_option(name);
    if (!spec.ok()) return usage_error("demo", spec.status());
    auto b = create_backend(spec.value());
    if (!b.ok()) {
      if (spec->is_plugin()) return fail("demo", b.status());
      if (b.status().code() == TB_INVALID_ARGUMENT) return usage_error("demo", b.status());
      skipped_.push_back(name + ": " + b.status().to_string());
      continue;
    }
    // A backend that runs a gemm in either activation mode takes part (npu_layout runs only i8;
    // its f32 rows are then reported as unsupported).
    tb_op_desc probe{};
    probe.op = TB_OP_GEMM;
    probe.m = 1;
    probe.n = 32;
    probe.k = 32;
    Status probed = b->supports(probe);
    if (!probed.ok()) {
      probe.mode = TB_ACT_I8;
      if (b->supports(probe).ok()) probed = Status();
    }
    if (!probed.ok()) {
      skipped_.push_back(name + ": " + probed.to_string());
      continue;
    }
    const bool is_ref = b->features().find("reference") != std::string::npos;
    live_.push_back(LiveBackend{std::move(b.value()), is_ref});
    const std::string text = spec->is_plugin() ? spec->plugin_path : spec->to_string();
    if (std::find(live_specs_.begin(), live_specs_.end(), text) == live_specs_.end()) live_specs_.push_back(text);
  }
  if (live_.empty()) return fail_backend("demo", Error(TB_UNAVAILABLE, "no backend can run here"));
  // The backends first: a wrong spec is refused before minutes of artifact generation.
  std::string dir = opt_.cache;
  if (dir.empty()) {
    auto d = cache_dir();
    if (!d.ok()) return fail("demo", d.status());
    dir = d.value();
  }
  auto art = open_or_make_synthetic(dir, opt_.seed, !opt_.small, opt_.open);
  if (!art.ok()) return fail("demo", art.status());
  log("twinbit demo: backends: %s\n", [&] {
    std::string s;
    for (auto& l : live_) s += (s.empty() ? "" : ", ") + l.backend.name() + " (" + l.backend.device() + ")";
    return s;
  }());
  open_runtime(art.value()->path());
  for (const auto& s : skipped_) log("twinbit demo: not run: %s\n", s);

  for (const artifact::Entry& e : art.value()->entries()) {
    if (e.kind != TB_WEIGHTS_STRIPS) continue;
    auto weights = art.value()->weights(e);
    if (!weights.ok()) return fail("demo", weights.status());
    const tb_weights_view& view = weights->view;
    std::map<std::string, BoundWeights> bound;
    std::map<std::string, Status> unbound;  // backends that do not take these weights (UNIMPLEMENTED)
    for (LiveBackend& l : live_) {
      auto w = l.backend.bind(view, weights->keep_alive);
      if (!w.ok() && w.status().code() == TB_UNIMPLEMENTED) {
        unbound.emplace(l.backend.name(), w.status());
        continue;
      }
      if (!w.ok()) return fail("demo", w.status());
      bound.emplace(l.backend.name(), std::move(w.value()));
    }
    log("  running %s\n", e.name);
    run_gemm(e, view, bound, unbound);
  }
  run_gemv(*art.value());
  run_gdn(*art.value());

  // A row the backend does not claim (UNIMPLEMENTED) is reported as such, never as a pass.
  const bool all_equal = std::all_of(rows_.begin(), rows_.end(), [](const Row& r) {
    return r.bits_equal || r.checked == "unsupported";
  });
  if (opt_.json) {
    nlohmann::json j;
    j["rows"] = nlohmann::json::array();
    for (const Row& r : rows_) {
      j["rows"].push_back({{"projection", r.projection}, {"backend", r.backend}, {"m", r.m},
                           {"mode", r.mode}, {"prec", r.prec}, {"time_us", r.time_us},
                           {"time_includes_quantize", r.mode == "i8"},
                           {"bits_equal", r.bits_equal}, {"checked", r.checked}});
      if (!r.placement.empty()) j["rows"].back().update({{"placement", r.placement}, {"why", r.why}});
    }
    j["not_run"] = skipped_;
    j["all_bits_equal"] = all_equal;
    // Backend names, devices and messages come from backends: never let their bytes abort.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    print_table();
    std::printf("\n%zu rows, %s; %s in total.\n", rows_.size(),
                all_equal ? "every row bit-equal" : "SOME ROWS DIFFER",
                format_time_us(now_us() - t_start).c_str());
  }
  return all_equal ? kExitOk : kExitFailed;
}

void Demo::run_gemm(const artifact::Entry& e, tb_weights_view view, std::map<std::string, BoundWeights>& bound,
                    const std::map<std::string, Status>& unbound) {
  const tb_strips& w = view.strips;
  const std::string base = e.name.substr(0, e.name.rfind('.'));
  for (int64_t m : {int64_t{1}, int64_t{32}}) {
    const std::vector<float> x = make_activations(opt_.seed, base, m, w.k);
    const int64_t ng = w.kp / 32;
    std::vector<int8_t> xq(static_cast<size_t>(m * w.kp));
    std::vector<float> xd(static_cast<size_t>(m * ng));
    ref::quantize_activations(m, w.k, x.data(), w.k, xq.data(), w.kp, xd.data(), ng);
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      tb_gemm_args a{};
      a.mode = mode;
      a.m = m;
      a.x = x.data();
      a.ldx = w.k;
      a.xq = xq.data();
      a.ldxq = w.kp;
      a.xd = xd.data();
      a.ldxd = ng;
      a.ldy = w.n;
      // The reference on a sample of columns, every row.
      const std::vector<int64_t> cols = reference_columns(w.n, m * w.kp, opt_.ref_budget);
      std::vector<float> want(cols.size() * m);
      for (int64_t r = 0; r < m; ++r) {
        for (size_t i = 0; i < cols.size(); ++i) {
          want[r * cols.size() + i] = mode == TB_ACT_F32
              ? ref::gemm_f32_at(w, x.data() + r * w.k, cols[i])
              : ref::gemm_i8_at(w, xq.data() + r * w.kp, xd.data() + r * ng, cols[i]);
        }
      }
      const std::string checked = cols.size() == static_cast<size_t>(w.n)
          ? Format("reference, all %lld columns", (long long)w.n)
          : Format("reference on %zu of %lld columns", cols.size(), (long long)w.n);
      // The reference's sampled columns, then the first full output: "" when y has the bits of both.
      std::vector<float> first;  // the first backend's full output that ran: the others must equal it
      std::string first_name;
      auto check = [&](const std::vector<float>& y) -> std::string {
        for (int64_t r = 0; r < m; ++r) {
          for (size_t i = 0; i < cols.size(); ++i) {
            const float got = y[r * w.n + cols[i]];
            if (std::memcmp(&got, &want[r * cols.size() + i], 4) != 0) {
              return Format("row %lld column %lld differs from the reference", (long long)r, (long long)cols[i]);
            }
          }
        }
        if (!first.empty() && std::memcmp(first.data(), y.data(), y.size() * 4) != 0) {
          return "full output differs from " + first_name;
        }
        return "";
      };
      for (LiveBackend& l : live_) {
        std::vector<float> y(static_cast<size_t>(m * w.n), std::numeric_limits<float>::quiet_NaN());
        a.y = y.data();
        if (auto why = unbound.find(l.backend.name()); why != unbound.end()) {
          Row row{base, Format("%lldx%lld", (long long)w.k, (long long)w.n), prec_name(w.prec),
                  mode == TB_ACT_F32 ? "f32" : "i8", l.backend.name(), why->second.to_string(), m, 0,
                  false, "unsupported", "", ""};
          rows_.push_back(row);
          continue;
        }
        const BoundWeights& bw = bound.at(l.backend.name());
        // Mode I8 is timed as an engine runs it: the backend's own quantiser (quantize_i8, the
        // reference where the backend has none) into its own buffers, then the gemm.
        std::vector<int8_t> own_q(xq.size(), 0x5a);
        std::vector<float> own_d(xd.size(), std::numeric_limits<float>::quiet_NaN());
        tb_gemm_args own = a;
        own.xq = own_q.data();
        own.xd = own_d.data();
        const tb_quantize_args qa{m, w.k, x.data(), w.k, own_q.data(), w.kp, own_d.data(), ng};
        Status st;
        const double us = time_call([&] {
          if (mode == TB_ACT_I8) TB_RETURN_IF_ERROR(l.backend.quantize_i8(qa));
          return l.backend.gemm(bw, own);
        }, st);
        Row row{base, Format("%lldx%lld", (long long)w.k, (long long)w.n), prec_name(w.prec),
                mode == TB_ACT_F32 ? "f32" : "i8", l.backend.name(), "", m, us, false, checked, "", ""};
        if (!st.ok()) {
          row.note = st.to_string();
          row.checked = st.code() == TB_UNIMPLEMENTED ? "unsupported" : "failed";
          rows_.push_back(row);
          continue;
        }
        if (mode == TB_ACT_I8 && (std::memcmp(own_q.data(), xq.data(), xq.size()) != 0 ||
                                  std::memcmp(own_d.data(), xd.data(), xd.size() * 4) != 0)) {
          row.note = "quantize_i8 codes or scales differ from the reference";
        } else {
          row.note = check(y);
        }
        if (row.note.empty() && !first.empty()) row.checked += ", full output = " + first_name;
        if (first.empty()) {
          first = y;
          first_name = l.backend.name();
        }
        if (l.is_reference) row.checked = "IS the reference (its kernels are the scalar reference)";
        row.bits_equal = row.note.empty();
        rows_.push_back(row);
      }
      Row planned{base, Format("%lldx%lld", (long long)w.k, (long long)w.n), prec_name(w.prec),
                  mode == TB_ACT_F32 ? "f32" : "i8", "runtime", "", m, 0, false, checked, "", ""};
      if (runtime_ && !first.empty()) {
        planned.checked += ", full output = " + first_name;
        run_planned(e, m, mode, x.data(), std::move(planned), check);
      }
    }
  }
}

// One call through the runtime, placed by its default plan over the demo's backends (the
// quantisation of mode I8 included, as the runtime does it once per call).
void Demo::run_planned(const artifact::Entry& e, int64_t m, tb_act_mode mode, const float* x, Row row,
                       const std::function<std::string(const std::vector<float>&)>& check) {
  auto decision = runtime_->decide(e.name, m, mode);
  if (decision.ok()) {
    row.placement = runtime::placement_text(decision->placement, runtime_->backend_labels());
    row.why = decision->why;
  }
  std::vector<float> y(static_cast<size_t>(m * e.n), std::numeric_limits<float>::quiet_NaN());
  auto call = [&] { return runtime_->gemm(e.name, m, mode, x, e.k, y.data(), e.n); };
  // The first call binds the entry where the plan sends it (an upload to a GPU): the time shown
  // is of the calls after it, unless the first took over 50 ms (a large call on a slow backend),
  // which the demo does not repeat.
  const double t0 = now_us();
  Status st = call();
  row.time_us = now_us() - t0;
  if (!st.ok()) {
    row.note = st.to_string();
    row.checked = "failed";
  } else {
    row.note = check(y);
    row.bits_equal = row.note.empty();
    if (row.time_us < 5e4) {
      Status again;
      row.time_us = time_call(call, again);
      if (!again.ok()) {
        row.note = again.to_string();
        row.bits_equal = false;
      } else if (row.bits_equal && !check(y).empty()) {  // a first call that differed says why already
        row.note = "a repeated call's output differs";
        row.bits_equal = false;
      }
    } else {
      row.why += " (time: the first call, binding included)";
    }
  }
  row.checked = "placed on " + row.placement + "; " + row.checked;
  rows_.push_back(std::move(row));
}

// The runtime over the backends that run here, with its default plan: what an engine that
// opens this artifact gets. A runtime that cannot open is listed, not fatal: the backend rows
// still stand.
void Demo::open_runtime(const std::string& artifact_path) {
  runtime::RuntimeOptions ro;
  ro.backends = live_specs_;
  ro.open = opt_.open;
  auto rt = runtime::Runtime::open(artifact_path, ro);
  if (!rt.ok()) {
    skipped_.push_back("runtime: " + rt.status().to_string());
    return;
  }
  runtime_ = std::move(rt.value());
}

void Demo::run_gemv(const artifact::Artifact& art) {
  const artifact::Entry* ea = art.find("ssm_beta");
  const artifact::Entry* eb = art.find("ssm_a");
  if (!ea || !eb) return;
  auto va = art.weights(*ea);
  auto vb = art.weights(*eb);
  if (!va.ok() || !vb.ok()) return;
  const tb_matrix_f32& ma = va->view.matrix;
  const tb_matrix_f32& mb = vb->view.matrix;
  const std::vector<float> x = make_activations(opt_.seed, "ssm", 1, ma.cols);
  std::vector<float> want_a(ma.rows), want_b(mb.rows);
  ref::gemv_f32(ma, x.data(), want_a.data());
  ref::gemv_f32(mb, x.data(), want_b.data());
  for (LiveBackend& l : live_) {
    Row row{"ssm_beta+ssm_a", Format("%lldx%lld x2", (long long)ma.cols, (long long)ma.rows), "f32",
            "f32", l.backend.name(), "", 1, 0, false,
            l.is_reference ? "IS the reference" : "reference, all rows of both", "", ""};
    auto wa = l.backend.bind(va->view, va->keep_alive);
    auto wb = l.backend.bind(vb->view, vb->keep_alive);
    if (!wa.ok() || !wb.ok()) {
      const Status& why = !wa.ok() ? wa.status() : wb.status();
      row.note = why.to_string();
      row.checked = why.code() == TB_UNIMPLEMENTED ? "unsupported" : "failed";
      rows_.push_back(row);
      continue;
    }
    std::vector<float> ya(ma.rows), yb(mb.rows);
    Status st;
    row.time_us = time_call([&] { return l.backend.gemv_f32_pair(wa.value(), wb.value(), x.data(), ya.data(), yb.data()); }, st);
    if (!st.ok()) {
      row.note = st.to_string();
      row.checked = "failed";
    } else {
      row.bits_equal = std::memcmp(ya.data(), want_a.data(), ya.size() * 4) == 0 &&
                       std::memcmp(yb.data(), want_b.data(), yb.size() * 4) == 0;
    }
    rows_.push_back(row);
  }
}

void Demo::run_gdn(const artifact::Artifact& art) {
  const char* names[] = {"gdn.state", "gdn.q", "gdn.k", "gdn.v", "gdn.g", "gdn.beta"};
  std::vector<const float*> p;
  for (const char* n : names) {
    const artifact::Entry* e = art.find(n);
    if (!e) return;
    auto v = art.view_verified(*e);
    if (!v.ok()) return;
    p.push_back(v.value().matrix.data);
  }
  const artifact::Entry* es = art.find("gdn.state");
  const artifact::Entry* eq = art.find("gdn.q");
  const artifact::Entry* ev = art.find("gdn.v");
  const int64_t kd = eq->k, vd = ev->k, vh = ev->n, kh = eq->n;
  if (es->n != vh * kd || es->k != vd) return;
  std::vector<float> want_s(p[0], p[0] + vh * kd * vd), want_o(vh * vd);
  tb_gdn_args ra{vh, kh, kd, vd, want_s.data(), p[1], p[2], p[3], p[4], p[5], want_o.data()};
  ref::gdn_delta(ra);
  for (LiveBackend& l : live_) {
    Row row{"gdn_delta", Format("%lldx%lldx%lld", (long long)vh, (long long)kd, (long long)vd), "f32",
            "f32", l.backend.name(), "", 1, 0, false,
            l.is_reference ? "IS the reference" : "reference, state and output", "", ""};
    std::vector<float> s, o(vh * vd);
    tb_gdn_args a{vh, kh, kd, vd, nullptr, p[1], p[2], p[3], p[4], p[5], o.data()};
    Status st;
    // Each timed call starts from the artifact's state, so the checked result is one step.
    row.time_us = time_call([&] {
      s.assign(p[0], p[0] + vh * kd * vd);
      a.state = s.data();
      return l.backend.gdn_delta(a);
    }, st);
    if (!st.ok()) {
      row.note = st.to_string();
      row.checked = st.code() == TB_UNIMPLEMENTED ? "unsupported" : "failed";
    } else {
      row.bits_equal = std::memcmp(s.data(), want_s.data(), s.size() * 4) == 0 &&
                       std::memcmp(o.data(), want_o.data(), o.size() * 4) == 0;
    }
    rows_.push_back(row);
  }
}

void Demo::print_table() const {
  std::printf("twinbit demo: synthetic Qwen3-VL-2B projections (seed %llu); bits compared with memcmp;\n"
              "time = one call, host memory to host memory (a GPU's copies and sync included);\n"
              "rows 'runtime' run the call where the runtime's default plan places it (docs/RUNTIME.md);\n"
              "mode i8 times include the activation quantisation (the backend's quantize_i8)\n\n",
              static_cast<unsigned long long>(opt_.seed));
  std::printf("%-16s %-12s %-4s %-4s %3s %-8s %11s  %-5s %s\n", "projection", "KxN", "prec", "mode",
              "M", "backend", "time", "equal", "checked");
  for (const Row& r : rows_) {
    std::printf("%-16s %-12s %-4s %-4s %3lld %-8s %11s  %-5s %s%s%s\n", r.projection.c_str(),
                r.shape.c_str(), r.prec.c_str(), r.mode.c_str(), static_cast<long long>(r.m),
                r.backend.c_str(), format_time_us(r.time_us).c_str(),
                r.bits_equal ? "yes" : (r.checked == "unsupported" ? "n/a" : "NO"),
                r.checked.c_str(), r.note.empty() ? "" : " -- ", r.note.c_str());
    // A runtime row says why the plan placed it there.
    if (!r.why.empty() && r.note.empty()) std::printf("%-16s %s\n", "", r.why.c_str());
  }
  for (const auto& s : skipped_) std::printf("not run: %s\n", s.c_str());
}

}  // namespace

Command add_demo(CLI::App& root) {
  auto opt = std::make_shared<DemoOptions>();
  CLI::App* app = root.add_subcommand(
      "demo",
      "Run every projection of the synthetic Qwen3-VL-2B model at M = 1 and 32, in both\n"
      "activation modes, on every backend that can run here, and check the bits against the\n"
      "scalar reference and across backends; then run each call through the runtime, placed by\n"
      "its default plan over the same backends (rows 'runtime': where and why). The artifact\n"
      "is generated into the cache folder\n"
      "($TWINBIT_CACHE, else ~/.cache/twinbit) on first use. Exit 1 if any row differs.");
  app->add_option("--seed", opt->seed, "Seed of the synthetic weights and inputs")->capture_default_str();
  app->add_flag("--json", opt->json, "Print one JSON object {\"rows\": [...]} instead of the table");
  app->add_flag("--small", opt->small, "Leave out lm_head (151936 x 2048): a faster run");
  app->footer("Examples:\n"
              "  twinbit demo                      every backend here, the whole model\n"
              "  twinbit demo --small --backends cpu,cuda\n"
              "  twinbit demo --backend cpu,isa=avx512vnni --json > demo.json\n" +
              std::string(kBackendOptionHelp));
  app->add_option("--backend", opt->specs,
                  backend_option_help("Only this backend (repeat for several)"));
  app->add_option("--backends", opt->backends,
                  "Only these backends, comma-separated names or paths without parameters (give a "
                  "spec with parameters with --backend)")->delimiter(',');
  app->add_option("--cache", opt->cache, "Folder for the generated artifact");
  add_read_option(app, opt->open);
  return Command{app, [opt] { return Demo(*opt).run(); }};
}

}  // namespace twinbit::cli
