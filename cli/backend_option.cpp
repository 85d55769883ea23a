#include "cli/backend_option.h"

#include <cstdio>
#include <cstdlib>

#include "cli/cli_common.h"
#include "core/registry.h"

namespace twinbit::cli {

const char kBackendOptionHelp[] =
    "Backends are named by SPEC := NAME[:DEVICE]{,KEY=VALUE}, or by a plugin path (starting with\n"
    "'/' or '.', or containing '/'); '+' and '*' are reserved. Examples: cpu,\n"
    "cpu,threads=8,isa=fma3_avx2, cuda, cuda:1, ./libmyplugin.so. `twinbit devices` lists the\n"
    "backends and devices of this machine; docs/BACKENDS.md lists each backend's keys.\n"
    "TWINBIT_CPU_ARCH, TWINBIT_CPU_THREADS and TWINBIT_CPU_PREFETCH_BYTES are defaults of the\n"
    "cpu keys isa, threads and prefetch_bytes (a key given in the spec wins).";

std::string backend_option_help(const std::string& what) {
  return what + ": SPEC = NAME[:DEVICE]{,KEY=VALUE} or a plugin path (e.g. cpu, "
         "cpu,threads=8, cuda:1, ./libmine.so)";
}

std::string apply_environment_defaults(BackendSpec& spec) {
  static const struct {
    const char* backend;
    const char* variable;
    const char* key;
  } kDefaults[] = {
      {"cpu", "TWINBIT_CPU_ARCH", "isa"},
      {"cpu", "TWINBIT_CPU_THREADS", "threads"},
      {"cpu", "TWINBIT_CPU_PREFETCH_BYTES", "prefetch_bytes"},
  };
  std::string applied;
  for (const auto& d : kDefaults) {
    if (spec.name != d.backend || spec.param(d.key)) continue;
    const char* v = std::getenv(d.variable);
    if (!v || !*v) continue;
    spec.params.push_back({d.key, v});
    applied += (applied.empty() ? "" : ", ") + std::string(d.variable) + "=" + v;
  }
  return applied;
}

Result<BackendSpec> backend_spec_from_option(const std::string& text) {
  auto spec = parse_backend_spec(text);
  if (!spec.ok()) return spec.status();
  apply_environment_defaults(*spec);
  return spec;
}

Result<Backend> open_backend_spec(const char* command, const BackendSpec& spec, int* exit_code) {
  *exit_code = kExitOk;
  auto b = create_backend(spec);
  if (b.ok()) return b;
  Status s = b.status();
  if (spec.is_plugin()) {
    *exit_code = fail(command, s);
  } else if (s.code() == TB_INVALID_ARGUMENT) {
    *exit_code = usage_error(command, s);
  } else {
    *exit_code = fail_backend(command, s);  // UNAVAILABLE: 77, skipped
  }
  return s;
}

Result<Backend> open_backend_option(const char* command, const std::string& text, int* exit_code) {
  auto spec = parse_backend_spec(text);
  if (!spec.ok()) {
    *exit_code = usage_error(command, spec.status());
    return spec.status();
  }
  const std::string applied = apply_environment_defaults(*spec);
  auto b = open_backend_spec(command, *spec, exit_code);
  if (!b.ok() && !applied.empty()) {
    std::fprintf(stderr, "twinbit %s: (defaults taken from the environment: %s)\n", command,
                 applied.c_str());
  }
  return b;
}

}  // namespace twinbit::cli
