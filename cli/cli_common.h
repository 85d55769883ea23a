// Shared pieces of the `twinbit` command: error reporting, the cache folder, timing, inputs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "artifacts/artifact.h"
#include "core/backend.hpp"
#include "core/status.hpp"

namespace twinbit::cli {

// A subcommand: its parser is set up by `add`, and `run` is called when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_demo(CLI::App& root);
Command add_pack(CLI::App& root);
Command add_info(CLI::App& root);
Command add_run(CLI::App& root);
Command add_conformance(CLI::App& root);
Command add_check(CLI::App& root);
Command add_bench(CLI::App& root);
Command add_gate(CLI::App& root);

// Prints "twinbit <command>: <CODE>: <message>" on stderr; returns the exit status (1).
int fail(const char* command, const Status& status);

// $TWINBIT_CACHE, else $XDG_CACHE_HOME/twinbit, else $HOME/.cache/twinbit (created if missing).
Result<std::string> cache_dir();

// Adds `--read map|copy` (artifact::ReadMode) to a command that opens an artifact; the value
// lands in `out`. One option, one help text, for every such command.
void add_read_option(CLI::App* app, artifact::OpenOptions& out);

// Opens the demo's synthetic artifact for `seed` in `dir`, generating it first when it is
// missing or does not open (with a line on stderr saying why). `with_lm_head` picks the model.
Result<std::unique_ptr<artifact::Artifact>> open_or_make_synthetic(
    const std::string& dir, uint64_t seed, bool with_lm_head,
    const artifact::OpenOptions& open = {});

// Activation inputs of a projection: x [m][k], deterministic from (seed, entry name, m).
std::vector<float> make_activations(uint64_t seed, const std::string& entry, int64_t m, int64_t k);

inline double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

// "12.3 µs", "4.56 ms", "1.23 s"
std::string format_time_us(double us);
// "650.2 MB"
std::string format_bytes(uint64_t bytes);

}  // namespace twinbit::cli
