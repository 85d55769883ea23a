// `twinbit run`: one projection of an artifact on one backend; writes the output to a file.
#include <xxhash.h>

#include "cli/cli_common.h"
#include "cli/output_path.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {
struct RunOptions {
  std::string path, entry, backend = "cpu", mode = "f32", out;
  int64_t m = 1;
  uint64_t seed = 42;
  artifact::OpenOptions open;
};

int run_run(const RunOptions& o) {
  auto out = open_output("-o", o.out, {o.path});
  if (!out.ok()) return fail_output("run", out.status());
  auto opened = artifact::Artifact::open(o.path, o.open);
  if (!opened.ok()) return fail("run", opened.status());
  const artifact::Artifact& art = *opened.value();
  const artifact::Entry* e = art.find(o.entry);
  if (!e) {
    std::string names;
    for (const auto& x : art.entries()) {
      if (x.kind == TB_WEIGHTS_STRIPS) names += (names.empty() ? "" : ", ") + x.name;
    }
    return fail("run", Error(TB_INVALID_ARGUMENT, "no entry '%s' in %s (strip entries: %s)",
                             o.entry.c_str(), o.path.c_str(), names.c_str()));
  }
  if (e->kind != TB_WEIGHTS_STRIPS) {
    return fail("run", Error(TB_INVALID_ARGUMENT, "entry '%s' is a float matrix; run takes strip entries", o.entry.c_str()));
  }
  if (Status s = check_host_memory(gemm_host_bytes(o.m, e->k, e->n),
                                   Format("the inputs and output of M = %lld rows of %s (K %lld -> N %lld)",
                                          (long long)o.m, e->name.c_str(), (long long)e->k, (long long)e->n));
      !s.ok()) {
    return fail("run", s);
  }
  auto backend = create_backend(o.backend);
  if (!backend.ok()) return fail_backend("run", backend.status());
  auto view = art.view_verified(*e);
  if (!view.ok()) return fail("run", view.status());
  auto bound = backend->bind(view.value());
  if (!bound.ok()) return fail("run", bound.status());

  const tb_strips& w = view.value().strips;
  const int64_t ng = w.kp / 32;
  const std::string base = e->name.substr(0, e->name.rfind('.'));
  std::vector<float> x = make_activations(o.seed, base, o.m, w.k);
  std::vector<int8_t> xq(static_cast<size_t>(o.m * w.kp));
  std::vector<float> xd(static_cast<size_t>(o.m * ng)), y(static_cast<size_t>(o.m * w.n));
  tb_gemm_args a{};
  a.mode = o.mode == "i8" ? TB_ACT_I8 : TB_ACT_F32;
  a.m = o.m;
  a.x = x.data();
  a.ldx = w.k;
  if (a.mode == TB_ACT_I8) ref::quantize_activations(o.m, w.k, x.data(), w.k, xq.data(), w.kp, xd.data(), ng);
  a.xq = xq.data();
  a.ldxq = w.kp;
  a.xd = xd.data();
  a.ldxd = ng;
  a.y = y.data();
  a.ldy = w.n;
  const double t0 = now_us();
  if (Status s = backend->gemm(bound.value(), a); !s.ok()) return fail("run", s);
  const double us = now_us() - t0;
  if (Status s = out->write(y.data(), y.size() * sizeof(float)); !s.ok()) return fail("run", s);
  if (Status s = out->commit(); !s.ok()) return fail("run", s);
  std::fprintf(out->is_stdout() ? stderr : stdout, "%s (%s, K %lld x N %lld) on %s, M = %lld, mode %s: %s; wrote %s float32 [%lld][%lld] "
              "little-endian; xxh64 %016llx\n", e->name.c_str(), prec_name(w.prec), (long long)w.k,
              (long long)w.n, backend->name().c_str(), (long long)o.m, o.mode.c_str(),
              format_time_us(us).c_str(), o.out.c_str(), (long long)o.m, (long long)w.n,
              static_cast<unsigned long long>(XXH64(y.data(), y.size() * sizeof(float), 0)));
  return kExitOk;
}
}  // namespace

Command add_run(CLI::App& root) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand(
      "run", "Run one projection of an artifact on one backend with synthetic activations\n"
             "(deterministic from --seed) and write y [M][N] as raw float32 to a file.");
  app->add_option("file", opt->path, "Artifact file")->required();
  app->add_option("--entry", opt->entry, "Strip entry to run, e.g. attn_q.q8")->required();
  app->add_option("--backend", opt->backend, "Backend name")->capture_default_str();
  app->add_option("--m", opt->m, "Rows M of the activation batch")->check(rows_check())->capture_default_str();
  app->add_option("--mode", opt->mode, "Activation mode")->check(CLI::IsMember({"f32", "i8"}))->capture_default_str();
  app->add_option("--seed", opt->seed, "Seed of the activations")->capture_default_str();
  app->add_option("-o,--output", opt->out, "Output file ('-' for stdout; a FIFO or device is streamed to)")->required();
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_run(*opt); }};
}

}  // namespace twinbit::cli
