// `twinbit calibrate`: measures each backend on this machine (core/runtime/calibrate.h) and
// writes the profile the calibrated plan predicts times from (`plan --profile`).
//
// DEFAULT BACKENDS (no --backend): cpu, plus every other built-in backend that can run here and
// supports a gemm of the sweep (with a GPU: cuda, its default device). Other devices and
// creation parameters are named with --backend, as the runtime will name them: a profile covers
// a runtime's backend only under the same spec text.
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "cli/output_path.h"
#include "core/op_checks.h"
#include "core/precision.h"
#include "core/registry.h"
#include "core/runtime/calibrate.h"
#include "core/runtime/default_plan.h"

namespace twinbit::cli {
namespace {

struct CalibrateCliOptions {
  std::vector<std::string> backends;
  std::string out;
  bool quick = false, json = false;
};

// The built-in backends besides cpu that run here and take a q8 gemm of 1024 x 1024.
std::vector<std::string> default_backends() {
  std::vector<std::string> specs{runtime::kCpuBackendName};
  tb_op_desc op = gemm_op_desc(TB_PREC_Q8, TB_ACT_F32, 1, 1024, 1024);
  for (const BackendEntry& entry : builtin_backends()) {
    if (std::string(entry.name) == runtime::kCpuBackendName) continue;
    auto spec = parse_backend_spec(entry.name);
    if (!spec.ok() || !list_devices(spec.value()).ok()) continue;
    auto b = create_backend(spec.value());
    if (b.ok() && b->supports(op).ok()) specs.push_back(entry.name);
  }
  return specs;
}

std::string rate_text(double per_s, const char* unit) {
  if (per_s >= 1e12) return Format("%.2f T%s/s", per_s / 1e12, unit);
  if (per_s >= 1e9) return Format("%.2f G%s/s", per_s / 1e9, unit);
  return Format("%.2f M%s/s", per_s / 1e6, unit);
}

int run_calibrate(const CalibrateCliOptions& o) {
  std::vector<std::string> specs, inputs;
  // The defaults go through the same path as named backends, so TWINBIT_CPU_* apply to them as
  // they will to the runtime's (and the profile's specs match what plan and run-model write).
  for (const std::string& text : o.backends.empty() ? default_backends() : o.backends) {
    int exit_code = kExitOk;
    auto spec = backend_spec_from_option(text);
    if (!spec.ok()) return usage_error("calibrate", spec.status());
    if (!open_backend_spec("calibrate", spec.value(), &exit_code).ok()) return exit_code;
    if (spec->is_plugin()) inputs.push_back(spec->plugin_path);
    specs.push_back(spec->is_plugin() ? spec->plugin_path : spec->to_string());
  }
  // Checked before the measuring: a bad path costs milliseconds, not the sweep.
  auto out = open_output("-o", o.out, inputs);
  if (!out.ok()) return fail_output("calibrate", out.status());

  // On a terminal one line that updates in place; piped, one line per step (a log keeps them).
  const bool terminal = isatty(STDERR_FILENO) == 1;
  runtime::CalibrateOptions co;
  co.quick = o.quick;
  co.progress = [terminal](const std::string& line) {
    if (terminal) std::fprintf(stderr, "\r%s\033[K", line.c_str());
    else std::fprintf(stderr, "%s\n", line.c_str());
  };
  auto profile = runtime::calibrate(specs, co);
  if (terminal) std::fprintf(stderr, "\n");
  if (!profile.ok()) return fail("calibrate", profile.status());
  const Status written = runtime::write_profile(profile.value(), out.value());
  if (!written.ok()) return fail("calibrate", written);

  const runtime::Profile& p = profile.value();
  if (o.json) {
    if (out->is_stdout()) return kExitOk;  // the profile itself went to stdout
    std::printf("%s", runtime::profile_json(p).c_str());
    return kExitOk;
  }
  FILE* text = out->is_stdout() ? stderr : stdout;
  std::fprintf(text, "twinbit calibrate: %s (%s, %lld cores), %s%s\n", p.machine.hostname.c_str(), p.machine.cpu_model.c_str(),
               static_cast<long long>(p.machine.cores), p.date.c_str(), o.quick ? ", quick sweep" : "");
  std::fprintf(text, "%-20s %-4s %-4s %12s %14s %14s\n", "backend", "mode", "prec", "fixed", "weights", "compute");
  for (const runtime::BackendProfile& b : p.backends) {
    if (b.costs.empty()) std::fprintf(text, "%-20s (declined every shape: no costs)\n", b.spec.c_str());
    for (const runtime::GemmCost& c : b.costs) {
      std::fprintf(text, "%-20s %-4s %-4s %12s %14s %14s\n", b.spec.c_str(), runtime::mode_name(c.mode),
                   precision_traits(c.prec).name, format_time_us(c.fixed_us).c_str(), rate_text(c.bytes_per_s, "B").c_str(),
                   rate_text(c.flops_per_s, "FLOP").c_str());
    }
  }
  for (const runtime::SplitCost& c : p.splits) {
    std::fprintf(text, "split %s + %s, %s %s: measured %.2fx the prediction of its parts alone\n", c.first.c_str(),
                 c.second.c_str(), runtime::mode_name(c.mode), precision_traits(c.prec).name, c.factor);
  }
  std::fprintf(text, "profile written to %s\n", o.out.c_str());
  return kExitOk;
}

}  // namespace

Command add_calibrate(CLI::App& root) {
  auto opt = std::make_shared<CalibrateCliOptions>();
  CLI::App* app = root.add_subcommand(
      "calibrate", "Measure each backend on this machine - the fixed cost of a call, the bytes/s at which it\n"
                   "streams weights and its FLOP/s, per activation mode and precision - over a small sweep of\n"
                   "synthetic gemms (interleaved across backends, medians of repetitions), and write the\n"
                   "profile that `twinbit plan --profile` and the runtime's calibrated plan predict from.\n"
                   "Default backends: cpu, plus every other built-in backend that runs here (a GPU: cuda).\n"
                   "A profile covers a runtime's backend under the same spec text: calibrate the specs\n"
                   "you will run with. About a minute on 2 CPU cores; --quick takes a second (tests).");
  app->footer(std::string(kBackendOptionHelp) + "\n"
              "Examples: twinbit calibrate -o profile.json\n"
              "          twinbit calibrate --backend cpu --backend cuda:0 --backend cuda:1 -o h200.json\n"
              "          twinbit calibrate --backend cpu --backend cpu,isa=sse2 --quick -o quick.json --json\n"
              "          twinbit plan model.tbsc --backend cpu --backend cuda --profile profile.json");
  app->add_option("--backend", opt->backends, backend_option_help("A backend to measure, repeatable (default: cpu, plus cuda when a GPU is here)"))
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("-o,--output", opt->out, "The profile to write (JSON; '-' for stdout)")->required();
  app->add_flag("--quick", opt->quick, "A tiny sweep of small shapes (for tests: rough numbers)");
  app->add_flag("--json", opt->json, "Print the profile's JSON instead of the table");
  return Command{app, [opt] { return run_calibrate(*opt); }};
}

}  // namespace twinbit::cli
