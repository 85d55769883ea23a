// `twinbit plan`: where the runtime would place each projection of an artifact (core/runtime),
// per M - shape, FLOPs, bytes, the choice and why (the threshold, an override line, a fallback);
// with --profile, the predicted time on each backend and the calibrated choice. Nothing is
// computed; backends are created to ask supports().
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "core/precision.h"
#include "core/runtime/default_plan.h"
#include "core/runtime/runtime.h"

namespace twinbit::cli {
namespace {

struct PlanOptions {
  std::string path, ms = "1,32", mode = "f32", overrides_file, profile;
  std::vector<std::string> backends, overrides;
  bool json = false;
  artifact::OpenOptions open;
};

uint64_t payload_bytes(const artifact::Entry& e) {
  uint64_t bytes = 0;
  for (const auto& p : e.payloads) bytes += p.bytes;
  return bytes;
}

int run_plan(const PlanOptions& o) {
  auto ms = parse_rows_list(o.ms);
  if (!ms.ok()) return usage_error("plan", ms.status());
  tb_act_mode mode = TB_ACT_F32;
  if (o.mode == "i8") {
    mode = TB_ACT_I8;
  } else if (o.mode != "f32") {
    return usage_error("plan", Error(TB_INVALID_ARGUMENT, "--mode: '%s' is not a mode (expected f32 or i8)", o.mode.c_str()));
  }
  runtime::RuntimeOptions ro;
  ro.open = o.open;
  // Each backend is created once here for the exit status of the house rules (2 bad spec, 77 no
  // device here, 1 otherwise) before the runtime creates its own.
  for (const std::string& text : o.backends) {
    int exit_code = kExitOk;
    auto spec = backend_spec_from_option(text);
    if (!spec.ok()) return usage_error("plan", spec.status());
    if (!open_backend_spec("plan", spec.value(), &exit_code).ok()) return exit_code;
    ro.backends.push_back(spec->is_plugin() ? spec->plugin_path : spec->to_string());
  }
  for (size_t i = 0; i < o.overrides.size(); ++i) {
    auto rule = runtime::parse_override_rule(o.overrides[i], Format("--override %zu", i + 1));
    if (!rule.ok()) return usage_error("plan", rule.status());
    ro.overrides.push_back(std::move(rule.value()));
  }
  // The file's rules come after the command line's: first match wins, so a rule typed for one
  // run beats the file.
  if (!o.overrides_file.empty()) {
    auto rules = runtime::read_overrides_file(o.overrides_file);
    if (!rules.ok()) return fail("plan", rules.status());
    for (auto& rule : rules.value()) ro.overrides.push_back(std::move(rule));
  }
  if (!o.profile.empty()) {
    auto profile = runtime::read_profile(o.profile);
    if (!profile.ok()) return fail("plan", profile.status());
    ro.profile = std::move(profile.value());
  }
  auto rt = runtime::Runtime::open(o.path, ro);
  if (!rt.ok()) {
    // A rule given with --override that the artifact or the backends refute is a usage error; a
    // rule of the file, or the artifact itself, is a failure.
    const bool from_command_line = rt.status().message().rfind("--override", 0) == 0;
    return from_command_line ? usage_error("plan", rt.status()) : fail("plan", rt.status());
  }
  const runtime::Runtime& r = *rt.value();

  nlohmann::json j;
  j["artifact"] = o.path;
  j["backends"] = r.backend_labels();
  j["cpu_backend"] = r.backend_labels()[r.cpu_backend()];
  j["mode"] = o.mode;
  j["threshold_flops"] = runtime::kCpuFlopThreshold;
  if (!o.profile.empty()) j["profile"] = o.profile;
  j["plans"] = nlohmann::json::array();
  if (!o.json) {
    std::string listed;
    for (const std::string& l : r.backend_labels()) listed += (listed.empty() ? "" : ", ") + l;
    std::printf("twinbit plan %s: backends %s (CPU backend %s), mode %s\n", o.path.c_str(), listed.c_str(),
                r.backend_labels()[r.cpu_backend()].c_str(), o.mode.c_str());
    if (!o.profile.empty()) {
      const runtime::Profile& p = *r.profile();
      std::printf("profile %s: %s, %s, twinbit %s\n", o.profile.c_str(), p.machine.hostname.c_str(), p.date.c_str(),
                  p.twinbit_version.c_str());
    }
    std::printf("%-22s %6s %-16s %10s %10s  %-28s %s\n", "entry", "M", "K x N prec", "FLOPs", "bytes", "choice", "why");
  }
  int64_t fallbacks = 0;
  for (const artifact::Entry& e : r.artifact().entries()) {
    if (e.kind != TB_WEIGHTS_STRIPS) continue;
    for (int64_t m : ms.value()) {
      auto d = r.decide(e.name, m, mode);
      if (!d.ok()) return fail("plan", d.status());
      fallbacks += d->fallbacks;
      const std::string choice = runtime::placement_text(d->placement, r.backend_labels());
      const double flops = runtime::gemm_flops(m, e.n, e.k);
      const char* prec = precision_traits(e.prec).name;
      j["plans"].push_back({{"entry", e.name}, {"m", m}, {"k", e.k}, {"n", e.n}, {"prec", prec},
                            {"flops", flops}, {"bytes", payload_bytes(e)}, {"choice", choice},
                            {"why", d->why}, {"fallbacks", d->fallbacks}});
      std::string predicted;
      if (!d->predicted_us.empty()) {
        nlohmann::json per_backend = nlohmann::json::object();
        for (size_t b = 0; b < d->predicted_us.size(); ++b) {
          const auto& us = d->predicted_us[b];
          per_backend[r.backend_labels()[b]] = us ? nlohmann::json(*us) : nlohmann::json(nullptr);
          predicted += Format("%s%s %s", predicted.empty() ? "" : ", ", r.backend_labels()[b].c_str(),
                              us ? format_time_us(*us).c_str() : "-");
        }
        j["plans"].back()["predicted_us"] = per_backend;
        j["plans"].back()["predicted_choice_us"] = d->predicted_choice_us ? nlohmann::json(*d->predicted_choice_us) : nlohmann::json(nullptr);
      }
      if (!o.json) {
        std::printf("%-22s %6lld %-16s %10.4g %10s  %-28s %s\n", e.name.c_str(), static_cast<long long>(m),
                    Format("%lld x %lld %s", (long long)e.k, (long long)e.n, prec).c_str(), flops,
                    format_bytes(payload_bytes(e)).c_str(), choice.c_str(), d->why.c_str());
        // An override's row shows what the model predicts too ("-": declined or not measured).
        if (!predicted.empty() && !d->predicted_choice_us) std::printf("%-22s %6s predicted: %s\n", "", "", predicted.c_str());
      }
    }
  }
  j["fallbacks"] = fallbacks;
  if (o.json) {
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%lld fallback%s at supports()\n", static_cast<long long>(fallbacks), fallbacks == 1 ? "" : "s");
  }
  return kExitOk;
}

}  // namespace

Command add_plan(CLI::App& root) {
  auto opt = std::make_shared<PlanOptions>();
  CLI::App* app = root.add_subcommand(
      "plan", "Show where the runtime places each projection of an artifact, per M: shape, FLOPs,\n"
              "bytes, the backend or column split chosen, and why. Default plan: 2*M*N*K below 1e7\n"
              "FLOPs stays on the CPU backend; the rest goes to the first other backend, in the order\n"
              "of --backend, that supports it. Overrides (PATTERN=TARGET, first match wins) come\n"
              "first; a backend that declines is replaced by the next choice (a fallback). With\n"
              "--profile (twinbit calibrate) the plan predicts each backend's time and picks the lowest,\n"
              "a two-backend column split included when it is at least 10% faster.\n"
              "TARGET is a backend spec or a column split SPEC*FRACTION+SPEC*FRACTION... (cuts at\n"
              "multiples of 32 columns; the fractions sum to 1). docs/RUNTIME.md has the details.");
  app->footer(std::string(kBackendOptionHelp) + "\n"
              "Examples: twinbit plan model.tbsc --backend cpu --backend cuda --m 1,32\n"
              "          twinbit plan model.tbsc --backend cpu --backend cuda --override 'lm_head.*=cuda*0.5+cpu*0.5'\n"
              "          twinbit plan model.tbsc --backend cpu,isa=sse2 --backend cpu --overrides rules.txt --json\n"
              "          twinbit calibrate --backend cpu --backend cuda -o prof.json && \\\n"
              "            twinbit plan model.tbsc --backend cpu --backend cuda --profile prof.json --m 1,32");
  app->add_option("artifact", opt->path, "Artifact file (twinbit pack / the demo's cache)")->required();
  app->add_option("--m", opt->ms, "Batch sizes, comma separated")->check(rows_list_check())->capture_default_str();
  app->add_option("--mode", opt->mode, "Activation mode the plan is made for (f32 or i8)")->capture_default_str();
  // One value per occurrence, so a repeated option never swallows the artifact's path.
  app->add_option("--backend", opt->backends, backend_option_help("A backend of the runtime, repeatable, in order of preference (default: cpu)"))
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--override", opt->overrides, "A rule PATTERN=TARGET, repeatable; these rules come before the --overrides file's")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--overrides", opt->overrides_file, "A file of rules PATTERN=TARGET, one per line, '#' comments");
  app->add_option("--profile", opt->profile, "A profile of twinbit calibrate: plan by predicted times (it must cover every --backend)");
  app->add_flag("--json", opt->json, "Print one JSON object");
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_plan(*opt); }};
}

}  // namespace twinbit::cli
