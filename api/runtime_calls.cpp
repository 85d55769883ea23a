// The runtime's C calls (include/twinbit/twinbit.h "the runtime") over twinbit::runtime::Runtime,
// each guarded (api/call_guard.h) so no exception reaches C.
#include <twinbit/twinbit.h>

#include <cstring>
#include <memory>
#include <string>

#include "api/call_guard.h"
#include "api/handles.h"
#include "core/runtime/overrides.h"
#include "core/runtime/profile.h"
#include "core/runtime/runtime.h"

namespace {

using twinbit::Error;
using twinbit::Status;
using twinbit::api::check_mode_argument;
using twinbit::api::guarded;
using twinbit::api::HandleKind;
using twinbit::api::null_argument;

Status check_runtime(const tb_runtime* rt) { return twinbit::api::check_open(rt, HandleKind::kRuntime, "rt"); }

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
    auto handle = std::make_unique<tb_runtime>(tb_runtime{std::move(rt.value())});
    twinbit::api::publish(std::move(handle), HandleKind::kRuntime, out);
    return Status();
  });
}

tb_code tb_runtime_gemm(tb_runtime* rt, const char* entry, int64_t m, tb_act_mode mode,
                        const float* x, int64_t ldx, float* y, int64_t ldy) {
  constexpr const char* kCall = "tb_runtime_gemm";  // names the call in messages
  return guarded(kCall, [&]() -> Status {
    TB_RETURN_IF_ERROR(check_runtime(rt));
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
    TB_RETURN_IF_ERROR(check_runtime(rt));
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
    TB_RETURN_IF_ERROR(check_runtime(rt));
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

void tb_runtime_close(tb_runtime* rt) {
  if (rt != nullptr && twinbit::api::untrack(rt, HandleKind::kRuntime)) delete rt;
}

}  // extern "C"
