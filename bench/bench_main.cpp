// twinbit-bench: runs the drivers for one backend and prints (and optionally writes) the report.
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_amx.h"
#include "bench/bench.h"

namespace twinbit::bench {
#ifndef TWINBIT_BENCH_CUDA
Status run_cuda(const Options&, std::vector<Case>&) {
  return Error(TB_UNAVAILABLE, "this build has no CUDA backend (configure with TWINBIT_CUDA=ON)");
}
#endif
}  // namespace twinbit::bench

int main(int argc, char** argv) {
  using namespace twinbit;
  bench::Options opt;
  CLI::App app{"twinbit-bench: time twinbit's kernels against the floor and a peer, in one run"};
  app.add_option("--backend", opt.backend, "Backend to measure: a SPEC naming cpu, cuda or npu_layout (e.g. "
                 "cpu, cpu,isa=fma3_avx2, cuda:1, npu_layout,cores=3; core/backend_spec.h)")->capture_default_str();
  app.add_option("--json", opt.json_path, "Also write the cases as one JSON object to FILE");
  app.add_option("--shape", opt.shapes, "Only these shapes (q_o, k_v, gate, gate_up, down, qkv, lm_head)");
  app.add_option("--m", opt.ms, "Batch sizes M")->delimiter(',')->capture_default_str();
  app.add_option("--threads", opt.threads, "CPU threads")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--reps", opt.reps, "Repetitions per case (0 = driver default)")->check(CLI::NonNegativeNumber);
  app.add_option("--vs-isa", opt.vs_isa, "CPU: also time every case with the cpu backend forced to "
                 "isa=TAG (e.g. avx512vnni), interleaved rotation by rotation with the floor and "
                 "the default tag, same process");
  app.add_option("--pages", opt.pages, "CPU: the pages the weight copies sit on: 4k (ordinary pages, "
                 "as a mapped artifact's), 2m (transparent huge pages asked for, as an artifact read "
                 "with --read copy), ab (both, the floor and the tag timed interleaved on each)")
      ->check(CLI::IsMember({"4k", "2m", "ab"}))->capture_default_str();
  app.add_option("--amx-tuning", opt.amx_tunings, "CPU, amx tag, mode I8, M >= 16: also time the quadrant "
                 "schedule at each of these tunings (cpu.set_amx_tuning, e.g. 0x101,0x100,0x201), interleaved "
                 "rotation by rotation, and the floor and the tag with warm weights (one copy, called "
                 "again and again): the compute and the memory stream apart")
      ->delimiter(',')->transform([](std::string v) {
        // Decimal or 0x hex; a concrete tuning (cpu_amx.h, AmxTuning::valid), or 0 = auto.
        size_t used = 0;
        long long t = -1;
        try {
          t = std::stoll(v, &used, 0);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != v.size() || (t != twinbit::cpu::kAmxTuningAuto && !twinbit::cpu::AmxTuning::valid(t))) {
          throw CLI::ValidationError(v + " is not a tuning (0 = auto, or the bits backends/cpu/cpu_amx.h "
                                     "describes, e.g. 0x101, 0x2101)");
        }
        return std::to_string(t);
      });
  app.add_flag("--quick", opt.quick, "Fewer repetitions: a smoke run, not a measurement");
  app.add_option("--mode", opt.modes, "Only these activation modes (f32, i8)")
      ->delimiter(',')->check(CLI::IsMember({"f32", "i8"}));
  app.add_option("--prec", opt.precs, "Only these weight precisions (q8, q4)")
      ->delimiter(',')->check(CLI::IsMember({"q8", "q4"}));
  app.add_flag("--layer", opt.layer, "CUDA: instead of the per-shape cases, one model layer's "
               "projections (qkv, q_o, gate_up, down) per decode step as a captured CUDA graph of "
               "device-resident calls, replayed, beside the same calls as public host calls");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // --help is an "error" with code 0
    return code == 0 ? 0 : 2;      // a usage error: exit 2, as every twinbit command
  }

  auto spec = parse_backend_spec(opt.backend);
  if (spec.ok() && spec->name != "cpu" && spec->name != "cuda" &&
                    spec->name != "npu_layout") {
    spec = Error(TB_INVALID_ARGUMENT, "--backend %s: the drivers measure cpu, cuda or npu_layout",
                 opt.backend.c_str());
  }
  if (spec.ok() && opt.layer && spec->name != "cuda") {
    spec = Error(TB_INVALID_ARGUMENT, "--layer measures the cuda backend (got --backend %s)",
                 opt.backend.c_str());
  }
  if (spec.ok() && opt.pages != "4k" && spec->name != "cpu") {
    spec = Error(TB_INVALID_ARGUMENT, "--pages %s places the CPU driver's weight copies (got --backend %s)",
                 opt.pages.c_str(), opt.backend.c_str());
  }
  if (!spec.ok()) {
    std::fprintf(stderr, "twinbit-bench: %s\n", spec.status().to_string().c_str());
    return 2;
  }
  opt.spec = spec.value();
  std::vector<bench::Case> cases;
  Status s = opt.spec.name == "cpu"          ? bench::run_cpu(opt, cases)
             : opt.spec.name == "npu_layout" ? bench::run_npu(opt, cases)
                                             : bench::run_cuda(opt, cases);
  if (!s.ok()) {
    std::fprintf(stderr, "twinbit-bench: %s\n", s.to_string().c_str());
    return 1;
  }
  if (!opt.json_path.empty()) {
    nlohmann::json j;
    j["backend"] = opt.spec.to_string();
    j["cases"] = nlohmann::json::array();
    for (const auto& c : cases) {
      nlohmann::json o = {{"shape", c.shape}, {"k", c.k}, {"n", c.n}, {"m", c.m},
                          {"prec", c.prec}, {"mode", c.mode}, {"us", c.us},
                          {"floor_us", c.floor_us}, {"ratio", c.ratio}, {"gbps", c.gbps},
                          {"peer_us", c.peer_us}, {"baseline_us", c.baseline_us},
                          {"vs_us", c.vs_us}};
      if (!c.note.empty()) o["note"] = c.note;
      j["cases"].push_back(o);
    }
    std::ofstream f(opt.json_path);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "twinbit-bench: cannot write %s\n", opt.json_path.c_str());
      return 1;
    }
  }
  return 0;
}
