// `twinbit check`: every projection of an artifact on two backends, compared bit for bit - the
// porting check when moving a model from one backend to another. One line per projection, M and
// mode: differing/total, the first differing index and the max ulp distance.
#include <fnmatch.h>

#include <cstdio>
#include <sstream>

#include "cli/cli_common.h"
#include "conformance/conformance.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {

struct CheckOptions {
  std::string path, a, b, ms = "1,32", modes = "f32,i8", entry = "*";
  uint64_t seed = 42;
  artifact::OpenOptions open;
};

// Runs one gemm on `b`; y [m][n].
Status run_gemm(const Backend& b, const BoundWeights& w, tb_act_mode mode, int64_t m,
                const std::vector<float>& x, const std::vector<int8_t>& xq,
                const std::vector<float>& xd, std::vector<float>& y) {
  const tb_strips& s = w.view().strips;
  y.assign(static_cast<size_t>(m * s.n), 0.0f);
  tb_gemm_args a{};
  a.mode = mode;
  a.m = m;
  a.x = x.data();
  a.ldx = s.k;
  a.xq = xq.data();
  a.ldxq = s.kp;
  a.xd = xd.data();
  a.ldxd = s.kp / 32;
  a.y = y.data();
  a.ldy = s.n;
  return b.gemm(w, a);
}

std::string mismatch_line(const conformance::Mismatch& mm) {
  if (mm.differing == 0) return Format("0/%lld differ", (long long)mm.total);
  return Format("%lld/%lld differ, first (m %lld, n %lld), max %llu ulp", (long long)mm.differing,
                (long long)mm.total, (long long)mm.first_m, (long long)mm.first_n,
                static_cast<unsigned long long>(mm.max_ulp));
}

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
  auto ba = create_backend(o.a);
  if (!ba.ok()) return fail_backend("check", ba.status());
  auto bb = create_backend(o.b);
  if (!bb.ok()) return fail_backend("check", bb.status());
  std::printf("twinbit check %s: %s vs %s, seed %llu\n", o.path.c_str(), o.a.c_str(), o.b.c_str(),
              static_cast<unsigned long long>(o.seed));

  int64_t lines = 0, differ = 0, errors = 0, unsupported = 0, matrices = 0;
  for (const artifact::Entry& e : art.entries()) {
    if (fnmatch(o.entry.c_str(), e.name.c_str(), 0) != 0) continue;
    if (e.kind != TB_WEIGHTS_STRIPS) {
      ++matrices;  // float matrices hold gemv/gdn inputs, not projections
      continue;
    }
    auto view = art.view_verified(e);
    if (!view.ok()) return fail("check", view.status());
    auto wa = ba->bind(view.value());
    auto wb = bb->bind(view.value());
    auto report = [&](const std::string& what, const Status& sa, const Status& sb,
                      const conformance::Mismatch& mm) {
      ++lines;
      std::string result;
      if (!sa.ok() || !sb.ok()) {
        const Status& bad = sa.ok() ? sb : sa;
        const std::string who = sa.ok() ? o.b : o.a;
        const bool unimpl = bad.code() == TB_UNIMPLEMENTED;
        (unimpl ? unsupported : errors) += 1;
        result = (unimpl ? "unsupported on " : "error on ") + who + ": " + bad.message();
      } else {
        if (mm.differing > 0) ++differ;
        result = mismatch_line(mm);
      }
      std::printf("%-28s %-34s %s\n", e.name.c_str(), what.c_str(), result.c_str());
      std::fflush(stdout);
    };
    if (!wa.ok() || !wb.ok()) {
      report("(bind)", wa.status(), wb.status(), {});
      continue;
    }
    const tb_strips& s = view.value().strips;
    const std::string base = e.name.substr(0, e.name.rfind('.'));
    for (int64_t m : ms.value()) {
      const uint64_t need = gemm_host_bytes(m, s.k, s.n) + static_cast<uint64_t>(m * s.n) * 4;  // + y of B
      if (Status st = check_host_memory(need, Format("the inputs and outputs of M = %lld rows of %s",
                                                     (long long)m, e.name.c_str()));
          !st.ok()) {
        return fail("check", st);
      }
      std::vector<float> x = make_activations(o.seed, base, m, s.k);
      std::vector<int8_t> xq(static_cast<size_t>(m * s.kp));
      std::vector<float> xd(static_cast<size_t>(m * s.kp / 32)), ya, yb;
      for (tb_act_mode mode : modes) {
        if (mode == TB_ACT_I8) ref::quantize_activations(m, s.k, x.data(), s.k, xq.data(), s.kp, xd.data(), s.kp / 32);
        const Status sa = run_gemm(ba.value(), wa.value(), mode, m, x, xq, xd, ya);
        const Status sb = run_gemm(bb.value(), wb.value(), mode, m, x, xq, xd, yb);
        conformance::Mismatch mm;
        if (sa.ok() && sb.ok()) mm = conformance::compare_bits(ya.data(), s.n, yb.data(), s.n, m, s.n, {}, "y");
        report(Format("%s K %lld x N %lld, M %lld, %s", prec_name(s.prec), (long long)s.k,
                      (long long)s.n, (long long)m, act_mode_name(mode)), sa, sb, mm);
      }
    }
  }
  std::printf("%lld comparisons: %lld equal, %lld differ, %lld unsupported, %lld error "
              "(%lld float-matrix entries are not projections: not compared)\n",
              (long long)lines, (long long)(lines - differ - unsupported - errors), (long long)differ,
              (long long)unsupported, (long long)errors, (long long)matrices);
  if (lines == 0) {
    return fail("check", Error(TB_INVALID_ARGUMENT, "no strip entry of %s matches '%s': nothing was compared",
                               o.path.c_str(), o.entry.c_str()));
  }
  if (lines == unsupported) {
    return fail("check", Error(TB_UNIMPLEMENTED, "no projection ran on both backends: nothing was compared"));
  }
  return differ == 0 && errors == 0 ? 0 : 1;
}

}  // namespace

Command add_check(CLI::App& root) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* app = root.add_subcommand(
      "check", "Run every projection (strip entry) of an artifact on two backends and compare the outputs bit for\n"
               "bit: one line per projection, M and mode with differing/total, the first differing\n"
               "index (m, n) and the max ulp distance. Exit 1 if anything differs or fails.");
  app->add_option("artifact", opt->path, "Artifact file (twinbit pack / the demo's cache)")->required();
  app->add_option("--backend", opt->a, "First backend")->required();
  app->add_option("--against", opt->b, "Second backend")->required();
  app->add_option("--m", opt->ms, "Batch sizes, comma separated")->check(rows_list_check())->capture_default_str();
  app->add_option("--mode", opt->modes, "Activation modes, comma separated (f32, i8)")->capture_default_str();
  app->add_option("--entry", opt->entry, "Only entries matching this glob")->capture_default_str();
  app->add_option("--seed", opt->seed, "Seed of the activations (as `twinbit run`)")->capture_default_str();
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_check(*opt); }};
}

}  // namespace twinbit::cli
