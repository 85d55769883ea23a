// `twinbit check`: every entry of an artifact on two backends (built in or plugins), compared
// bit for bit - the porting check when moving a model from one backend to another. What runs for
// each kind of entry: conformance/porting_check.h. One line per comparison: differing/total, the
// first differing index and the max ulp distance.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "conformance/porting_check.h"
#include "core/runtime/overrides.h"

namespace twinbit::cli {
namespace {

struct CheckOptions {
  std::string path, a, b, ms = "1,32", modes = "f32,i8", entry = "*";
  uint64_t seed = 42;
  artifact::OpenOptions open;
};

int run_check(const CheckOptions& o) {
  auto ms = parse_rows_list(o.ms);  // checked by rows_list_check() already
  if (!ms.ok()) return usage_error("check", ms.status());
  std::vector<tb_act_mode> modes;
  {
    std::stringstream in(o.modes);
    std::string item;
    while (std::getline(in, item, ',')) {
      if (item == "f32") {
        modes.push_back(TB_ACT_F32);
      } else if (item == "i8") {
        modes.push_back(TB_ACT_I8);
      } else {
        return usage_error("check", Error(TB_INVALID_ARGUMENT, "--mode: '%s' is not a mode (expected f32 or i8)", item.c_str()));
      }
    }
  }
  auto opened = artifact::Artifact::open(o.path, o.open);
  if (!opened.ok()) return fail("check", opened.status());
  const artifact::Artifact& art = *opened.value();
  int exit_code = kExitOk;
  auto ba = open_backend_option("check", o.a, &exit_code);
  if (!ba.ok()) return exit_code;
  auto bb = open_backend_option("check", o.b, &exit_code);
  if (!bb.ok()) return exit_code;

  // The gated-delta set runs as one step: a glob naming any of its entries selects all of them.
  auto matches = [&](const std::string& name) { return runtime::entry_matches(o.entry, name); };
  bool gdn_selected = false;
  for (const std::string& n : conformance::gdn_entry_names()) gdn_selected = gdn_selected || matches(n);
  std::vector<conformance::CheckEntry> entries;
  for (const artifact::Entry& e : art.entries()) {
    const auto& gdn = conformance::gdn_entry_names();
    const bool in_gdn = std::find(gdn.begin(), gdn.end(), e.name) != gdn.end();
    if (!(in_gdn ? gdn_selected : matches(e.name))) continue;
    auto w = art.weights(e);
    if (!w.ok()) return fail("check", w.status());
    entries.push_back({e.name, w->view, w->keep_alive});
  }
  if (entries.empty()) {
    return fail("check", Error(TB_INVALID_ARGUMENT, "no entry of %s matches '%s': nothing was compared",
                               o.path.c_str(), o.entry.c_str()));
  }
  std::printf("twinbit check %s: %s vs %s, seed %llu\n", o.path.c_str(), o.a.c_str(), o.b.c_str(),
              static_cast<unsigned long long>(o.seed));

  conformance::PortingCheckOptions co;
  co.ms = ms.value();
  co.modes = modes;
  co.label_a = o.a;
  co.label_b = o.b;
  co.activations = [&](const std::string& key, int64_t m, int64_t k) {
    return make_activations(o.seed, key, m, k);
  };
  const conformance::CheckTotals t = conformance::check_entries(
      ba.value(), bb.value(), entries, co, [](const conformance::CheckLine& l) {
        std::printf("%-28s %-38s %s\n", l.entry.c_str(), l.what.c_str(),
                    conformance::check_result_text(l).c_str());
        std::fflush(stdout);
      });
  std::printf("%lld comparisons: %lld equal, %lld differ, %lld unsupported, %lld error\n",
              (long long)t.lines, (long long)t.equal, (long long)t.differ, (long long)t.unsupported,
              (long long)t.error);
  if (t.lines == t.unsupported) {
    return fail("check", Error(TB_UNIMPLEMENTED, "no entry ran on both backends: nothing was compared"));
  }
  return t.differ == 0 && t.error == 0 ? 0 : 1;
}

}  // namespace

Command add_check(CLI::App& root) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* app = root.add_subcommand(
      "check", "Run every entry of an artifact on two backends and compare the outputs bit for bit:\n"
               "  strip entries   gemm at each --m and --mode\n"
               "  float matrices  gemv_f32 each, gemv_f32_pair for consecutive same-shape ones\n"
               "  gdn.* entries   one gated-delta step (state and o)\n"
               "One line per comparison with differing/total, the first differing index and the max\n"
               "ulp distance. Exit 1 if anything differs or fails.");
  app->footer(std::string(kBackendOptionHelp) + "\n"
              "Examples: twinbit check model.tbsc --backend cpu --against cuda\n"
              "          twinbit check model.tbsc --backend cpu --against ./libmine.so --entry 'attn_*'");
  app->add_option("artifact", opt->path, "Artifact file (twinbit pack / the demo's cache)")->required();
  app->add_option("--backend", opt->a, backend_option_help("First backend"))->required();
  app->add_option("--against", opt->b, backend_option_help("Second backend"))->required();
  app->add_option("--m", opt->ms, "Batch sizes, comma separated")->check(rows_list_check())->capture_default_str();
  app->add_option("--mode", opt->modes, "Activation modes, comma separated (f32, i8)")->capture_default_str();
  app->add_option("--entry", opt->entry, "Only entries matching this glob")->capture_default_str();
  app->add_option("--seed", opt->seed, "Seed of the activations (as `twinbit run`)")->capture_default_str();
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_check(*opt); }};
}

}  // namespace twinbit::cli
