// Isolated conformance runs: every case judged in a separately launched worker process, so a
// backend that crashes, hangs or corrupts memory loses one case, never the run.
//
// WHY A SPAWNED PROCESS. A fork() of a process that already runs oneTBB or CUDA threads copies
// their locks in whatever state they were in; the worker is instead a fresh exec of the command
// itself in its worker mode (`twinbit conformance --worker ...`): it loads the backend, computes
// each case's inputs and reference, and judges it exactly as the in-process runner does
// (conformance/judge.h: guards, input hashes, the repeat from two threads).
//
// THE PROTOCOL (one line per message, the worker's fd 3 to the parent; fd 0 the other way):
//   parent -> worker   "case <index> <kind> <prec> <mode> <m> <n> <k> <vh> <kh> <kd> <vd> <random>"
//   worker -> parent   {"hello": {"name", "device", "features"}}    once, the backend is loaded
//                      {"fatal": "<message>", "exit": <code>}       the backend did not load
//                      {"start": <index>}                           inputs and reference are ready,
//                                                                   the backend runs: the clock starts
//                      {"result": <index>, "case": {...}}           the verdict (CaseResult)
//                      "crash <SIGNAL> <what>"                      from the crash handler, just
//                                                                   before the worker dies
// The worker's stdout goes to the parent's stderr (a plugin that prints cannot forge a message).
// A Case field added later must be added to the "case" line (isolation/wire.cpp).
//
// VERDICTS the parent makes. No result before the worker dies: `crash` naming the signal (or the
// exit status) - unless the crash handler saw the fault land on a guard page, which is an `error`
// naming what was written ("wrote past the end of y", "wrote past the end of its tb_error
// message buffer"). No result within `case_timeout_s` of "start": `timeout`; the worker is killed
// (SIGKILL). Either way a new worker is started for the next case. Text from the worker is
// sanitised again (guards/untrusted_text.h).
#pragma once

#include <string>
#include <vector>

#include "conformance/conformance.h"

namespace twinbit::conformance::isolation {

struct IsolationOptions {
  // The worker's command line: argv[0] is an executable path (e.g. /proc/self/exe), the rest its
  // arguments (the backend, --seed, --expected: what the worker needs to load and judge).
  std::vector<std::string> worker_argv;
  double case_timeout_s = 60;  // per case, from "start" to its result
  double start_timeout_s = 60;  // for the worker to load the backend and say hello
  double prepare_timeout_s = 600;  // for the worker's own inputs and reference of one case
};

// Runs `cases` isolated. The report's identity is the worker's hello. Fails as a whole (the
// status) only when the very first worker does not come up: UNAVAILABLE when it could not load
// the backend (it said why on stderr; `exit_code` holds its exit code: 1 the plugin does not
// load, 77 the backend cannot run here), INTERNAL when it did not start or answer at all.
Result<Report> run_isolated(const IsolationOptions& io, const std::vector<Case>& cases,
                            const SuiteOptions& options, int* exit_code);

// The worker side: says hello for `backend`, then judges every case line read from `in_fd`
// until end of input, answering on `out_fd`. Installs the crash handler. Returns 0.
int run_worker(const Backend& backend, const SuiteOptions& options, int in_fd, int out_fd);
// The worker could not load its backend: {"fatal": ...} on `out_fd`.
void worker_fatal(int out_fd, const Status& why, int exit_code);

// The wire format (wire.cpp).
std::string case_line(size_t index, const Case& c);
bool parse_case_line(const std::string& line, size_t& index, Case& c);
std::string result_json(const CaseResult& r);
bool parse_result_json(const std::string& json, CaseResult& r);

}  // namespace twinbit::conformance::isolation
