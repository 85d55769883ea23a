// The host C API's backend calls (include/twinbit/engine.h "backends") over the registry
// (core/registry.h): the built-in list, devices, and a backend opened from a spec.
#include <cstring>
#include <string>
#include <string_view>

#include <twinbit/engine.h>

#include "api/call_guard.h"
#include "api/handles.h"
#include "core/registry.h"

using twinbit::Error;
using twinbit::Result;
using twinbit::Status;
using twinbit::api::check_open;
using twinbit::api::guarded;
using twinbit::api::HandleKind;
using twinbit::api::null_argument;

namespace {

// "plugin:PATH" names a plugin by any path, also one the spec grammar would not read as a path
// ("plugin:libmine.so", found by the dynamic loader's search).
constexpr std::string_view kPluginPrefix = "plugin:";

Result<twinbit::BackendSpec> parse_spec(const char* spec) {
  const std::string_view text(spec);
  if (text.substr(0, kPluginPrefix.size()) == kPluginPrefix) {
    twinbit::BackendSpec s;
    s.plugin_path = std::string(text.substr(kPluginPrefix.size()));
    if (s.plugin_path.empty()) return Error(TB_INVALID_ARGUMENT, "backend spec '%s': no path after 'plugin:'", spec);
    return s;
  }
  return twinbit::parse_backend_spec(text);
}

void copy_text(char (&to)[TB_DEVICE_TEXT_CAPACITY], const std::string& from) {
  const size_t n = from.size() < TB_DEVICE_TEXT_CAPACITY ? from.size() : TB_DEVICE_TEXT_CAPACITY - 1;
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

}  // namespace

extern "C" {

size_t tb_backend_count(void) { return twinbit::builtin_backends().size(); }

tb_code tb_backend_name(size_t index, const char** name) {
  return guarded("tb_backend_name", [&]() -> Status {
    if (name == nullptr) return null_argument("name");
    const auto all = twinbit::builtin_backends();
    if (index >= all.size()) {
      return Error(TB_INVALID_ARGUMENT, "index %zu is out of range: %zu backends are built in (%s)", index, all.size(),
                   twinbit::builtin_backend_names().c_str());
    }
    *name = all[index].name;
    return Status();
  });
}

tb_code tb_devices(const char* spec, tb_device_entry* out, size_t capacity, size_t* count) {
  return guarded("tb_devices", [&]() -> Status {
    if (spec == nullptr) return null_argument("spec");
    if (count == nullptr) return null_argument("count");
    if (out == nullptr && capacity > 0) return Error(TB_INVALID_ARGUMENT, "out must not be NULL when capacity is %zu", capacity);
    auto parsed = parse_spec(spec);
    if (!parsed.ok()) return parsed.status();
    twinbit::BackendSpec s = std::move(parsed.value());
    auto names = twinbit::list_devices(s);
    if (!names.ok()) return names.status();
    *count = names->size();
    const std::string label = s.is_plugin() ? s.plugin_path : s.name;
    for (size_t i = 0; i < names->size() && i < capacity; ++i) {
      tb_device_entry& d = out[i];
      d = tb_device_entry{};
      d.index = static_cast<int32_t>(i);
      s.device = d.index;
      copy_text(d.spec, s.is_plugin() ? label : label + ":" + std::to_string(i));
      copy_text(d.name, (*names)[i]);
      auto b = twinbit::create_backend(s);
      d.available = b.ok() ? 1 : 0;
      if (b.ok()) {
        copy_text(d.description, b->device());
        copy_text(d.features, b->features());
      } else {
        copy_text(d.why_not, b.status().to_string());
      }
    }
    return Status();
  });
}

tb_code tb_backend_open(const char* spec, tb_engine** out) {
  return guarded("tb_backend_open", [&]() -> Status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    if (spec == nullptr) return null_argument("spec");
    auto parsed = parse_spec(spec);
    if (!parsed.ok()) return parsed.status();
    auto backend = twinbit::create_backend(parsed.value());
    if (!backend.ok()) return backend.status();
    auto handle = std::make_unique<tb_engine>(tb_engine{std::move(backend.value())});
    twinbit::api::publish(std::move(handle), HandleKind::kEngine, out);
    return Status();
  });
}

tb_code tb_backend_describe(const tb_engine* engine, tb_backend_info* info) {
  return guarded("tb_backend_describe", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(engine, HandleKind::kEngine, "engine"));
    if (info == nullptr) return null_argument("info");
    const twinbit::Backend& b = engine->backend;
    info->name = b.name().c_str();
    info->device = b.device().c_str();
    info->features = b.features().c_str();
    info->memory_bytes = b.memory_bytes();
    return Status();
  });
}

tb_code tb_backend_proc(const tb_engine* engine, const char* name, void** fn, void** ctx) {
  if (fn != nullptr) *fn = nullptr;
  if (ctx != nullptr) *ctx = nullptr;
  return guarded("tb_backend_proc", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(engine, HandleKind::kEngine, "engine"));
    if (name == nullptr) return null_argument("name");
    if (fn == nullptr) return null_argument("fn");
    if (ctx == nullptr) return null_argument("ctx");
    const twinbit::Backend& b = engine->backend;
    void* found = b.proc(name);
    if (found == nullptr) {
      return Error(TB_UNIMPLEMENTED, "backend '%s' has no entry '%s'", b.name().c_str(), name);
    }
    *fn = found;
    *ctx = b.raw().ctx;
    return Status();
  });
}

void tb_backend_close(tb_engine* engine) {
  if (engine != nullptr && twinbit::api::untrack(engine, HandleKind::kEngine)) delete engine;
}

}  // extern "C"
