// `twinbit conformance`: the conformance suite (conformance/conformance.h) on one backend, built
// in or plugged in, with a report a vendor can hand in (docs/CONFORMANCE.md).
#include <fnmatch.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "cli/output_path.h"
#include "conformance/conformance.h"
#include "conformance/explain.h"
#include "conformance/isolation/isolation.h"
#include "conformance/support.h"

namespace twinbit::cli {
namespace {

struct ConformanceOptions {
  std::vector<std::string> backends;
  std::string plugin, json, junit, expected, filter, sweep = "full";
  uint64_t seed = 1;
  int cases = 100, generator = conformance::kGeneratorVersion;
  bool list = false, quiet = false, support = false;
  bool explain_on = false;           // --explain given
  std::vector<std::string> explain;  // its CASE, when one was named
  std::vector<std::string> dump;     // --dump CASE DIR
  std::string isolation = "auto", log;
  double case_timeout = 60;
  bool no_repeat = false;
  bool no_model_shapes = false;
  bool worker = false;  // internal: this process is an isolated run's worker (isolation.h)
};

// The worker's command line: this executable in its worker mode, with what it needs to load the
// backend and judge a case exactly as the parent would.
std::vector<std::string> worker_argv(const ConformanceOptions& o, const std::string& spec) {
  std::vector<std::string> argv = {"/proc/self/exe", "conformance", "--worker", "-q",
                                   "--seed", std::to_string(o.seed), "--sweep", o.sweep};
  if (!o.plugin.empty()) {
    argv.insert(argv.end(), {"--plugin", o.plugin});
  } else {
    argv.insert(argv.end(), {"--backend", spec});
  }
  if (!o.expected.empty()) argv.insert(argv.end(), {"--expected", o.expected});
  if (o.no_repeat) argv.push_back("--no-repeat");
  return argv;
}

// The worker mode: load the backend (or say why not), then judge the cases the parent sends.
int run_worker_mode(const ConformanceOptions& o, BackendSpec spec, conformance::SuiteOptions so) {
  constexpr int kResultFd = 3;
  apply_environment_defaults(spec);
  int exit_code = kExitOk;
  auto backend = open_backend_spec("conformance", spec, &exit_code);
  if (!backend.ok()) {
    conformance::isolation::worker_fatal(kResultFd, backend.status(), exit_code);
    return exit_code;
  }
  if (o.sweep == "exhaustive") so.reference_budget = conformance::kExhaustiveReferenceBudget;
  return conformance::isolation::run_worker(backend.value(), so, 0, kResultFd);
}

// The case named `name` among the run's cases, else among every sweep's (a name spells out its
// parameters, so a case of another sweep is the same case).
std::optional<conformance::Case> find_case(const std::vector<conformance::Case>& cases,
                                           const std::string& name, const conformance::CaseOptions& co) {
  using namespace conformance;
  for (const Case& c : cases) {
    if (c.name() == name) return c;
  }
  for (Sweep sweep : {Sweep::exhaustive, Sweep::quick}) {
    CaseOptions o = co;
    o.sweep = sweep;
    o.random_cases = 0;
    for (const Case& c : generate_cases(o)) {
      if (c.name() == name) return c;
    }
  }
  return std::nullopt;
}

int run_conformance(const ConformanceOptions& o) {
  using namespace conformance;
  auto finish_file = [](artifact::OutputFile& file, const std::string& text) {
    Status s = file.write(text.data(), text.size());
    s = s.ok() ? file.commit() : s;
    return s.ok() ? kExitOk : fail("conformance", s);
  };
  if (o.list) return print_backend_list(false);
  std::optional<artifact::OutputFile> json, junit;  // opened before the suite runs
  const std::vector<std::string> inputs = {o.plugin, o.expected};
  if (!o.json.empty()) {
    auto f = open_output("--json", o.json, inputs);
    if (!f.ok()) return fail_output("conformance", f.status());
    json.emplace(std::move(f).value());
  }
  if (!o.junit.empty()) {
    auto f = open_output("--junit", o.junit, inputs, {json ? &*json : nullptr});
    if (!f.ok()) return fail_output("conformance", f.status());
    junit.emplace(std::move(f).value());
  }
  // --plugin PATH is --backend PATH; a built-in that cannot run here is 77 (skipped, never
  // passed), a plugin that does not load is 1. With several backends, one that cannot run here is
  // reported as skipped and the others run; 77 only when none can.
  std::vector<BackendSpec> specs;
  if (!o.plugin.empty()) {
    specs.emplace_back().plugin_path = o.plugin;  // as given, even without a '/' (dlopen's search)
  } else {
    for (const std::string& text : o.backends.empty() ? std::vector<std::string>{"cpu"} : o.backends) {
      auto spec = parse_backend_spec(text);
      if (!spec.ok()) return usage_error("conformance", spec.status());
      specs.push_back(std::move(spec).value());
    }
  }
  if (specs.size() > 1 && (json || junit)) {
    return usage_error("conformance", Error(TB_INVALID_ARGUMENT, "--json and --junit report on "
                       "one backend: give one --backend with them (%zu given)", specs.size()));
  }
  // `--explain` without a CASE may reach here as one empty value.
  const bool one_case = !o.dump.empty() || (!o.explain.empty() && !o.explain.front().empty());
  if ((o.support || one_case) && specs.size() > 1) {
    return usage_error("conformance", Error(TB_INVALID_ARGUMENT, "--support, --dump and --explain "
                       "CASE take one backend (%zu given)", specs.size()));
  }
  if (o.generator < 1 || o.generator > kGeneratorVersion) {
    return usage_error("conformance", Error(TB_INVALID_ARGUMENT, "--generator %d: versions are 1 to %d",
                       o.generator, kGeneratorVersion));
  }
  // --support, --dump and --explain CASE are tools of one backend loaded here (supports() only,
  // no call, or one case to debug): never isolated. A run's --explain loads the backend here
  // after the isolated run, for the differing cases only.
  const bool isolate = !o.support && !one_case &&
                       (o.isolation == "process" || (o.isolation == "auto" && !o.plugin.empty()));
  if (isolate && specs.size() > 1) {
    return usage_error("conformance", Error(TB_INVALID_ARGUMENT, "--isolation process runs one "
                       "backend: give one --backend with it (%zu given)", specs.size()));
  }
  SuiteOptions so;
  so.seed = o.seed;
  so.repeat = !o.no_repeat;
  if (!o.expected.empty()) {
    auto list = read_expected_failures(o.expected);
    if (!list.ok()) return fail("conformance", list.status());
    so.expected = std::move(list).value();
  }
  if (o.worker) return run_worker_mode(o, specs.front(), so);
  if (!o.quiet) so.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  // The live log: one line per finished case, flushed at once, so a run that is itself killed
  // still says how far it got (the reports are written only at the end, each atomically).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(nullptr, std::fclose);
  if (!o.log.empty()) {
    log.reset(std::fopen(o.log.c_str(), "w"));
    if (!log) {
      return usage_error("conformance", Error(TB_INVALID_ARGUMENT, "--log '%s' cannot be written: %s",
                                              o.log.c_str(), std::strerror(errno)));
    }
    so.on_case = [f = log.get()](size_t i, size_t n, const CaseResult& r) {
      std::fprintf(f, "[%zu/%zu] %s: %s (%.3f s)%s%s\n", i + 1, n, r.name.c_str(),
                   verdict_name(r.verdict), r.seconds, r.message.empty() ? "" : " ",
                   r.message.c_str());
      std::fflush(f);
    };
  }

  std::vector<Backend> backends;
  std::vector<BackendSpec> running;
  int skipped_code = kExitOk;
  for (BackendSpec& spec : specs) {
    if (isolate) break;  // the workers load it: a backend that crashes at load loses a worker
    apply_environment_defaults(spec);
    int exit_code = kExitOk;
    auto backend = open_backend_spec("conformance", spec, &exit_code);
    if (backend.ok()) {
      backends.push_back(std::move(backend).value());
      running.push_back(spec);
    } else if (exit_code == kExitCannotRun && specs.size() > 1) {
      skipped_code = exit_code;  // reported by open_backend_spec; the others still run
    } else {
      return exit_code;
    }
  }
  if (backends.empty() && !isolate) return skipped_code;

  CaseOptions co;
  co.seed = o.seed;
  co.random_cases = o.cases;
  co.generator = o.generator;
  co.model_shapes = !o.no_model_shapes;
  co.sweep = o.sweep == "quick"        ? Sweep::quick
             : o.sweep == "none"       ? Sweep::none
             : o.sweep == "exhaustive" ? Sweep::exhaustive
                                       : Sweep::full;
  // An exhaustive run checks every column (a sampled reference would leave columns the backends'
  // own sweeps used to check), but in the vocabulary's prefill (kExhaustiveReferenceBudget).
  if (co.sweep == Sweep::exhaustive) so.reference_budget = kExhaustiveReferenceBudget;
  std::vector<Case> cases = generate_cases(co);
  if (o.support) {
    const std::vector<SupportProbe> probes = probe_support(backends.front());
    const std::string text = format_support_text(backends.front(), probes);
    std::fputs(text.c_str(), json && json->is_stdout() ? stderr : stdout);
    return json ? finish_file(*json, format_support_json(backends.front(), probes)) : kExitOk;
  }
  if (one_case) {
    const std::string& name = o.dump.empty() ? o.explain.front() : o.dump.front();
    std::optional<Case> c = find_case(cases, name, co);
    if (!c) {
      return usage_error("conformance", Error(TB_INVALID_ARGUMENT, "no case named '%s' in this "
                         "seed's list or any sweep (names as the report prints them, e.g. "
                         "gemm_q8_f32_M3_N33_K96)", name.c_str()));
    }
    if (!o.dump.empty()) {
      if (Status s = dump_case(*c, o.seed, so.reference_budget, o.dump[1]); !s.ok()) return fail("conformance", s);
      std::printf("wrote %s: inputs and expected outputs as .npy, with case.json\n", o.dump[1].c_str());
      if (!o.explain_on) return kExitOk;
    }
    if (o.explain_on) {
      const Explanation e = explain_case(backends.front(), *c, o.seed, so.reference_budget);
      std::fputs(format_explanation(e).c_str(), stdout);
      return e.backend.differing > 0 ? kExitFailed : kExitOk;
    }
  }
  if (!o.filter.empty()) {
    std::vector<Case> kept;
    for (const Case& c : cases) {
      if (fnmatch(o.filter.c_str(), c.name().c_str(), 0) == 0) kept.push_back(c);
    }
    cases = std::move(kept);
  }
  std::vector<Report> reports;
  if (isolate) {
    isolation::IsolationOptions io;
    io.worker_argv = worker_argv(o, specs.front().to_string());
    io.case_timeout_s = o.case_timeout;
    if (!o.quiet) {
      std::fprintf(stderr, "twinbit conformance: %zu cases on %s, each in a worker process (time "
                   "limit %.0f s per case), seed %llu\n", cases.size(), specs.front().to_string().c_str(),
                   o.case_timeout, static_cast<unsigned long long>(o.seed));
    }
    int exit_code = kExitFailed;
    auto rep = isolation::run_isolated(io, cases, so, &exit_code);
    if (!rep.ok()) {
      // A backend that does not load was reported by the worker itself (same stderr).
      if (rep.status().code() != TB_UNAVAILABLE) {
        std::fprintf(stderr, "twinbit conformance: %s\n", rep.status().message().c_str());
      }
      return exit_code == kExitOk ? kExitFailed : exit_code;
    }
    reports.push_back(std::move(rep).value());
    running.push_back(specs.front());
  }
  std::vector<const Backend*> under_test;
  for (size_t b = 0; b < backends.size(); ++b) {
    under_test.push_back(&backends[b]);
    if (!o.quiet) {
      std::fprintf(stderr, "twinbit conformance: %zu cases on %s (%s), seed %llu\n", cases.size(),
                   backends[b].name().c_str(), running[b].to_string().c_str(),
                   static_cast<unsigned long long>(o.seed));
    }
  }
  if (!isolate) reports = run_suites(under_test, cases, so);
  bool passed = true;
  // With a report on stdout, the text goes to stderr so stdout stays one parseable document.
  const bool stdout_taken = (json && json->is_stdout()) || (junit && junit->is_stdout());
  for (size_t b = 0; b < reports.size(); ++b) {
    Report& rep = reports[b];
    const BackendSpec& spec = running[b];
    rep.source = spec.is_plugin() ? "plugin " + spec.to_string() : "built in, " + spec.to_string();
    rep.sweep = o.sweep + (o.filter.empty() ? "" : ", filter " + o.filter) +
                (isolate ? ", isolated" : "") + (o.no_repeat ? ", no repeat" : "") +
                (o.no_model_shapes ? ", no model shapes" : "");
    rep.random_cases = o.cases;
    rep.generator = o.generator;
    std::fputs(format_text(rep).c_str(), stdout_taken ? stderr : stdout);
    passed = passed && rep.passed();
    // --explain: every case whose bits differed, searched for the deviation that reproduces them.
    // After an isolated run the backend is loaded here only now, and only if a case differed.
    for (const CaseResult& r : o.explain_on ? rep.results : std::vector<CaseResult>{}) {
      if (r.mismatch.differing == 0) continue;
      if (b >= backends.size()) {
        BackendSpec spec = running[b];
        apply_environment_defaults(spec);
        int exit_code = kExitOk;
        auto backend = open_backend_spec("conformance", spec, &exit_code);
        if (!backend.ok()) break;  // reported by open_backend_spec; the run's verdicts stand
        backends.push_back(std::move(backend).value());
      }
      const Explanation e = explain_case(backends[b], r.c, o.seed, so.reference_budget);
      std::fputs(format_explanation(e).c_str(), stdout_taken ? stderr : stdout);
    }
  }
  const Report& rep = reports.front();  // the only one when a file report was asked for
  if (json) {
    if (int code = finish_file(*json, format_json(rep)); code != kExitOk) return code;
  }
  if (junit) {
    if (int code = finish_file(*junit, format_junit(rep)); code != kExitOk) return code;
  }
  return passed ? kExitOk : kExitFailed;
}

}  // namespace

Command add_conformance(CLI::App& root) {
  auto opt = std::make_shared<ConformanceOptions>();
  CLI::App* app = root.add_subcommand(
      "conformance",
      "Run the conformance suite on a backend (or several): every case is compared bit for bit\n"
      "with the scalar reference. Cases: a fixed sweep of shapes plus --cases random awkward\n"
      "ones, inputs drawn from --seed. Prints a report per backend (backend, device, library,\n"
      "seed, one line per case that is not equal, totals); exit 0 = pass, 1 = a difference,\n"
      "error or stale expected failure,\n"
      "77 = the backend cannot run on this machine (with several, none can; one that cannot is\n"
      "reported as skipped).\n"
      "Plugins run isolated: each case in a worker process under a time limit, outputs against\n"
      "guard pages, inputs hashed, every case repeated from two threads (docs/CONFORMANCE.md).\n"
      "Examples:\n"
      "  twinbit conformance --backend cpu --sweep quick\n"
      "  twinbit conformance --plugin ./libmy_npu.so --case-timeout 20 --log run.log --json r.json\n"
      "  twinbit conformance --plugin ./libmy_npu.so --isolation none --filter 'gemm_q8_*'");
  app->footer(std::string(
      "More examples:\n"
      "  twinbit conformance --backend cpu                      the default run (full sweep + 100 random)\n"
      "  twinbit conformance --plugin ./libmine.so --explain    and, per differing case, which usual\n"
      "                                                         deviation reproduces its bits\n"
      "  twinbit conformance --plugin ./libmine.so --explain gemm_q8_f32_M1_N2048_K2048\n"
      "  twinbit conformance --dump gemm_q4_i8_M3_N33_K96 case_dir   inputs + expected output as .npy\n"
      "  twinbit conformance --plugin ./libmine.so --support --json support.json\n"
      "  twinbit conformance --seed 7 --generator 1             the case list of a pre-v2 report\n"
      "Suite time, cpu backend, 2-core machine (CPU seconds): --sweep quick --cases 50 about 10 s;\n"
      "the default run (950 cases) about 65 s (docs/CONFORMANCE.md, CI time).\n\n") + kBackendOptionHelp);
  auto* b = app->add_option("--backend", opt->backends,
                            backend_option_help("Backend to test (default cpu); repeat it to test "
                                                "several in one run, each case prepared once"))
                ->type_size(1)->allow_extra_args(false);
  auto* p = app->add_option("--plugin", opt->plugin, "Shared library exporting tb_backend_create_v1");
  b->excludes(p);
  app->add_option("--seed", opt->seed, "Seed of the random cases and of every input")->capture_default_str();
  app->add_option("--cases", opt->cases, "Number of random cases (besides the sweep)")->capture_default_str();
  app->add_option("--sweep", opt->sweep,
                  "Fixed sweep: full (thinned pairwise), quick (a small subset), none, or\n"
                  "exhaustive (the whole M x N x K product, every column checked but in the vocabulary's\nprefill: slow)")
      ->check(CLI::IsMember({"full", "quick", "none", "exhaustive"}))->capture_default_str();
  app->add_option("--filter", opt->filter, "Only cases whose name matches this glob, e.g. 'gemm_q4_*'");
  app->add_option("--expected", opt->expected,
                  "Expected-failure list: lines 'BACKEND PATTERN REASON...' ('#' comments)");
  app->add_option("--json", opt->json, "Also write the report as one JSON object to this file ('-': stdout)");
  app->add_option("--junit", opt->junit, "Also write the report as JUnit XML to this file ('-': stdout)");
  app->add_option("--isolation", opt->isolation,
                  "auto (default): plugins run isolated, built-in backends in this process;\n"
                  "process: every case in a worker process, so a crash or a hang is that\n"
                  "case's verdict (crash / timeout) and the run goes on; none: all in this\n"
                  "process (debugging)")
      ->check(CLI::IsMember({"auto", "process", "none"}))->capture_default_str();
  app->add_option("--case-timeout", opt->case_timeout,
                  "Isolated runs: seconds a case may run on the backend before its worker is\n"
                  "killed (verdict timeout)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app->add_flag("--no-repeat", opt->no_repeat,
                "Run each case once: no repeat from two threads (it triples the backend's calls;\n"
                "for long sweeps whose determinism a quick run already checks)");
  app->add_flag("--no-model-shapes", opt->no_model_shapes,
                "Leave out the model sweep (the target model's projections, up to the vocabulary's\n"
                "311 M weights: drawing their inputs is most of a quick run's time); for emulated\n"
                "and sanitizer runs whose other instances keep it");
  app->add_option("--log", opt->log, "Write a live log here: one line per finished case, flushed at once");
  app->add_flag("--worker", opt->worker, "(internal) the worker of an isolated run")->group("");
  app->add_option("--generator", opt->generator,
                  "Version of the random-case generator: 2 (default) draws K % 32 == 0 for half the\n"
                  "random gemm cases; 1 reproduces the case lists of earlier reports")
      ->capture_default_str();
  CLI::Option* explain = app->add_option("--explain", opt->explain,
                  "After the run, search the deviation (unfused fma, tree fold, flush-to-zero,\n"
                  "split plan, I8 scale order, round-half-away) that reproduces the backend's bits\n"
                  "of every differing case; with a CASE name, only that case (no suite run)")
      ->expected(0, 1)->type_name("[CASE]");
  app->add_option("--dump", opt->dump,
                  "Write CASE's inputs and expected output as .npy files plus case.json to DIR\n"
                  "(created if absent), then exit")
      ->expected(2)->type_name("CASE DIR");
  app->add_flag("--support", opt->support,
                "List what the backend claims (supports() over ops x precisions x modes x probe\n"
                "shapes, nothing run); with --json, as one JSON object");
  app->add_flag("--list", opt->list, "List the built-in backends and their capability tags");
  app->add_flag("-q,--quiet", opt->quiet, "No progress lines on stderr");
  return Command{app, [opt, explain] {
    opt->explain_on = explain->count() > 0;
    return run_conformance(*opt);
  }};
}

}  // namespace twinbit::cli
