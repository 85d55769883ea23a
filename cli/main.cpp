// twinbit: the command-line face of the library. Each subcommand lives in its own cmd_*.cpp.
#include <cstdio>

#include "cli/cli_common.h"
#include "core/registry.h"

int main(int argc, char** argv) {
  using namespace twinbit::cli;
  CLI::App app{
      "twinbit - grouped-quantised projections that give the same bits on every backend.\n"
      "Built-in backends: " + twinbit::builtin_backend_names()};
  app.set_version_flag("--version", "twinbit " TWINBIT_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands = {add_demo(app), add_pack(app), add_info(app), add_run(app),
                                  add_conformance(app), add_check(app), add_bench(app),
                                  add_gate(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return 1;
}
