// `twinbit gate`: the shape gate. A projection's time against the pure-read floor of the same
// weight bytes on the same backend (its optional read_floor entry), interleaved in one process.
// baseline/floor >= 1.20 means the kernel is at least 20% above what merely reading its weights
// costs: the shape is worth optimising. Below that, it is already close to the floor.
#include <cstdio>
#include <string>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "conformance/ab.h"
#include "core/precision.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {

constexpr double kGate = 1.20;

struct GateOptions {
  std::string backend, shape, prec = "q8", mode = "f32";
  int64_t m = 1;
  int rounds = 15;
  uint64_t seed = 1;
};

int run_gate(const GateOptions& o) {
  using namespace conformance;
  BenchSpec base;
  auto where = backend_spec_from_option(o.backend);
  if (!where.ok()) return usage_error("gate", where.status());
  base.backend = where.value();
  if (Status s = parse_shape(o.shape, base.k, base.n); !s.ok()) return usage_error("gate", s);
  base.m = o.m;
  auto prec = find_precision(o.prec);
  if (!prec.ok()) return usage_error("gate", prec.status());
  base.prec = (*prec)->prec;
  base.mode = o.mode == "i8" ? TB_ACT_I8 : TB_ACT_F32;
  BenchSpec floor = base;
  floor.read_floor = true;
  if (!base.backend.is_plugin()) {  // a plugin is loaded by run_ab: a failure is exit 1
    int exit_code = kExitOk;
    if (auto probe = open_backend_spec("gate", base.backend, &exit_code); !probe.ok()) return exit_code;
  }
  if (Status s = check_host_memory(base.host_bytes() + floor.host_bytes(),
                                   "the weights, inputs and outputs of the gemm and its floor");
      !s.ok()) {
    return fail("gate", s);
  }
  AbOptions ao;
  ao.rounds = o.rounds;
  ao.seed = o.seed;
  auto r = run_ab(base, floor, ao);
  if (!r.ok()) {
    // Only the floor side's UNIMPLEMENTED means "no floor"; anything else is a plain failure.
    if (r.status().code() == TB_UNIMPLEMENTED && r.status().message().rfind(floor.text(), 0) == 0) {
      std::fprintf(stderr, "twinbit gate: backend '%s' has no read_floor entry, so there is no "
                   "floor to measure against on it; no gate is reported (%s)\n", o.backend.c_str(),
                   r.status().message().c_str());
      return kExitFailed;
    }
    return fail("gate", r.status());
  }
  const AbResult& x = r.value();
  std::printf("gate %s: K %lld x N %lld, M %lld, %s, %s on %s\n", o.backend.c_str(), (long long)base.k,
              (long long)base.n, (long long)base.m, o.prec.c_str(), o.mode.c_str(), x.device_a.c_str());
  if (base.mode == TB_ACT_I8) std::printf("mode i8: the baseline is quantize_i8 of the activations, then the gemm\n");
  std::printf("baseline (gemm)   median %s  (p10 %s, p90 %s)\n", format_time_us(x.a.median_us).c_str(),
              format_time_us(x.a.p10_us).c_str(), format_time_us(x.a.p90_us).c_str());
  std::printf("floor (read)      median %s  (p10 %s, p90 %s)\n", format_time_us(x.b.median_us).c_str(),
              format_time_us(x.b.p10_us).c_str(), format_time_us(x.b.p90_us).c_str());
  std::printf("baseline/floor    %.3f  (per-round p10 %.3f, p90 %.3f; %d interleaved rounds)\n",
              x.ratio_median, x.ratio_p10, x.ratio_p90, o.rounds);
  if (x.ratio_median >= kGate) {
    std::printf("gate: PASS (%.3f >= %.2f): worth optimising - the kernel costs more than 20%% above "
                "reading its weights\n", x.ratio_median, kGate);
  } else {
    std::printf("gate: not passed (%.3f < %.2f): within 20%% of the read floor - little left to win\n",
                x.ratio_median, kGate);
  }
  return kExitOk;
}

}  // namespace

Command add_gate(CLI::App& root) {
  auto opt = std::make_shared<GateOptions>();
  CLI::App* app = root.add_subcommand(
      "gate",
      "The shape gate: time a projection (baseline) against the pure-read floor of the same bytes on\n"
      "the same backend (its read_floor entry), interleaved in one process, and report\n"
      "baseline/floor and whether it passes the 1.20 gate (>= 1.20: worth optimising). A backend\n"
      "without read_floor gets no invented floor: the command says so and exits 1.\n"
      "Both sides call one copy of the weights again and again, so where the weights fit a cache\n"
      "(a CPU's last-level cache, a GPU's L2) both read from it: a gate for kernel work, not the\n"
      "cold measurement (twinbit-bench rotates copies of the weights past the caches for that).");
  app->footer("Examples:\n"
              "  twinbit gate --backend cuda --shape 2048x151936 --m 1\n"
              "  twinbit gate --backend cpu,threads=2 --shape 2048x12288 --m 32 --mode i8 --prec q4\n" +
              std::string(kBackendOptionHelp));
  app->add_option("--backend", opt->backend, backend_option_help("Backend"))->required();
  app->add_option("--shape", opt->shape, "Projection KxN, e.g. 2048x6144")->required();
  app->add_option("--m", opt->m, "Rows M")->check(rows_check())->capture_default_str();
  app->add_option("--prec", opt->prec, "Weight precision")->check(CLI::IsMember(precision_name_list()))->capture_default_str();
  app->add_option("--mode", opt->mode, "Activation mode")->check(CLI::IsMember({"f32", "i8"}))->capture_default_str();
  app->add_option("--rounds", opt->rounds, "Interleaved rounds")->check(CLI::Range(1, 100000))->capture_default_str();
  app->add_option("--seed", opt->seed, "Seed of the synthetic weights")->capture_default_str();
  return Command{app, [opt] { return run_gate(*opt); }};
}

}  // namespace twinbit::cli
