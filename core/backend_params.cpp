#include <twinbit/backend_params.hpp>

#include <cstring>
#include <string>

namespace twinbit {

namespace {
std::string join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out.empty() ? "none: it takes no parameters" : out;
}
}  // namespace

Status check_param_keys(const tb_backend_params* params, const char* backend,
                        std::initializer_list<const char*> valid) {
  if (!params) return Status();
  if (params->count > 0 && !params->items) {
    return Error(TB_INVALID_ARGUMENT, "%s: %u parameters but no array", backend, params->count);
  }
  for (uint32_t i = 0; i < params->count; ++i) {
    const tb_backend_param& p = params->items[i];
    if (!p.key || !p.value) {
      return Error(TB_INVALID_ARGUMENT, "%s: parameter %u has a null key or value", backend, i);
    }
    bool known = false;
    for (const char* v : valid) known = known || std::strcmp(v, p.key) == 0;
    if (!known) {
      return Error(TB_INVALID_ARGUMENT, "%s: unknown parameter '%s=%s' (valid keys: %s)", backend,
                   p.key, p.value, join(valid).c_str());
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (std::strcmp(params->items[j].key, p.key) == 0) {
        return Error(TB_INVALID_ARGUMENT, "%s: parameter '%s' is given twice", backend, p.key);
      }
    }
  }
  return Status();
}

const char* find_param(const tb_backend_params* params, const char* key) {
  if (!params || !params->items) return nullptr;
  for (uint32_t i = 0; i < params->count; ++i) {
    if (params->items[i].key && std::strcmp(params->items[i].key, key) == 0) {
      return params->items[i].value;
    }
  }
  return nullptr;
}

Status parse_int_param(const char* backend, const char* key, const char* value, int64_t lo,
                       int64_t hi, int64_t* out) {
  bool digits = value && *value && std::strlen(value) <= 18;
  for (const char* c = value; digits && *c; ++c) digits = *c >= '0' && *c <= '9';
  const int64_t n = digits ? std::stoll(value) : 0;
  if (!digits || n < lo || n > hi) {
    return Error(TB_INVALID_ARGUMENT, "%s: %s=%s is not valid (expected an integer %lld .. %lld)",
                 backend, key, value ? value : "(null)", static_cast<long long>(lo),
                 static_cast<long long>(hi));
  }
  *out = n;
  return Status();
}

Status choose_device(const tb_backend_params* params, const char* backend, int32_t count,
                     int32_t* out) {
  const int32_t d = params ? params->device : -1;
  if (d < -1) {
    return Error(TB_INVALID_ARGUMENT, "%s: device index %d is negative", backend, static_cast<int>(d));
  }
  const int32_t index = d == -1 ? 0 : d;
  if (index >= count) {
    return Error(TB_UNAVAILABLE, "%s: device %d does not exist (this machine has %d device%s, "
                 "0 .. %d)", backend, static_cast<int>(index), static_cast<int>(count),
                 count == 1 ? "" : "s", static_cast<int>(count) - 1);
  }
  *out = index;
  return Status();
}

}  // namespace twinbit
