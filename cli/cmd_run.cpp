// `twinbit run`: one projection of an artifact on one backend (built in or a plugin), on
// activations read from a file (.npy or raw float32, e.g. captured from an engine) or synthetic
// ones; writes y [M][N] to a file (.npy or raw float32).
#include <xxhash.h>

#include "artifacts/float_rows_file.h"
#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "cli/output_path.h"
#include "conformance/conformance.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {
struct RunOptions {
  std::string path, entry, backend = "cpu", mode = "f32", out, input;
  std::string input_format = "auto", output_format = "auto";
  int64_t m = 1;
  uint64_t seed = 42;
  artifact::OpenOptions open;
};

int run_run(const RunOptions& o) {
  auto out = open_output("-o", o.out, {o.path, o.input});
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
  auto in_format = artifact::parse_file_format(o.input_format);
  if (!in_format.ok()) return usage_error("run", in_format.status());
  auto out_format = artifact::parse_file_format(o.output_format);
  if (!out_format.ok()) return usage_error("run", out_format.status());
  int exit_code = kExitOk;
  auto backend = open_backend_option("run", o.backend, &exit_code);
  if (!backend.ok()) return exit_code;
  auto view = art.weights(*e);
  if (!view.ok()) return fail("run", view.status());
  auto bound = backend->bind(view->view, view->keep_alive);
  if (!bound.ok()) return fail("run", bound.status());

  const tb_strips& w = view->view.strips;
  const int64_t ng = w.kp / 32;
  int64_t m = o.m;
  std::vector<float> x;
  if (o.input.empty()) {
    x = make_activations(o.seed, e->name.substr(0, e->name.rfind('.')), m, w.k);
  } else {
    auto rows = artifact::read_float_rows(o.input, in_format.value(), w.k, 65536);
    if (!rows.ok()) return fail("run", rows.status());
    m = rows->rows;
    x = std::move(rows->values);
  }
  std::vector<int8_t> xq(static_cast<size_t>(m * w.kp));
  std::vector<float> xd(static_cast<size_t>(m * ng)), y(static_cast<size_t>(m * w.n));
  tb_gemm_args a{};
  a.mode = o.mode == "i8" ? TB_ACT_I8 : TB_ACT_F32;
  a.m = m;
  a.x = x.data();
  a.ldx = w.k;
  // The contract's quantiser, so that i8 results are those of any engine following NUMERICS.md.
  if (a.mode == TB_ACT_I8) ref::quantize_activations(m, w.k, x.data(), w.k, xq.data(), w.kp, xd.data(), ng);
  a.xq = xq.data();
  a.ldxq = w.kp;
  a.xd = xd.data();
  a.ldxd = ng;
  a.y = y.data();
  a.ldy = w.n;
  const double t0 = now_us();
  if (Status s = backend->gemm(bound.value(), a); !s.ok()) return fail("run", s);
  const double us = now_us() - t0;
  const artifact::FileFormat written = artifact::resolve_file_format(out_format.value(), o.out);
  if (Status s = artifact::write_float_rows(out.value(), written, m, w.n, y.data()); !s.ok()) return fail("run", s);
  std::fprintf(out->is_stdout() ? stderr : stdout, "%s (%s, K %lld x N %lld) on %s, M = %lld (%s), mode %s: %s; wrote %s: float32 "
              "[%lld][%lld] little-endian, %s; xxh64 of the values %016llx\n", e->name.c_str(),
              prec_name(w.prec), (long long)w.k, (long long)w.n, backend->name().c_str(), (long long)m,
              o.input.empty() ? Format("synthetic, seed %llu", (unsigned long long)o.seed).c_str()
                              : o.input.c_str(),
              o.mode.c_str(), format_time_us(us).c_str(), o.out.c_str(), (long long)m, (long long)w.n,
              written == artifact::FileFormat::npy ? ".npy" : "raw",
              static_cast<unsigned long long>(XXH64(y.data(), y.size() * sizeof(float), 0)));
  return kExitOk;
}
}  // namespace

Command add_run(CLI::App& root) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand(
      "run", "Run one projection of an artifact on one backend and write y [M][N] to a file.\n"
             "Activations: --input FILE, M rows of the entry's K floats (.npy '<f4' of shape (M, K)\n"
             "or (K,), or raw little-endian float32 with M = bytes / (4 K)); without --input,\n"
             "synthetic rows deterministic from --m and --seed. In i8 mode they are quantised with\n"
             "the contract's quantiser. Output: .npy of shape (M, N) '<f4', or raw float32.\n"
             "File formats follow the name (.npy is NumPy, anything else raw float32) unless\n"
             "--input-format / --output-format say otherwise.");
  app->footer("Examples:\n"
              "  twinbit run model.tbsc --entry attn_q.q8 --input x.npy -o y.npy\n"
              "  twinbit run model.tbsc --entry ffn_down.q4 --mode i8 --input x.f32 -o y.f32\n"
              "  twinbit run model.tbsc --entry attn_q.q8 --backend ./libmine.so --m 32 -o y.npy\n"
              "Row r of y at M = 32 must equal y of row r alone (M = 1), byte for byte.\n" +
              std::string(kBackendOptionHelp));
  app->add_option("file", opt->path, "Artifact file")->required();
  app->add_option("--entry", opt->entry, "Strip entry to run, e.g. attn_q.q8")->required();
  app->add_option("--backend", opt->backend, backend_option_help("Backend"))->capture_default_str();
  auto* input = app->add_option("--input", opt->input, "Activations file (.npy or raw .f32)");
  auto* m = app->add_option("--m", opt->m, "Rows M of synthetic activations")->check(rows_check())->capture_default_str();
  app->add_option("--mode", opt->mode, "Activation mode")->check(CLI::IsMember({"f32", "i8"}))->capture_default_str();
  auto* seed = app->add_option("--seed", opt->seed, "Seed of synthetic activations")->capture_default_str();
  input->excludes(m)->excludes(seed);
  app->add_option("--input-format", opt->input_format, "Format of --input")
      ->check(CLI::IsMember({"auto", "npy", "f32"}))->capture_default_str();
  app->add_option("--output-format", opt->output_format, "Format of --output")
      ->check(CLI::IsMember({"auto", "npy", "f32"}))->capture_default_str();
  app->add_option("-o,--output", opt->out, "Output file (.npy, or raw float32; '-' for stdout; a FIFO or device is streamed to)")->required();
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_run(*opt); }};
}

}  // namespace twinbit::cli
