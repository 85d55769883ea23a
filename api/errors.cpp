// The host C API's version and last-error calls, and the thread-local buffer every call fails into.
#include <cstdio>

#include <twinbit/twinbit.h>

#include "api/call_guard.h"

namespace twinbit::api {
namespace {

// A fixed buffer, so that storing a message never allocates (it also reports running out of
// memory). Longer messages are cut at its end.
constexpr size_t kLastErrorCapacity = 2048;
thread_local char last_error[kLastErrorCapacity] = "";

}  // namespace

tb_code fail(tb_code code, const char* call, const char* what) {
  std::snprintf(last_error, kLastErrorCapacity, "%s: %s: %s", tb_code_name(code), call, what);
  return code;
}

}  // namespace twinbit::api

extern "C" {

const char* tb_version_string(void) { return TWINBIT_VERSION; }

uint32_t tb_backend_abi_version(void) { return TB_BACKEND_ABI_VERSION; }

const char* tb_last_error(void) { return twinbit::api::last_error; }

const char* tb_runtime_last_error(void) { return twinbit::api::last_error; }

}  // extern "C"
