// twinbit_cpu_check: the CPU backend's checks that need no `twinbit` command, for a build of the
// library alone - the aarch64 cross build runs it under emulation (scripts/test.sh, stage arm64).
//
//   twinbit_cpu_check conformance [--cases N] [--seed S]
//       The conformance suite's quick sweep plus N random cases (default 12, seed 1) on every
//       instruction-set tag this CPU runs, in one run (inputs and reference computed once).
//       Exit 0: every case equal on every tag; 1: not.
//   twinbit_cpu_check hashes
//       A fixed set of gemm cases (q8, q4 x f32, i8 x M 1, 5, 37), computed on every runnable tag
//       and by the scalar reference; one line per case: name, xxh64 of the inputs (strips and
//       activations), xxh64 of the output. Exit 1 when a tag's output differs from the
//       reference. The lines name no tag and no architecture, so the lines of two machines (or of
//       x86-64 and aarch64 under emulation) are comparable with diff: the same inputs must give
//       the same output bits everywhere.
//
// Exit 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <xxhash.h>

#include "backends/cpu/cpu_isa.h"
#include "conformance/conformance.h"
#include "conformance/inputs.h"
#include "core/backend.hpp"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"

namespace {

using namespace twinbit;

int usage(const char* why) {
  std::fprintf(stderr, "twinbit_cpu_check: %s\nusage: twinbit_cpu_check conformance [--cases N] "
               "[--seed S] | hashes\n", why);
  return 2;
}

std::vector<Backend> backends_per_tag() {
  std::vector<Backend> out;
  for (cpu::Isa isa : cpu::runnable_isas()) {
    BackendSpec spec;
    spec.name = "cpu";
    spec.params = {{"isa", cpu::isa_name(isa)}};
    auto b = create_backend(spec);
    if (!b.ok()) {
      std::fprintf(stderr, "twinbit_cpu_check: cpu,isa=%s: %s\n", cpu::isa_name(isa),
                   b.status().to_string().c_str());
      std::exit(1);
    }
    out.push_back(std::move(b).value());
  }
  return out;
}

int run_conformance(int64_t random_cases, uint64_t seed) {
  std::vector<Backend> backends = backends_per_tag();
  std::vector<const Backend*> under_test;
  for (const Backend& b : backends) under_test.push_back(&b);
  conformance::CaseOptions co;
  co.seed = seed;
  co.sweep = conformance::Sweep::quick;
  co.random_cases = static_cast<int>(random_cases);
  // Not the model sweep: under emulation drawing its inputs alone (311 M weight codes for the
  // vocabulary) takes many minutes; the native instances run it on every push.
  co.model_shapes = false;
  const std::vector<conformance::Case> cases = conformance::generate_cases(co);
  conformance::SuiteOptions so;
  so.seed = seed;
  so.repeat = false;  // determinism is checked natively; here the bits, once (emulation is slow)
  std::printf("twinbit_cpu_check conformance: %zu cases (quick sweep + %lld random, seed %llu) on "
              "tags %s\n", cases.size(), static_cast<long long>(random_cases),
              static_cast<unsigned long long>(seed), cpu::isa_names(cpu::runnable_isas()).c_str());
  bool passed = true;
  for (conformance::Report& rep : conformance::run_suites(under_test, cases, so)) {
    rep.sweep = "quick";
    rep.random_cases = static_cast<int>(random_cases);
    std::fputs(conformance::format_text(rep).c_str(), stdout);
    passed = passed && rep.passed();
  }
  return passed ? 0 : 1;
}

template <class T>
uint64_t hash_of(const std::vector<T>& v, uint64_t seed) {
  return XXH64(v.data(), v.size() * sizeof(T), seed);
}

int run_hashes() {
  std::vector<Backend> backends = backends_per_tag();
  bool all_equal = true;
  const int64_t n = 300, k = 640;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    conformance::Rng rng(1000 + prec);
    conformance::OwnedStrips w = conformance::random_strips(rng, prec, n, k);
    const tb_strips strips = w.view();
    std::vector<BoundWeights> bound;
    for (Backend& b : backends) {
      tb_weights_view view{};
      view.kind = TB_WEIGHTS_STRIPS;
      view.strips = strips;
      auto h = b.bind(view);
      if (!h.ok()) return std::fprintf(stderr, "bind: %s\n", h.status().to_string().c_str()), 1;
      bound.push_back(std::move(h).value());
    }
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      for (int64_t m : {1, 5, 37}) {
        std::vector<float> x = conformance::random_floats(rng, m * k);
        std::vector<int8_t> xq(static_cast<size_t>(m * k));
        std::vector<float> xd(static_cast<size_t>(m * k / 32));
        ref::quantize_activations(m, k, x.data(), k, xq.data(), k, xd.data(), k / 32);
        std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
        if (mode == TB_ACT_F32) {
          ref::gemm_f32(strips, m, x.data(), k, want.data(), n);
        } else {
          ref::gemm_i8(strips, m, xq.data(), k, xd.data(), k / 32, want.data(), n);
        }
        uint64_t in = XXH64(w.codes.data(), w.codes.size(), 0);
        in = hash_of(w.scales, in);
        in = hash_of(x, in);
        char name[64];
        std::snprintf(name, sizeof name, "gemm_%s_%s_M%lld_N%lld_K%lld", prec_name(prec),
                      act_mode_name(mode), static_cast<long long>(m), static_cast<long long>(n),
                      static_cast<long long>(k));
        for (size_t b = 0; b < backends.size(); ++b) {
          tb_gemm_args a{mode, m, x.data(), k, xq.data(), k, xd.data(), k / 32, got.data(), n};
          Status s = backends[b].gemm(bound[b], a);
          if (!s.ok() || std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
            std::fprintf(stderr, "twinbit_cpu_check: %s on %s: %s\n", name,
                         backends[b].device().c_str(),
                         s.ok() ? "output differs from the reference" : s.to_string().c_str());
            all_equal = false;
          }
        }
        std::printf("%s inputs %016llx output %016llx\n", name, static_cast<unsigned long long>(in),
                    static_cast<unsigned long long>(hash_of(want, 0)));
      }
    }
  }
  return all_equal ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("no command given");
  const std::string cmd = argv[1];
  if (cmd == "hashes") return argc == 2 ? run_hashes() : usage("hashes takes no options");
  if (cmd != "conformance") return usage(("unknown command '" + cmd + "'").c_str());
  int64_t cases = 12;
  uint64_t seed = 1;
  for (int i = 2; i < argc; ++i) {
    const std::string opt = argv[i];
    if ((opt != "--cases" && opt != "--seed") || i + 1 >= argc) {
      return usage(("unknown option or missing value: '" + opt + "'").c_str());
    }
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[++i], &end, 10);
    if (*argv[i] < '0' || *argv[i] > '9' || *end != '\0' || (opt == "--cases" && v > 100000)) {
      return usage(("bad value for " + opt + ": '" + argv[i] + "'").c_str());
    }
    if (opt == "--cases") cases = static_cast<int64_t>(v);
    else seed = v;
  }
  return run_conformance(cases, seed);
}
