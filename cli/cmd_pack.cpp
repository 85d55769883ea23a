// `twinbit pack`: writes a strip-cache artifact. For now from the synthetic model generator.
#include "artifacts/synthetic.h"
#include "cli/cli_common.h"
#include "cli/output_path.h"
#include "core/precision.h"

namespace twinbit::cli {
namespace {
struct PackOptions {
  bool synthetic = false;
  std::string out;
  uint64_t seed = 42;
  bool small = false;
  std::vector<std::string> precs = {"q8", "q4"};
  artifact::OpenOptions open;  // for reading back what was written
};

int run_pack(const PackOptions& o) {
  if (!o.synthetic) {
    return usage_error("pack", Error(TB_INVALID_ARGUMENT, "nothing to pack: give --synthetic (importing "
                                                   "GGUF or safetensors files is not built yet)"));
  }
  auto out = open_output("-o", o.out, {});
  if (!out.ok()) return fail_output("pack", out.status());
  synthetic::Options so;
  so.seed = o.seed;
  so.include_lm_head = !o.small;
  so.precisions.clear();
  for (const std::string& p : o.precs) {
    auto row = find_precision(p);
    if (!row.ok()) return usage_error("pack", row.status());
    so.precisions.push_back((*row)->prec);
  }
  so.progress = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  const double t0 = now_us();
  if (Status s = synthetic::write_model(out.value(), so); !s.ok()) return fail("pack", s);
  if (out->kind() == artifact::OutputFile::Kind::stream) {  // nothing to open again
    std::fprintf(stderr, "wrote %s: %s, in %s\n", o.out.c_str(), format_bytes(out->bytes_written()).c_str(),
                 format_time_us(now_us() - t0).c_str());
    return 0;
  }
  auto art = artifact::Artifact::open(out->target(), o.open);
  if (!art.ok()) return fail("pack", art.status());
  std::printf("wrote %s: %zu entries, %s, in %s\n", o.out.c_str(), art.value()->entries().size(),
              format_bytes(art.value()->file_bytes()).c_str(), format_time_us(now_us() - t0).c_str());
  return kExitOk;
}
}  // namespace

Command add_pack(CLI::App& root) {
  auto opt = std::make_shared<PackOptions>();
  CLI::App* app = root.add_subcommand("pack", "Write a strip-cache artifact (atomically: a "
                                              "failure never leaves a file that looks valid).");
  app->add_flag("--synthetic", opt->synthetic, "Pack the synthetic Qwen3-VL-2B projection set");
  app->add_option("-o,--output", opt->out, "Artifact file to write ('-' for stdout; a FIFO or device is streamed to)")->required();
  app->add_option("--seed", opt->seed, "Seed of the synthetic weights")->capture_default_str();
  app->add_flag("--small", opt->small, "Leave out lm_head");
  add_read_option(app, opt->open);
  app->add_option("--prec", opt->precs, "Precisions to pack")
      ->delimiter(',')->check(CLI::IsMember(precision_name_list()))->capture_default_str();
  return Command{app, [opt] { return run_pack(*opt); }};
}

}  // namespace twinbit::cli
