// `twinbit run-model`: the placement-invariance proof. One decode step (M = 1) and one prefill
// step (M = 32) through every projection of the model (core/runtime/model_step.h) under each
// placement (cli/run_model_placements.h), timed with the steps interleaved across placements, and
// one output hash per placement: equal hashes, or exit 1 naming the placements that differ.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "cli/run_model_placements.h"
#include "core/precision.h"
#include "core/runtime/calibrate.h"
#include "core/runtime/model_step.h"
#include "core/runtime/profile.h"

namespace twinbit::cli {
namespace {

using ll = long long;

struct RunModelOptions {
  std::string path, ms = "1,32", prec = "q8", modes = "f32,i8", profile;
  std::vector<std::string> backends;
  int steps = 9;
  bool json = false;
  artifact::OpenOptions open;
};

// One placement at one (mode, M): the time of every measured step and the hash they all gave.
struct Cell {
  std::vector<double> us;
  uint64_t hash = 0;
  int64_t fallbacks = 0;       // during the measured steps
  std::string inconsistent;    // a step whose hash differed from the warm-up's
};

struct Row {  // what the table and the JSON print
  std::string placement, mode;
  int64_t m = 0;
  double median = 0, p10 = 0, p90 = 0;
  int64_t fallbacks = 0;
  uint64_t hash = 0;
  std::string floor;  // a floor's row: the backend it read on ("" for a placement's row)
};

int64_t fallbacks_of(const runtime::Runtime& rt) {
  int64_t sum = 0;
  for (const runtime::EntryReport& r : rt.report()) sum += r.fallbacks;
  return sum;
}

const char* const kModeNames[] = {"f32", "i8"};  // by tb_act_mode

std::string hex(uint64_t h) { return Format("%016llx", static_cast<unsigned long long>(h)); }

Result<std::vector<tb_act_mode>> parse_modes(const std::string& text) {
  std::vector<tb_act_mode> modes;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string m = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (m == "f32") {
      modes.push_back(TB_ACT_F32);
    } else if (m == "i8") {
      modes.push_back(TB_ACT_I8);
    } else {
      return Error(TB_INVALID_ARGUMENT, "--mode: '%s' is not a mode (expected f32 or i8, comma separated)", m.c_str());
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return modes;
}

// The table (or JSON) of every measured row, the skipped placements, the fallbacks each
// placement's runtime reports, and the verdict. Returns the exit status.
int print_results(const RunModelOptions& o, const std::vector<ModelPlacement>& placements,
                  const runtime::ModelStep& step, const std::vector<std::unique_ptr<runtime::Runtime>>& rts,
                  const std::vector<Row>& rows, const std::vector<std::string>& differ,
                  const std::vector<std::string>& floor_notes) {
  // The floors and the peer (the fastest single-backend placement) of each (mode, M). A
  // single-backend placement is compared with its backend's floor when that was measured, every
  // other one with the lowest floor.
  std::map<std::pair<std::string, int64_t>, std::map<std::string, double>> floors_of;
  std::map<std::pair<std::string, int64_t>, double> lowest_floor, peer_of;
  std::map<std::string, const ModelPlacement*> by_name;
  for (const ModelPlacement& p : placements) by_name[p.name] = &p;
  for (const Row& r : rows) {
    const auto key = std::make_pair(r.mode, r.m);
    if (!r.floor.empty()) {
      floors_of[key][r.floor] = r.median;
      if (!lowest_floor.count(key) || r.median < lowest_floor[key]) lowest_floor[key] = r.median;
    } else if (by_name[r.placement]->single_backend && (!peer_of.count(key) || r.median < peer_of[key])) {
      peer_of[key] = r.median;
    }
  }
  auto floor_for = [&](const Row& r) {
    const auto key = std::make_pair(r.mode, r.m);
    const std::string& own = r.floor.empty() ? by_name[r.placement]->floor_backend : r.floor;
    const auto at = floors_of[key].find(own);
    return at != floors_of[key].end() ? at->second : lowest_floor[key];
  };
  nlohmann::json j;
  j["artifact"] = o.path;
  j["prec"] = o.prec;
  j["layers"] = step.layers;
  j["projections"] = step.projections.size();
  j["weight_bytes"] = step.weight_bytes();
  j["steps"] = o.steps;
  j["placements"] = nlohmann::json::array();
  for (size_t i = 0; i < placements.size(); ++i) {
    const ModelPlacement& p = placements[i];
    nlohmann::json e = {{"name", p.name}, {"how", p.how}, {"backends", p.options.backends}};
    if (!p.skipped.empty()) e["skipped"] = p.skipped;
    if (rts[i]) {
      e["fallbacks"] = nlohmann::json::array();
      for (const runtime::EntryReport& r : rts[i]->report()) {
        if (r.fallbacks > 0) e["fallbacks"].push_back({{"entry", r.entry}, {"placement", r.placement}, {"calls", r.calls}, {"fallbacks", r.fallbacks}});
      }
    }
    j["placements"].push_back(e);
  }
  j["rows"] = nlohmann::json::array();
  if (!o.json) {
    std::printf("%-30s %-4s %5s %10s %21s %10s %7s %7s %9s  %s\n", "placement", "mode", "M", "median", "p10 - p90",
                "tokens/s", "x floor", "x peer", "fallbacks", "hash");
  }
  for (const Row& r : rows) {
    const auto key = std::make_pair(r.mode, r.m);
    const double tokens = r.median > 0 ? static_cast<double>(r.m) * 1e6 / r.median : 0;
    const double x_floor = floor_for(r) > 0 ? r.median / floor_for(r) : 0;
    const double x_peer = r.floor.empty() && peer_of[key] > 0 ? r.median / peer_of[key] : 0;
    nlohmann::json e = {{"placement", r.placement}, {"mode", r.mode}, {"m", r.m}, {"median_us", r.median},
                        {"p10_us", r.p10}, {"p90_us", r.p90}, {"ratio_floor", x_floor}};
    if (r.floor.empty()) {
      e["tokens_per_s"] = tokens;
      e["ratio_peer"] = x_peer;
      e["fallbacks_per_step"] = r.fallbacks;
      e["hash"] = hex(r.hash);
    }
    j["rows"].push_back(e);
    if (o.json) continue;
    const std::string spread = format_time_us(r.p10) + " - " + format_time_us(r.p90);
    if (!r.floor.empty()) {
      std::printf("%-30s %-4s %5lld %10s %21s %10s %7.2f\n", r.placement.c_str(), r.mode.c_str(), (ll)r.m,
                  format_time_us(r.median).c_str(), spread.c_str(), "", x_floor);
    } else {
      std::printf("%-30s %-4s %5lld %10s %21s %10.1f %7.2f %7.2f %9lld  %s\n", r.placement.c_str(), r.mode.c_str(),
                  (ll)r.m, format_time_us(r.median).c_str(), spread.c_str(), tokens, x_floor, x_peer,
                  (ll)r.fallbacks, hex(r.hash).c_str());
    }
  }
  j["differ"] = differ;
  j["no_floor"] = floor_notes;
  j["hashes_equal"] = differ.empty();
  if (o.json) {
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("floor: every weight byte of the step read once by the backend's read_floor (a placement on one backend\n"
                "is compared with its backend's floor, others with the lowest); peer: the fastest single-backend placement\n");
    for (const std::string& n : floor_notes) std::printf("no floor: %s\n", n.c_str());
    for (size_t i = 0; i < placements.size(); ++i) {
      const ModelPlacement& p = placements[i];
      if (!p.skipped.empty()) std::printf("skipped %-22s %s\n", ("'" + p.name + "':").c_str(), p.skipped.c_str());
      if (!rts[i]) continue;
      int64_t entries = 0, total = 0;
      std::string example;
      for (const runtime::EntryReport& r : rts[i]->report()) {
        if (r.fallbacks == 0) continue;
        ++entries;
        total += r.fallbacks;
        if (example.empty()) example = Format("e.g. %s ran on %s", r.entry.c_str(), r.placement.c_str());
      }
      if (entries > 0) {
        std::printf("fallbacks of '%s': %lld in all, on %lld entries (%s)\n", p.name.c_str(), (ll)total, (ll)entries, example.c_str());
      }
    }
    if (differ.empty()) std::printf("every placement gave the same hash at each mode and M\n");
  }
  for (const std::string& d : differ) std::fprintf(stderr, "twinbit run-model: %s\n", d.c_str());
  return differ.empty() ? kExitOk : kExitFailed;
}

// What one run of the command measures with: the placements that run, on their runtimes.
struct Session {
  const RunModelOptions& o;
  const std::vector<ModelPlacement>& placements;
  const runtime::ModelStep& step;
  const artifact::Artifact& art;
  const std::vector<std::unique_ptr<runtime::Runtime>>& rts;  // per placement; null when skipped
  const std::vector<size_t>& running;                          // placements with a runtime
  const std::vector<StepFloor>& floors;                        // read after each step
  bool tty;  // stderr is a terminal: a progress line rewritten in place, else one line per M
};

// A warm-up step of every running placement (binds, first touches; its hash is the placement's),
// then o.steps steps interleaved - step s of every placement, then each floor's read, before
// step s + 1 - at one mode and M. A step that fails is the error, naming the placement.
Status measure(const Session& x, tb_act_mode mode, int64_t m, std::map<size_t, Cell>& cells,
               std::vector<std::vector<double>>& floor_us) {
  floor_us.assign(x.floors.size(), {});
  runtime::StepBuffers buffers(x.step, m);
  for (int s = -1; s < x.o.steps; ++s) {
    if (x.tty) std::fprintf(stderr, "\r  %s M=%lld: step %d of %d ", kModeNames[mode], (ll)m, s + 1, x.o.steps);
    for (size_t i : x.running) {
      runtime::Runtime& rt = *x.rts[i];
      const int64_t fallbacks_before = fallbacks_of(rt);
      buffers.poison();
      const double t0 = now_us();
      Status st = buffers.run(rt, mode);
      const double t1 = now_us();
      if (!st.ok()) {
        if (x.tty) std::fprintf(stderr, "\n");
        return Status(st.code(), Format("placement '%s', %s, M = %lld: ", x.placements[i].name.c_str(),
                                        kModeNames[mode], (ll)m) + st.message());
      }
      Cell& c = cells[i];
      const uint64_t h = buffers.hash();
      if (s < 0) {
        c.hash = h;
        continue;
      }
      c.us.push_back(t1 - t0);
      c.fallbacks += fallbacks_of(rt) - fallbacks_before;
      if (h != c.hash && c.inconsistent.empty()) {
        c.inconsistent = Format("step %d hashed %s, the warm-up %s", s + 1, hex(h).c_str(), hex(c.hash).c_str());
      }
    }
    for (size_t f = 0; f < x.floors.size(); ++f) {
      const double t0 = now_us();
      if (Status st = x.floors[f].read(m); !st.ok()) return st;
      if (s >= 0) floor_us[f].push_back(now_us() - t0);
    }
  }
  if (x.tty) {
    std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "  %s M=%lld: a warm-up and %d steps done\n", kModeNames[mode], (ll)m, x.o.steps);
  }
  return Status();
}

// Appends each placement's row at (mode, M), and a line to `differ` for a placement whose steps
// did not repeat its warm-up's hash and for hashes that are not all equal (naming the placements
// not equal to the first, the all-CPU placement).
void compare(const Session& x, tb_act_mode mode, int64_t m, const std::map<size_t, Cell>& cells,
             std::vector<Row>& rows, std::vector<std::string>& differ) {
  const uint64_t first = cells.at(x.running[0]).hash;
  std::string hashes, odd;
  for (size_t i : x.running) {
    const Cell& c = cells.at(i);
    const std::string& name = x.placements[i].name;
    rows.push_back({name, kModeNames[mode], m, quantile(c.us, 0.5), quantile(c.us, 0.1), quantile(c.us, 0.9),
                    c.fallbacks / x.o.steps, c.hash, ""});
    if (!c.inconsistent.empty()) {
      differ.push_back(Format("%s M=%lld: placement '%s' is not repeatable: %s", kModeNames[mode], (ll)m,
                              name.c_str(), c.inconsistent.c_str()));
    }
    hashes += Format("%s'%s' %s", hashes.empty() ? "" : ", ", name.c_str(), hex(c.hash).c_str());
    if (c.hash != first) odd += (odd.empty() ? "'" : ", '") + name + "'";
  }
  if (!odd.empty()) {
    differ.push_back(Format("%s M=%lld: the hashes differ (%s); not equal to '%s': %s", kModeNames[mode], (ll)m,
                            hashes.c_str(), x.placements[x.running[0]].name.c_str(), odd.c_str()));
  }
}

// The profile of the calibrated placement: --profile's file, or else this machine measured now
// over the placement's backends by calibrate's quick sweep (a second or two: rough costs, enough
// to place by; `twinbit calibrate` measures the full sweep for a timing worth recording).
Result<runtime::Profile> calibrated_profile(const RunModelOptions& o, ModelPlacement& p) {
  if (!o.profile.empty()) {
    p.how += " (profile " + o.profile + ")";
    return runtime::read_profile(o.profile);
  }
  p.how += " (quick calibration in this process)";
  std::fprintf(stderr, "run-model: no --profile: a quick calibration of %zu backends here for the calibrated placement\n",
               p.options.backends.size());
  runtime::CalibrateOptions co;
  co.quick = true;
  const bool tty = isatty(fileno(stderr)) != 0;
  if (tty) co.progress = [](const std::string& line) { std::fprintf(stderr, "\r  %s   ", line.c_str()); };
  auto profile = runtime::calibrate(p.options.backends, co);
  if (tty) std::fprintf(stderr, "\n");
  return profile;
}

int run_model(const RunModelOptions& o) {
  auto ms = parse_rows_list(o.ms);
  if (!ms.ok()) return usage_error("run-model", ms.status());
  auto modes = parse_modes(o.modes);
  if (!modes.ok()) return usage_error("run-model", modes.status());
  auto prec_row = find_precision(o.prec);
  if (!prec_row.ok()) return usage_error("run-model", prec_row.status());
  int exit_code = kExitOk;
  auto placements = model_placements(o.backends, o.open, &exit_code);
  if (!placements.ok()) return exit_code;

  auto art = artifact::Artifact::open(o.path, o.open);
  if (!art.ok()) return fail("run-model", art.status());
  auto step = runtime::model_step(*art.value(), (*prec_row)->prec);
  if (!step.ok()) return fail("run-model", step.status());
  for (const runtime::StepProjection& p : step->projections) {
    if (Status s = art.value()->verify(*art.value()->find(p.entry)); !s.ok()) return fail("run-model", s);
  }

  for (ModelPlacement& p : placements.value()) {
    if (!p.calibrated || !p.skipped.empty()) continue;
    auto profile = calibrated_profile(o, p);
    if (profile.ok()) {
      p.options.profile = std::move(profile.value());
    } else if (o.profile.empty()) {
      // A backend that cannot be measured (one that declines at the call, say) leaves no plan
      // to run; the file the user named is another matter: its error fails the command.
      p.skipped = "the quick calibration failed: " + profile.status().message();
    } else {
      return fail("run-model", profile.status());
    }
  }

  std::vector<std::unique_ptr<runtime::Runtime>> rts(placements->size());
  std::vector<size_t> running;
  for (size_t i = 0; i < placements->size(); ++i) {
    ModelPlacement& p = placements.value()[i];
    if (!p.skipped.empty()) continue;
    auto rt = runtime::Runtime::open(o.path, p.options);
    if (!rt.ok()) return fail("run-model", Status(rt.status().code(), "placement '" + p.name + "': " + rt.status().message()));
    rts[i] = std::move(rt.value());
    running.push_back(i);
  }
  std::fprintf(stderr, "run-model %s: %zu projections (%d layers%s), %s of %s weights per step; %zu of %zu placements run here\n",
               o.path.c_str(), step->projections.size(), step->layers,
               step->projections.back().entry.rfind("lm_head", 0) == 0 ? " + lm_head" : "",
               format_bytes(step->weight_bytes()).c_str(), o.prec.c_str(), running.size(), placements->size());
  if (running.empty()) {
    std::fprintf(stderr, "twinbit run-model: SKIPPED: no placement can run here\n");
    return kExitCannotRun;
  }

  // A floor for every backend a running placement has to itself, when it has a read_floor entry.
  std::vector<StepFloor> floors;
  std::vector<std::string> floor_notes;
  for (size_t i : running) {
    const std::string& label = (*placements)[i].floor_backend;
    if (label.empty() || std::any_of(floors.begin(), floors.end(), [&](const StepFloor& f) { return f.label() == label; })) continue;
    auto f = StepFloor::make(label, *art.value(), step.value());
    if (f.ok()) {
      floors.push_back(std::move(f.value()));
    } else if (f.status().code() == TB_UNIMPLEMENTED) {
      floor_notes.push_back(f.status().message());
    } else {
      return fail("run-model", f.status());
    }
  }
  const Session session{o, placements.value(), step.value(), *art.value(), rts, running, floors,
                        isatty(fileno(stderr)) != 0};
  std::vector<Row> rows;
  std::vector<std::string> differ;  // one line per (mode, M) whose hashes are not all equal
  for (tb_act_mode mode : modes.value()) {
    for (int64_t m : ms.value()) {
      if (Status s = check_host_memory(runtime::StepBuffers::bytes(step.value(), m), Format("the step's inputs and outputs at M = %lld", (ll)m)); !s.ok()) {
        return fail("run-model", s);
      }
      std::map<size_t, Cell> cells;
      std::vector<std::vector<double>> floor_us;
      if (Status s = measure(session, mode, m, cells, floor_us); !s.ok()) return fail("run-model", s);
      for (size_t f = 0; f < floors.size(); ++f) {
        const std::vector<double>& t = floor_us[f];
        rows.push_back({"floor: read on " + floors[f].label(), kModeNames[mode], m, quantile(t, 0.5),
                        quantile(t, 0.1), quantile(t, 0.9), 0, 0, floors[f].label()});
      }
      compare(session, mode, m, cells, rows, differ);
    }
  }
  return print_results(o, placements.value(), step.value(), rts, rows, differ, floor_notes);
}

}  // namespace

Command add_run_model(CLI::App& root) {
  auto opt = std::make_shared<RunModelOptions>();
  CLI::App* app = root.add_subcommand(
      "run-model", "The placement-invariance proof: one decode step (M = 1) and one prefill step (M = 32)\n"
                   "through every projection of the model (per layer the fused qkv, o, the fused gate_up\n"
                   "and down, then lm_head), under each placement: all on the CPU, all on each other\n"
                   "backend, the threshold plan, the calibrated plan, column splits (CPU + GPU, two GPUs;\n"
                   "without a GPU two CPU backends of different instruction sets). Steps are interleaved\n"
                   "across placements after a warm-up; prints the median and p10-p90 time per step,\n"
                   "tokens/s, the ratios to the floor (the backend's pure read of the step's weights) and\n"
                   "to the fastest single-backend placement, the fallbacks, and one hash of every output\n"
                   "per placement.\n"
                   "A placement that cannot run here is listed as skipped. Exit 1 when hashes differ\n"
                   "(naming the placements), 77 when nothing could run. docs/RUNTIME.md has the details.");
  app->footer(std::string(kBackendOptionHelp) + "\n"
              "Examples: twinbit pack --synthetic --layers 28 --prec q8 -o model28.tbsc\n"
              "          twinbit run-model model28.tbsc\n"
              "          twinbit run-model model28.tbsc --m 1 --mode i8 --backend cpu --backend cuda --steps 15\n"
              "          twinbit calibrate --backend cpu --backend cuda -o prof.json && twinbit run-model model28.tbsc --profile prof.json\n"
              "          twinbit run-model model.tbsc --prec q4 --backend cpu --backend ./libmybackend.so --json");
  app->add_option("artifact", opt->path, "Artifact file (twinbit pack --synthetic [--layers N])")->required();
  app->add_option("--m", opt->ms, "Rows per step, comma separated (1: decode, 32: prefill of 32 tokens)")
      ->check(rows_list_check())->capture_default_str();
  app->add_option("--prec", opt->prec, "Precision of the step's entries")->check(CLI::IsMember({"q8", "q4"}))->capture_default_str();
  app->add_option("--mode", opt->modes, "Activation modes, comma separated (f32, i8)")->capture_default_str();
  app->add_option("--backend", opt->backends, backend_option_help("A backend, repeatable, in order of preference (default: "
                                                                  "cpu, and cuda when it has a device here)"))
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--profile", opt->profile, "A profile of twinbit calibrate for the calibrated placement (default: "
                                            "a quick calibration of the backends here first)");
  app->add_option("--steps", opt->steps, "Measured steps per placement and M (after one warm-up)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app->add_flag("--json", opt->json, "Print one JSON object");
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_model(*opt); }};
}

}  // namespace twinbit::cli
