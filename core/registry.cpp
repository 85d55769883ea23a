#include "core/registry.h"

#include <dlfcn.h>

namespace twinbit {

std::string builtin_backend_names() {
  std::string out;
  for (const BackendEntry& e : builtin_backends()) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

namespace {
Result<Backend> create_from(tb_backend_create_fn create, const std::string& what) {
  tb_backend raw{};
  tb_error err{};
  tb_code code = create(TB_BACKEND_ABI_VERSION, &raw, &err);
  if (code != TB_OK) {
    Status s = Status::from_c(code, err);
    return Status(s.code(), what + ": " + s.message());
  }
  return Backend::adopt(raw);
}
}  // namespace

Result<Backend> create_backend(const std::string& name) {
  for (const BackendEntry& e : builtin_backends()) {
    if (name == e.name) return create_from(e.create, "backend '" + name + "'");
  }
  return Error(TB_INVALID_ARGUMENT, "unknown backend '%s' (built in: %s)", name.c_str(),
               builtin_backend_names().c_str());
}

Result<Backend> load_plugin(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return Error(TB_UNAVAILABLE, "cannot load plugin '%s': %s", path.c_str(), why ? why : "?");
  }
  void* sym = dlsym(lib, TB_PLUGIN_ENTRY_SYMBOL);
  if (!sym) {
    dlclose(lib);
    return Error(TB_INVALID_ARGUMENT, "plugin '%s' does not export %s", path.c_str(),
                 TB_PLUGIN_ENTRY_SYMBOL);
  }
  auto create = reinterpret_cast<tb_backend_create_fn>(sym);
  return create_from(create, "plugin '" + path + "'");  // the library stays loaded
}

}  // namespace twinbit
