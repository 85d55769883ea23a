// Reading tb_backend_params inside a backend's create function: the exact checks every backend
// makes the same way (unknown key, bad value, device index), so their messages read alike.
//
// Each returns INVALID_ARGUMENT (UNAVAILABLE for a device index past the count) with a message
// that starts with `backend` ("cpu backend"), quotes what was given and lists what is valid.
#pragma once

#include <cstdint>
#include <initializer_list>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit {

// Every key of `params` (may be null) is one of `valid` and none is given twice.
Status check_param_keys(const tb_backend_params* params, const char* backend,
                        std::initializer_list<const char*> valid);
// The value of `key`, or null when absent (or `params` is null).
const char* find_param(const tb_backend_params* params, const char* key);
// `value` of `key` as a decimal integer in lo .. hi, without sign, spaces or trailing text.
Status parse_int_param(const char* backend, const char* key, const char* value, int64_t lo,
                       int64_t hi, int64_t* out);
// The device index asked for (0 when `params` is null or its device is -1), checked against the
// `count` devices this backend has here.
Status choose_device(const tb_backend_params* params, const char* backend, int32_t count,
                     int32_t* out);

}  // namespace twinbit
