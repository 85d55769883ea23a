// twinbit: the command-line face of the library. Each subcommand lives in its own cmd_*.cpp.
// This file owns the exit-status policy (cli_common.h, ExitCode): CLI11's parse errors become 2,
// a mistyped command or option is named with the nearest real one, and an exception that escapes
// a command becomes one line and exit 1 - never an abort.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/version_text.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {

constexpr const char* kExitPolicy =
    "Exit status, for every command: 0 ok; 1 failed, or the outputs compared differ; 2 usage\n"
    "error (unknown command or option, a missing, malformed or out-of-range value); 77 cannot run\n"
    "here (the built-in backend asked for has no device on this machine).";

// Edit distance with adjacent transpositions counted as one edit ("bnech" is 1 from "bench").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The name in `names` nearest to `typed`, when it is near enough to be a typo; else "".
std::string nearest(const std::string& typed, const std::vector<std::string>& names) {
  const size_t allowed = typed.size() <= 4 ? 1 : 2;
  std::string best;
  size_t best_d = allowed + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(typed, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

// The first word that is not an option: the command. The root takes no option with a value.
int command_index(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') return i;
  }
  return -1;
}

// After a parse error inside `sub`: names each --option it does not have, with the nearest one.
void suggest_options(CLI::App* sub, int from, int argc, char** argv) {
  std::vector<std::string> known;
  for (const CLI::Option* o : sub->get_options()) {
    for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
  }
  for (int i = from; i < argc; ++i) {
    if (std::strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') continue;
    std::string name = argv[i];
    name = name.substr(0, name.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string guess = nearest(name, known);
    std::fprintf(stderr, "twinbit %s: unknown option '%s'%s\n", sub->get_name().c_str(), name.c_str(),
                 guess.empty() ? "" : ("; did you mean '" + guess + "'?").c_str());
  }
}

// Runs the chosen command; whatever escapes it is reported as a failure, never an abort.
int run_guarded(Command& c) {
  const std::string name = c.app->get_name();
  try {
    return c.run();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "twinbit %s: RESOURCE_EXHAUSTED: out of host memory (an allocation "
                 "failed; try a smaller --m or shape, or raise the memory limit)\n", name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "twinbit %s: INTERNAL: %s\n", name.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "twinbit %s: INTERNAL: an unknown exception escaped the command\n",
                 name.c_str());
  }
  return kExitFailed;
}

int cli_main(int argc, char** argv) {
  CLI::App app{
      "twinbit - grouped-quantised projections that give the same bits on every backend.\n"
      "Built-in backends: " + twinbit::builtin_backend_names()};
  app.set_version_flag("--version", [] { return twinbit::cli::version_text(); },
                       "Print the version, commit, build type, CUDA backend and CPU ISA, and exit");
  app.require_subcommand(1);
  app.footer(kExitPolicy);
  std::vector<Command> commands = {add_demo(app), add_pack(app), add_info(app), add_run(app),
                                  add_conformance(app), add_check(app), add_bench(app),
                                  add_gate(app), add_devices(app), add_plan(app), add_calibrate(app),
                                  add_run_model(app)};
  std::vector<std::string> names;
  for (const Command& c : commands) names.push_back(c.app->get_name());

  const int at = command_index(argc, argv);
  if (at > 0 && std::find(names.begin(), names.end(), argv[at]) == names.end()) {
    const std::string guess = nearest(argv[at], names);
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "twinbit: unknown command '%s'%s (commands: %s; twinbit --help)\n", argv[at],
                 guess.empty() ? "" : ("; did you mean '" + guess + "'?").c_str(), all.c_str());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // help and --version are "errors" with code 0
    if (code == kExitOk) return kExitOk;
    if (at > 0) {
      for (Command& c : commands) {
        if (c.app->get_name() == argv[at]) suggest_options(c.app, at + 1, argc, argv);
      }
    }
    return kExitUsage;
  }
  for (Command& c : commands) {
    if (c.app->parsed()) return run_guarded(c);
  }
  return kExitUsage;
}

}  // namespace
}  // namespace twinbit::cli

int main(int argc, char** argv) {
  try {
    return twinbit::cli::cli_main(argc, argv);
  } catch (const std::exception& e) {  // setting up the parser, or printing its messages
    std::fprintf(stderr, "twinbit: INTERNAL: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "twinbit: INTERNAL: an unknown exception\n");
  }
  return twinbit::cli::kExitFailed;
}
