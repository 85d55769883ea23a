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
#include <twinbit/status.hpp>

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
Command add_devices(CLI::App& root);
Command add_plan(CLI::App& root);
Command add_calibrate(CLI::App& root);
Command add_run_model(CLI::App& root);

// The exit status of every command (stated in `twinbit --help` and the README's Commands):
//   0   ok
//   1   failed, or the outputs compared differ (bits, checksums, a conformance case)
//   2   usage error: the command line cannot be understood (an unknown command or option, a
//       malformed or out-of-range value); CLI11's own parse-error codes are mapped to it
//   77  cannot run here: the built-in backend asked for has no device on this machine
enum ExitCode : int { kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitCannotRun = 77 };

// Prints "twinbit <command>: <CODE>: <message>" on stderr; returns kExitFailed.
int fail(const char* command, const Status& status);
// The same line; returns kExitUsage (the command line is wrong, not the data or the machine).
int usage_error(const char* command, const Status& status);
// After creating a built-in backend failed: UNAVAILABLE (no device here) prints
// "twinbit <command>: SKIPPED: ..." and returns kExitCannotRun; anything else is fail(). A plugin
// that does not load is a failure (1), never "cannot run here": its path was given on purpose.
int fail_backend(const char* command, const Status& status);

// The CLI11 check of an --m option taking one M: an integer in kMinRows .. kMaxRows
// (core/rows.h); the message names the value and the range. A failed check is a usage error.
CLI::Validator rows_check();
// A comma-separated list of M, each checked as above ("1,32").
Result<std::vector<int64_t>> parse_rows_list(const std::string& text);
CLI::Validator rows_list_check();

// Host memory, checked before the big buffers are allocated: RESOURCE_EXHAUSTED naming `what`
// and the size asked when `bytes` exceed this machine's physical memory or what the process's
// limits (ulimit -v, ulimit -d) leave. Passing is no promise that the allocation succeeds;
// commands also catch std::bad_alloc (main.cpp), so nothing aborts either way.
Status check_host_memory(uint64_t bytes, const std::string& what);
// Host bytes one gemm of the CLI needs for M rows of K -> N: x, its int8 codes xq and scales xd,
// y, and the copy of x padded to Kp a backend may make when K % 32 != 0 (for M, K, N within
// kMaxRows and kMaxDim the sum stays far below 2^64).
uint64_t gemm_host_bytes(int64_t m, int64_t k, int64_t n);

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
