// The registry of backends: the built-in ones (listed by the build, in the runtime's order of
// preference) and plugins loaded from shared libraries.
//
// Core never names a backend: the build generates the list (backends/CMakeLists.txt,
// twinbit_add_backend) from the folders it compiles.
#pragma once

#include <span>
#include <string>

#include "core/backend.hpp"

namespace twinbit {

struct BackendEntry {
  const char* name;              // "cpu", "cuda", "null"
  tb_backend_create_fn create;   // the backend's entry point
};

// Built-in backends, in preference order (fastest-first is NOT implied; see the runtime).
std::span<const BackendEntry> builtin_backends();
// "cpu, cuda, null"
std::string builtin_backend_names();

// Creates the built-in backend called `name` (exact match). INVALID_ARGUMENT lists the valid
// names; UNAVAILABLE when it cannot run on this machine (no device).
Result<Backend> create_backend(const std::string& name);

// Loads a backend from a shared library that exports TB_PLUGIN_ENTRY_SYMBOL. The library stays
// loaded for the life of the process. Errors name the path and what dlopen/dlsym said, or both
// ABI versions on a mismatch.
Result<Backend> load_plugin(const std::string& path);

}  // namespace twinbit
