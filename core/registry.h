// The registry of backends: the built-in ones (listed by the build, in the runtime's order of
// preference) and plugins loaded from shared libraries, created from a spec
// (core/backend_spec.h: "cpu,threads=8", "cuda:1", "./libmine.so").
//
// Core never names a backend: the build generates the list (backends/CMakeLists.txt,
// twinbit_register_backend) from the folders it compiles.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/backend_spec.h"

namespace twinbit {

struct BackendEntry {
  const char* name;               // "cpu", "cuda", "null"
  tb_backend_create_fn create;    // the backend's entry point
  tb_backend_devices_fn devices;  // (optional) its device list; null: one device, index 0
};

// Built-in backends, in preference order (fastest-first is NOT implied; see the runtime).
std::span<const BackendEntry> builtin_backends();
// "cpu, cuda, null"
std::string builtin_backend_names();
// The built-in entry called `name` (exact match), or null.
const BackendEntry* find_builtin_backend(std::string_view name);

// Creates the backend `spec` names, passing its device and parameters (the backend validates
// them: INVALID_ARGUMENT quoting an unknown key or bad value). A built-in name that is not one is
// INVALID_ARGUMENT listing the valid names; UNAVAILABLE when the backend cannot run on this
// machine (no device, or no device of that index). A plugin is loaded from its path (it stays
// loaded for the life of the process); errors name the path and what dlopen/dlsym said, or both
// ABI versions on a mismatch. Every message starts with "backend 'SPEC': " or "plugin 'PATH': ".
Result<Backend> create_backend(const BackendSpec& spec);
// parse_backend_spec, then the above.
Result<Backend> create_backend(std::string_view spec);
// A plugin by path, default device, no parameters.
Result<Backend> load_plugin(const std::string& path);

// The devices of a backend without creating it: the names its device function gives, or one
// device named after the backend when it has none. UNAVAILABLE with the reason when it cannot
// run here. A plugin's devices come from its optional TB_PLUGIN_DEVICES_SYMBOL.
Result<std::vector<std::string>> list_devices(const BackendSpec& spec);

// One device of one backend, as `twinbit devices` prints it: created once to read describe().
struct DeviceListing {
  int32_t index = 0;
  std::string name;          // from the device list
  bool available = false;    // created successfully on this device
  std::string why_not;       // when not: the create error
  std::string description;   // describe().device
  std::string features;      // describe().features
};
struct BackendListing {
  std::string name;          // "cpu", or the plugin's path
  bool available = false;    // its device list could be read
  std::string why_not;       // when not: the reason (UNAVAILABLE: no CUDA device ...)
  std::vector<DeviceListing> devices;
};
// Every built-in backend in registry order, each device created once with no parameters.
std::vector<BackendListing> list_backends();

}  // namespace twinbit
