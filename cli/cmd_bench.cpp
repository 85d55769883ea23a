// `twinbit bench --a SPEC [--a-case CASE] --b SPEC [--b-case CASE]`: interleaved A B A B ... timing in one process (warm-up, then
// N rounds), per side median and spread, the ratio A/B and its spread (conformance/ab.h).
#include <cstdio>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "conformance/ab.h"
#include "core/precision.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {

struct BenchOptions {
  std::string a, b, a_case, b_case, shape = "2048x2048", prec = "q8", mode = "f32";
  int64_t m = 1;
  int rounds = 15, warmup = 3;
  uint64_t seed = 1;
  bool verbose = false;
};

int run_bench(const BenchOptions& o) {
  using namespace conformance;
  BenchSpec defaults;
  if (Status s = parse_shape(o.shape, defaults.k, defaults.n); !s.ok()) return usage_error("bench", s);
  defaults.m = o.m;
  auto prec = find_precision(o.prec);
  if (!prec.ok()) return usage_error("bench", prec.status());
  defaults.prec = (*prec)->prec;
  defaults.mode = o.mode == "i8" ? TB_ACT_I8 : TB_ACT_F32;
  auto a = parse_bench_spec(o.a, defaults);
  if (!a.ok()) return usage_error("bench", a.status());
  auto b = parse_bench_spec(o.b, defaults);
  if (!b.ok()) return usage_error("bench", b.status());
  if (Status s = parse_bench_case(o.a_case, a.value()); !s.ok()) return usage_error("bench", s);
  if (Status s = parse_bench_case(o.b_case, b.value()); !s.ok()) return usage_error("bench", s);
  for (BenchSpec* side : {&a.value(), &b.value()}) {
    apply_environment_defaults(side->backend);
    if (side->backend.is_plugin()) continue;  // loaded by run_ab: a failure is exit 1
    int exit_code = kExitOk;
    if (auto probe = open_backend_spec("bench", side->backend, &exit_code); !probe.ok()) return exit_code;
  }
  if (Status s = check_host_memory(a->host_bytes() + b->host_bytes(),
                                   "the weights, inputs and outputs of A and B");
      !s.ok()) {
    return fail("bench", s);
  }
  AbOptions ao;
  ao.rounds = o.rounds;
  ao.warmup = o.warmup;
  ao.seed = o.seed;
  if (o.verbose) ao.progress = [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); };
  auto r = run_ab(a.value(), b.value(), ao);
  if (!r.ok()) return fail("bench", r.status());
  const AbResult& x = r.value();
  std::printf("A  %s\n   on %s\n", a->text().c_str(), x.device_a.c_str());
  std::printf("B  %s\n   on %s\n", b->text().c_str(), x.device_b.c_str());
  std::printf("interleaved A B x %d rounds after %d warm-up calls each (seed %llu)\n", o.rounds,
              o.warmup, static_cast<unsigned long long>(o.seed));
  if (a->mode == TB_ACT_I8 || b->mode == TB_ACT_I8) {
    std::printf("mode i8: a call is the backend's quantize_i8 of the activations, then the gemm\n");
  }
  auto side = [](const char* n, const SideStats& s) {
    std::printf("%s  median %s per call   p10 %s  p90 %s   (calls per round: %d)\n", n,
                format_time_us(s.median_us).c_str(), format_time_us(s.p10_us).c_str(),
                format_time_us(s.p90_us).c_str(), s.calls_per_round);
  };
  side("A", x.a);
  side("B", x.b);
  std::printf("A/B  median %.3f   p10 %.3f  p90 %.3f   (per-round ratios)\n", x.ratio_median,
              x.ratio_p10, x.ratio_p90);
  if (x.compared) {
    std::printf("outputs: %s\n", x.bits.differing == 0
        ? Format("bit-identical (%lld elements)", (long long)x.bits.total).c_str()
        : Format("%lld/%lld differ, first (m %lld, n %lld), max %llu ulp", (long long)x.bits.differing,
                 (long long)x.bits.total, (long long)x.bits.first_m, (long long)x.bits.first_n,
                 static_cast<unsigned long long>(x.bits.max_ulp)).c_str());
    if (x.bits.differing > 0) {
      std::fprintf(stderr, "twinbit bench: A and B ran the same gemm on the same bytes and their "
                   "outputs differ: exit 1\n");
      return kExitFailed;
    }
  }
  return kExitOk;
}

}  // namespace

Command add_bench(CLI::App& root) {
  auto opt = std::make_shared<BenchOptions>();
  CLI::App* app = root.add_subcommand(
      "bench",
      "Interleaved A/B timing in one process: warm-up, then rounds of A B A B ...; prints each\n"
      "side's median and spread (p10..p90) and the ratio A/B with its spread. Synthetic weights.\n"
      "Each side is a backend SPEC (below) and a CASE = key=value[,key=value...]:\n"
      "  shape=KxN    K inputs x N outputs (default --shape)\n"
      "  m=M          activation rows (default --m)\n"
      "  prec=q8|q4   weight precision (default --prec)\n"
      "  mode=f32|i8  activation mode (default --mode); an i8 call includes quantize_i8\n"
      "  op=gemm|read_floor   the projection, or the backend's pure read of the same bytes\n"
      "Examples: --a cpu --b cuda;  --a cpu,threads=1 --b cpu,threads=8;  --a cuda:0 --b cuda:1;\n"
      "  --a cpu --a-case mode=f32 --b cpu --b-case mode=i8;  --a cuda --a-case m=1 --b cuda --b-case m=32\n"
      "The older one-argument BACKEND:CASE (--a cuda:m=32) is still read.\n"
      "When A and B run the same gemm (shape, m, prec, mode) their outputs are compared bit for\n"
      "bit; any difference is exit 1. Each side calls one copy of its weights again and again:\n"
      "where they fit a cache (a CPU's last-level cache, a GPU's L2) the times are warm ones.");
  app->footer(kBackendOptionHelp);
  app->add_option("--a", opt->a, backend_option_help("Side A"))->required();
  app->add_option("--a-case", opt->a_case, "Side A's CASE, e.g. m=32,prec=q4 (default: the options below)");
  app->add_option("--b", opt->b, backend_option_help("Side B"))->required();
  app->add_option("--b-case", opt->b_case, "Side B's CASE");
  app->add_option("--shape", opt->shape, "Default shape KxN")->capture_default_str();
  app->add_option("--m", opt->m, "Default rows M")->check(rows_check())->capture_default_str();
  app->add_option("--prec", opt->prec, "Default precision")->check(CLI::IsMember(precision_name_list()))->capture_default_str();
  app->add_option("--mode", opt->mode, "Default activation mode")->check(CLI::IsMember({"f32", "i8"}))->capture_default_str();
  app->add_option("--rounds", opt->rounds, "A B rounds")->check(CLI::Range(1, 100000))->capture_default_str();
  app->add_option("--warmup", opt->warmup, "Warm-up calls per side")->check(CLI::Range(0, 100000))->capture_default_str();
  app->add_option("--seed", opt->seed, "Seed of the synthetic weights and activations")->capture_default_str();
  app->add_flag("-v,--verbose", opt->verbose, "One line per round on stderr");
  return Command{app, [opt] { return run_bench(*opt); }};
}

}  // namespace twinbit::cli
