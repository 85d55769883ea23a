#include "core/registry.h"

#include <dlfcn.h>

#include "core/error_buffer.h"

namespace twinbit {

std::string builtin_backend_names() {
  std::string out;
  for (const BackendEntry& e : builtin_backends()) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

const BackendEntry* find_builtin_backend(std::string_view name) {
  for (const BackendEntry& e : builtin_backends()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

namespace {

// The spec's device and parameters as the C ABI carries them; the strings stay owned by `spec`.
struct CParams {
  std::vector<tb_backend_param> items;
  tb_backend_params params{};
  explicit CParams(const BackendSpec& spec) {
    for (const BackendParam& p : spec.params) items.push_back({p.key.c_str(), p.value.c_str()});
    params.device = spec.device ? *spec.device : -1;
    params.items = items.data();
    params.count = static_cast<uint32_t>(items.size());
  }
};

Result<Backend> create_from(tb_backend_create_fn create, const BackendSpec& spec,
                            const std::string& what) {
  const CParams c(spec);
  tb_backend raw{};
  GuardedError err;
  tb_code code = create(TB_BACKEND_ABI_VERSION, &raw, err.get(), &c.params);
  if (code != TB_OK) {
    Status s = Status::from_c(code, *err);
    return Status(s.code(), what + ": " + s.message());
  }
  auto b = Backend::adopt(raw);
  if (!b.ok()) return Status(b.status().code(), what + ": " + b.status().message());
  return b;
}

Status unknown_name(const std::string& name) {
  return Error(TB_INVALID_ARGUMENT, "unknown backend '%s' (built in: %s; a plugin is named by "
               "its path)", name.c_str(), builtin_backend_names().c_str());
}

// dlopen + dlsym of a plugin's symbol; the library stays loaded (its code may be running).
Result<void*> plugin_symbol(const std::string& path, const char* symbol, bool required) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return Error(TB_UNAVAILABLE, "cannot load plugin '%s': %s", path.c_str(), why ? why : "?");
  }
  void* sym = dlsym(lib, symbol);
  if (!sym && required) {
    dlclose(lib);
    return Error(TB_INVALID_ARGUMENT, "plugin '%s' does not export %s", path.c_str(), symbol);
  }
  return sym;
}

Result<std::vector<std::string>> devices_from(tb_backend_devices_fn fn, const std::string& what) {
  if (!fn) return std::vector<std::string>{what};
  std::vector<tb_device_info> infos(64);
  uint32_t count = 0;
  GuardedError err;
  tb_code code = fn(TB_BACKEND_ABI_VERSION, infos.data(), static_cast<uint32_t>(infos.size()),
                    &count, err.get());
  if (code != TB_OK) return Status::from_c(code, *err);
  std::vector<std::string> names;
  for (uint32_t i = 0; i < count && i < infos.size(); ++i) {
    infos[i].name[TB_DEVICE_NAME_CAPACITY - 1] = '\0';
    names.emplace_back(infos[i].name);
  }
  return names;
}

}  // namespace

Result<Backend> create_backend(const BackendSpec& spec) {
  if (spec.is_plugin()) {
    if (!spec.name.empty()) {
      return Error(TB_INVALID_ARGUMENT, "give a built-in name or a plugin path, not both (got "
                   "'%s' and '%s')", spec.name.c_str(), spec.plugin_path.c_str());
    }
    auto sym = plugin_symbol(spec.plugin_path, TB_PLUGIN_ENTRY_SYMBOL, true);
    if (!sym.ok()) return sym.status();
    return create_from(reinterpret_cast<tb_backend_create_fn>(*sym), spec,
                       "plugin '" + spec.to_string() + "'");
  }
  if (spec.name.empty()) {
    return Error(TB_INVALID_ARGUMENT, "no backend named (built in: %s)",
                 builtin_backend_names().c_str());
  }
  const BackendEntry* e = find_builtin_backend(spec.name);
  if (!e) return unknown_name(spec.name);
  return create_from(e->create, spec, "backend '" + spec.to_string() + "'");
}

Result<Backend> create_backend(std::string_view spec) {
  auto parsed = parse_backend_spec(spec);
  if (!parsed.ok()) return parsed.status();
  return create_backend(*parsed);
}

Result<Backend> load_plugin(const std::string& path) {
  BackendSpec spec;
  spec.plugin_path = path;
  return create_backend(spec);
}

Result<std::vector<std::string>> list_devices(const BackendSpec& spec) {
  if (spec.is_plugin()) {
    auto sym = plugin_symbol(spec.plugin_path, TB_PLUGIN_DEVICES_SYMBOL, false);
    if (!sym.ok()) return sym.status();
    return devices_from(reinterpret_cast<tb_backend_devices_fn>(*sym), spec.plugin_path);
  }
  const BackendEntry* e = find_builtin_backend(spec.name);
  if (!e) return unknown_name(spec.name);
  return devices_from(e->devices, spec.name);
}

std::vector<BackendListing> list_backends() {
  std::vector<BackendListing> out;
  for (const BackendEntry& e : builtin_backends()) {
    BackendListing l;
    l.name = e.name;
    BackendSpec spec;
    spec.name = e.name;
    auto names = list_devices(spec);
    if (!names.ok()) {
      l.why_not = names.status().to_string();
      out.push_back(std::move(l));
      continue;
    }
    l.available = true;
    for (size_t i = 0; i < names->size(); ++i) {
      DeviceListing d;
      d.index = static_cast<int32_t>(i);
      d.name = (*names)[i];
      spec.device = d.index;
      auto b = create_backend(spec);
      if (b.ok()) {
        d.available = true;
        d.description = b->device();
        d.features = b->features();
      } else {
        d.why_not = b.status().to_string();
      }
      l.devices.push_back(std::move(d));
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace twinbit
