// What every call of the host C API (include/twinbit/twinbit.h) does around its body: a catch so
// no exception reaches C, the thread-local last error, and the argument checks they share.
#pragma once

#include <cstdint>
#include <exception>
#include <new>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

#include "core/op_checks.h"

namespace twinbit::api {

// Stores "CODE: CALL: what" as this thread's last error and returns code.
tb_code fail(tb_code code, const char* call, const char* what);

// Runs `body` (returning Status) and turns a failure, or whatever escapes it, into a code and a
// message naming the call.
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

inline Status null_argument(const char* name) {
  return Error(TB_INVALID_ARGUMENT, "%s must not be NULL", name);
}

// A C caller may pass any int as the mode; reading one that names no enumerator as tb_act_mode is
// undefined behaviour in C++, so the argument's bytes are checked before it is used.
inline Status check_mode_argument(const tb_act_mode& mode) {
  const int raw = enum_field_value(mode);
  if (raw == TB_ACT_F32 || raw == TB_ACT_I8) return Status();
  return Error(TB_INVALID_ARGUMENT, "activation mode %d is not F32 or I8", raw);
}

}  // namespace twinbit::api
