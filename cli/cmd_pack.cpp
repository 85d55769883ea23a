// `twinbit pack`: writes a strip-cache artifact, from a model file (GGUF, safetensors) through the
// import pipeline (artifacts/import/importer.h), or from the synthetic model generator.
#include <unistd.h>

#include <set>

#include <nlohmann/json.hpp>

#include "artifacts/import/dequantize.h"
#include "artifacts/import/importer.h"
#include "artifacts/import/model_kind.h"
#include "artifacts/import/open_model.h"
#include "artifacts/synthetic.h"
#include "cli/cli_common.h"
#include "cli/output_path.h"
#include "core/op_checks.h"
#include "core/precision.h"

namespace twinbit::cli {
namespace {

struct PackOptions {
  std::string model;
  bool synthetic = false;
  std::string out;
  uint64_t seed = 42;
  bool small = false;
  int layers = 0;  // 0: the single-layer model
  std::vector<std::string> precs = {"q8", "q4"};
  bool prec_given = false;
  std::vector<std::string> fuse;
  std::string names;
  bool strict = false;
  bool json = false;
  artifact::OpenOptions open;  // for reading back what was written
};

int pack_synthetic(const PackOptions& o) {
  auto out = open_output("-o", o.out, {});
  if (!out.ok()) return fail_output("pack", out.status());
  synthetic::Options so;
  so.seed = o.seed;
  so.include_lm_head = !o.small;
  so.layers = o.layers;
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

// A bar redrawn in place on a terminal; one line per entry when stderr is a file or a pipe.
void show_progress(const import::ImportProgress& p, bool tty) {
  if (!tty) {
    if (p.entry < p.entries) {
      std::fprintf(stderr, "  [%zu/%zu] %s\n", p.entry + 1, p.entries, p.name.c_str());
    }
    return;
  }
  const int width = 30;
  const double frac = p.bytes_total ? static_cast<double>(p.bytes_done) / p.bytes_total : 1.0;
  const int filled = static_cast<int>(frac * width);
  std::fprintf(stderr, "\r  [%s%s] %3d%% %zu/%zu %-28.28s", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), static_cast<int>(frac * 100),
               std::min(p.entry + 1, p.entries), p.entries, p.name.c_str());
  if (p.entry >= p.entries) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

void print_summary(const import::ImportSummary& s, const std::string& out, bool json) {
  if (json) {
    nlohmann::json j;
    j["output"] = out;
    j["entries"] = s.entries;
    j["bytes_in"] = s.bytes_in;
    j["bytes_out"] = s.bytes_out;
    j["seconds"] = s.seconds;
    j["tensors"] = nlohmann::json::array();
    for (const import::ImportedTensor& t : s.tensors) {
      j["tensors"].push_back({{"tensor", t.tensor}, {"entry", t.entry}, {"type", t.type},
                              {"how", import::how_name(t.how)}, {"n", t.n}, {"k", t.k},
                              {"bytes_in", t.bytes_in}, {"max_abs_error", t.max_abs},
                              {"rms_error", t.rms}, {"rms_error_relative", t.rms_relative()}});
    }
    j["skipped"] = nlohmann::json::array();
    for (const import::SkipNote& k : s.skipped) {
      j["skipped"].push_back({{"tensor", k.tensor}, {"bytes", k.bytes}, {"why", k.why}});
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  // A tensor that is also part of a fused entry is listed twice in s.tensors; counted once here.
  size_t counts[3] = {};
  std::set<std::string> seen;
  for (const import::ImportedTensor& t : s.tensors) {
    if (!seen.insert(t.tensor).second) continue;
    ++counts[static_cast<int>(t.how)];
  }
  std::printf("wrote %s: %zu entries from %zu tensors (%zu re-tiled losslessly, %zu quantised, "
              "%zu converted), %s in, %s out, in %s\n", out.c_str(), s.entries, seen.size(),
              counts[0], counts[1], counts[2], format_bytes(s.bytes_in).c_str(),
              format_bytes(s.bytes_out).c_str(), format_time_us(s.seconds * 1e6).c_str());
  for (const import::ImportedTensor& t : s.tensors) {
    if (t.how == import::ImportedTensor::How::retiled) continue;
    std::printf("  %-10s %s (%s) -> %s: max |error| %.3g, RMS error %.3g = %.3g%% of the "
                "tensor's RMS\n", import::how_name(t.how), t.tensor.c_str(), t.type.c_str(),
                t.entry.c_str(), t.max_abs, t.rms, 100 * t.rms_relative());
  }
  for (const import::SkipNote& k : s.skipped) {
    std::printf("  skipped    %s (%s): %s\n", k.tensor.c_str(), format_bytes(k.bytes).c_str(),
                k.why.c_str());
  }
}

int pack_model(const PackOptions& o) {
  if (o.prec_given && o.precs.size() != 1) {
    return usage_error("pack", Error(TB_INVALID_ARGUMENT, "--prec: an import makes one precision "
                                     "(q8 or q4), %zu given", o.precs.size()));
  }
  import::ImportOptions io;
  if (o.prec_given) {
    auto row = find_precision(o.precs[0]);
    if (!row.ok()) return usage_error("pack", row.status());
    io.prec = row.value()->prec;
  }
  io.strict = o.strict;
  io.source_path = o.model;
  io.decode = import::to_float_rows;
  auto kind = import::model_kind(o.model);
  if (!kind.ok()) return usage_error("pack", kind.status());
  if (!o.names.empty() && ::access(o.names.c_str(), R_OK) != 0) {
    return usage_error("pack", Error(TB_INVALID_ARGUMENT, "--names %s: cannot read the name map",
                                     o.names.c_str()));
  }
  std::vector<std::string> inputs = {o.model};
  if (!o.names.empty()) inputs.push_back(o.names);
  auto out = open_output("-o", o.out, inputs);  // checked before the work
  if (!out.ok()) return fail_output("pack", out.status());
  // Every planned projection is written; with --fuse, the fused entries as well (open_model.h).
  import::OpenModelOptions mo;
  for (const std::string& f : o.fuse) (f == "qkv" ? mo.fuse_qkv : mo.fuse_gate_up) = true;
  mo.name_map = o.names;
  auto model = import::open_model(o.model, *kind, mo);
  if (!model.ok()) return fail("pack", model.status());
  for (const std::string& note : model->notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  io.progress = [tty](const import::ImportProgress& p) { show_progress(p, tty); };
  auto summary = import::import_model(*model->file, model->jobs, model->skipped, out.value(), io);
  if (!summary.ok()) {
    if (tty) std::fprintf(stderr, "\n");
    return fail("pack", summary.status());
  }
  print_summary(*summary, o.out, o.json);
  return kExitOk;
}

int run_pack(const PackOptions& o) {
  if (o.synthetic == !o.model.empty()) {
    return usage_error("pack", Error(TB_INVALID_ARGUMENT, o.synthetic
        ? "give a MODEL or --synthetic, not both"
        : "nothing to pack: give a MODEL (a .gguf file, a .safetensors file or a folder of "
          "shards) or --synthetic"));
  }
  if (o.synthetic) {
    if (!o.fuse.empty() || !o.names.empty() || o.strict || o.json) {
      return usage_error("pack", Error(TB_INVALID_ARGUMENT, "--fuse, --names, --strict and "
                                       "--json apply to importing a MODEL, not to --synthetic"));
    }
    return pack_synthetic(o);
  }
  return pack_model(o);
}

}  // namespace

Command add_pack(CLI::App& root) {
  auto opt = std::make_shared<PackOptions>();
  CLI::App* app = root.add_subcommand("pack", "Write a strip-cache artifact from a model file or "
                                              "the synthetic model (atomically: a failure or an "
                                              "interrupt never leaves a file that looks valid).");
  app->footer(
      "Examples:\n"
      "  twinbit pack model-q8_0.gguf -o model.tbsc          Q8_0 re-tiled losslessly\n"
      "  twinbit pack model-f16.gguf -o m.tbsc --prec q4     F16 quantised to q4\n"
      "  twinbit pack hf-model/ -o m.tbsc --fuse qkv,gate_up  safetensors shards, fused entries\n"
      "  twinbit pack m.gguf -o m.tbsc --strict              refuse anything not lossless\n"
      "  twinbit pack --synthetic --small -o demo.tbsc       the synthetic model, without lm_head\n"
      "A summary follows: tensors re-tiled, quantised or converted (with their error), tensors\n"
      "skipped (and why), bytes in and out, time. Exit status: 0 ok, 1 failed, 2 usage error.");
  app->add_option("MODEL", opt->model, "A .gguf file, a .safetensors file, or a folder of "
                                        "safetensors shards with model.safetensors.index.json");
  app->add_flag("--synthetic", opt->synthetic, "Pack the synthetic Qwen3-VL-2B projection set");
  app->add_option("-o,--output", opt->out, "Artifact file to write ('-' for stdout; a FIFO or device is streamed to)")->required();
  app->add_option("--seed", opt->seed, "Seed of the synthetic weights")->capture_default_str();
  app->add_flag("--small", opt->small, "Leave out lm_head (synthetic)");
  app->add_option("--layers", opt->layers, "Synthetic: a layered model of N blocks: blk.L.attn_qkv, blk.L.attn_o, "
                                           "blk.L.ffn_gate_up, blk.L.ffn_down per layer L, then lm_head "
                                           "(docs/FORMAT.md); without it the single-layer model")
      ->check(CLI::Range(1, synthetic::kMaxLayers));
  add_read_option(app, opt->open);
  app->add_option("--prec", opt->precs, "Precision to make (a MODEL: one of q8, q4, default q8; "
                                        "--synthetic: a list)")
      ->delimiter(',')->check(CLI::IsMember(precision_name_list()))->capture_default_str()
      ->each([opt](const std::string&) { opt->prec_given = true; });
  app->add_option("--fuse", opt->fuse, "Also make fused entries: qkv, gate_up")
      ->delimiter(',')->check(CLI::IsMember({"qkv", "gate_up"}));
  app->add_option("--names", opt->names, "A name-map file (SOURCE_NAME_OR_GLOB=ENTRY per line)");
  app->add_flag("--strict", opt->strict, "Refuse any tensor that would not be re-tiled losslessly");
  app->add_flag("--json", opt->json, "Print the summary as JSON on stdout");
  return Command{app, [opt] { return run_pack(*opt); }};
}

}  // namespace twinbit::cli
