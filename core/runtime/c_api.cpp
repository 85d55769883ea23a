// The runtime's C calls (include/twinbit/twinbit.h) over twinbit::runtime::Runtime: argument
// checks, the thread-local last error, and a catch at every entry so no exception reaches C.
#include "twinbit/twinbit.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "core/op_checks.h"
#include "core/runtime/overrides.h"
#include "core/runtime/profile.h"
#include "core/runtime/runtime.h"

struct tb_runtime {
  std::unique_ptr<twinbit::runtime::Runtime> rt;
};

namespace {

using twinbit::Error;
using twinbit::Status;

// A fixed buffer, so that storing a message never allocates (it also reports running out of
// memory). Longer messages are cut at its end.
constexpr size_t kLastErrorCapacity = 2048;
thread_local char last_error[kLastErrorCapacity] = "";

tb_code fail(tb_code code, const char* call, const char* what) {
  std::snprintf(last_error, kLastErrorCapacity, "%s: %s: %s", tb_code_name(code), call, what);
  return code;
}

// Runs `body` (returning Status) and turns whatever escapes it into a code and a message.
template <class Body>
tb_code guarded(const char* call, Body&& body) {
  try {
    const Status s = body();
    return s.ok() ? TB_OK : fail(s.code(), call, s.message().c_str());
  } catch (const std::bad_alloc&) {
    return fail(TB_RESOURCE_EXHAUSTED, call, "out of host memory");
  } catch (const std::exception& e) {
    return fail(TB_INTERNAL, call, e.what());
  } catch (...) {
    return fail(TB_INTERNAL, call, "an exception that is not a std::exception");
  }
}

// A C caller may pass any int as the mode; reading one that names no enumerator as tb_act_mode is
// undefined behaviour in C++, so the argument's bytes are checked before it is used.
Status check_mode_argument(const tb_act_mode& mode) {
  const int raw = twinbit::enum_field_value(mode);
  if (raw == TB_ACT_F32 || raw == TB_ACT_I8) return Status();
  return Error(TB_INVALID_ARGUMENT, "activation mode %d is not F32 or I8", raw);
}

Status null_argument(const char* name) {
  return Error(TB_INVALID_ARGUMENT, "%s must not be NULL", name);
}

// The strip entry's artifact record, or INVALID_ARGUMENT naming what is wrong with the name.
twinbit::Result<const twinbit::artifact::Entry*> strip_entry(const tb_runtime* rt, const char* entry) {
  const twinbit::artifact::Entry* e = rt->rt->artifact().find(entry);
  if (e == nullptr) return Error(TB_INVALID_ARGUMENT, "no entry '%s' in %s", entry, rt->rt->artifact().path().c_str());
  if (e->kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' is a float matrix, not a strip set: it has no gemm", entry);
  }
  return e;
}

}  // namespace

extern "C" {

tb_code tb_runtime_open(const char* artifact, const char* const* backend_specs, size_t n_specs,
                        const char* overrides_text_or_null, const char* profile_path_or_null,
                        tb_runtime** out) {
  constexpr const char* kCall = "tb_runtime_open";  // names the call in messages
  return guarded(kCall, [&]() -> Status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    if (artifact == nullptr) return null_argument("artifact");
    if (n_specs > 0 && backend_specs == nullptr) {
      return Error(TB_INVALID_ARGUMENT, "backend_specs must not be NULL when n_specs is %zu", n_specs);
    }
    twinbit::runtime::RuntimeOptions options;
    for (size_t i = 0; i < n_specs; ++i) {
      if (backend_specs[i] == nullptr) return Error(TB_INVALID_ARGUMENT, "backend_specs[%zu] must not be NULL", i);
      options.backends.emplace_back(backend_specs[i]);
    }
    if (overrides_text_or_null != nullptr) {
      auto rules = twinbit::runtime::parse_overrides(overrides_text_or_null, "overrides text");
      if (!rules.ok()) return rules.status();
      options.overrides = std::move(rules.value());
    }
    if (profile_path_or_null != nullptr) {
      auto profile = twinbit::runtime::read_profile(profile_path_or_null);
      if (!profile.ok()) return profile.status();
      options.profile = std::move(profile.value());
    }
    auto rt = twinbit::runtime::Runtime::open(artifact, options);
    if (!rt.ok()) return rt.status();
    *out = new tb_runtime{std::move(rt.value())};
    return Status();
  });
}

tb_code tb_runtime_gemm(tb_runtime* rt, const char* entry, int64_t m, tb_act_mode mode,
                        const float* x, int64_t ldx, float* y, int64_t ldy) {
  constexpr const char* kCall = "tb_runtime_gemm";  // names the call in messages
  return guarded(kCall, [&]() -> Status {
    if (rt == nullptr) return null_argument("rt");
    if (entry == nullptr) return null_argument("entry");
    if (x == nullptr) return null_argument("x");
    if (y == nullptr) return null_argument("y");
    TB_RETURN_IF_ERROR(check_mode_argument(mode));
    return rt->rt->gemm(entry, m, mode, x, ldx, y, ldy);
  });
}

tb_code tb_runtime_entry_shape(const tb_runtime* rt, const char* entry, int64_t* n, int64_t* k) {
  constexpr const char* kCall = "tb_runtime_entry_shape";  // names the call in messages
  return guarded(kCall, [&]() -> Status {
    if (rt == nullptr) return null_argument("rt");
    if (entry == nullptr) return null_argument("entry");
    if (n == nullptr) return null_argument("n");
    if (k == nullptr) return null_argument("k");
    auto e = strip_entry(rt, entry);
    if (!e.ok()) return e.status();
    *n = e.value()->n;
    *k = e.value()->k;
    return Status();
  });
}

tb_code tb_runtime_describe(const tb_runtime* rt, const char* entry, int64_t m, tb_act_mode mode,
                            char* text, size_t capacity, size_t* length_or_null) {
  constexpr const char* kCall = "tb_runtime_describe";  // names the call in messages
  return guarded(kCall, [&]() -> Status {
    if (rt == nullptr) return null_argument("rt");
    if (entry == nullptr) return null_argument("entry");
    if (text == nullptr && capacity > 0) {
      return Error(TB_INVALID_ARGUMENT, "text must not be NULL when capacity is %zu", capacity);
    }
    if (m < 1) return Error(TB_INVALID_ARGUMENT, "m must be >= 1 (got %lld)", static_cast<long long>(m));
    TB_RETURN_IF_ERROR(check_mode_argument(mode));
    auto d = rt->rt->decide(entry, m, mode);
    if (!d.ok()) return d.status();
    const std::string line = twinbit::runtime::placement_text(d->placement, rt->rt->backend_labels()) + " (" + d->why + ")";
    if (capacity > 0) {
      const size_t copied = line.size() < capacity ? line.size() : capacity - 1;
      std::memcpy(text, line.data(), copied);
      text[copied] = '\0';
    }
    if (length_or_null != nullptr) *length_or_null = line.size();
    return Status();
  });
}

void tb_runtime_close(tb_runtime* rt) { delete rt; }

const char* tb_runtime_last_error(void) { return last_error; }

}  // extern "C"
