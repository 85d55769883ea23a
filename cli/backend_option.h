// The one way every command names a backend (`run --backend`, `check --backend/--against`,
// `conformance --backend`, `demo --backends`, `bench --a/--b`, `gate --backend`): the spec grammar
// of core/backend_spec.h, plus the CLI's environment defaults of the creation parameters.
//
// ENVIRONMENT DEFAULTS. The backends read no environment variable; the CLI maps these onto the
// cpu backend's parameters when the spec does not give them (an explicit parameter wins):
//   TWINBIT_CPU_ARCH            -> isa
//   TWINBIT_CPU_THREADS         -> threads
//   TWINBIT_CPU_PREFETCH_BYTES  -> prefetch_bytes
// Empty variables are ignored. docs/BACKENDS.md lists every backend's keys.
//
// EXIT STATUS when a backend cannot be created (cli_common.h ExitCode): 2 for a spec that does
// not parse, an unknown built-in name (the message lists the built-ins) or a parameter a built-in
// backend rejects; 77 when a built-in backend cannot run here (UNAVAILABLE: no device); 1 for
// everything else, a plugin that does not load included (its path was given on purpose).
#pragma once

#include <string>

#include "core/backend.hpp"
#include "core/backend_spec.h"

namespace twinbit::cli {

// For an option's help text: "SPEC: NAME[:DEVICE]{,KEY=VALUE} or a plugin path, e.g. ...".
std::string backend_option_help(const std::string& what);
// Text for a command's description: the grammar with examples and the environment defaults.
extern const char kBackendOptionHelp[];

// The spec of `text` with the environment defaults applied.
Result<BackendSpec> backend_spec_from_option(const std::string& text);
// Adds TWINBIT_CPU_* to a cpu spec's parameters where absent; returns "VAR=value, ..." applied.
std::string apply_environment_defaults(BackendSpec& spec);

// Creates the backend `text` names. On failure prints one line on stderr
// ("twinbit <command>: ...") and sets *exit_code as above; on success *exit_code is 0.
Result<Backend> open_backend_option(const char* command, const std::string& text, int* exit_code);
// The same for a spec already parsed (and given its environment defaults).
Result<Backend> open_backend_spec(const char* command, const BackendSpec& spec, int* exit_code);

// `twinbit devices` (and `conformance --list`): every built-in backend, its devices and features,
// or why it cannot run here; as text or one JSON object. Returns kExitOk.
int print_backend_list(bool json);

}  // namespace twinbit::cli
