/* Calls made from C (tests/c_api/c_api_calls.c) for tests/test_c_api.cpp. */
#ifndef TWINBIT_TESTS_C_API_CALLS_H
#define TWINBIT_TESTS_C_API_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "twinbit/twinbit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens `artifact` with `specs`, `overrides` and `profile` (a path; each may be NULL), runs one gemm of `entry` with
 * ldx = K and ldy = N into y, writes the placement line of the call (tb_runtime_describe) into
 * `placement`, and closes the runtime. The first failing call's code (the message: the calling
 * thread's tb_runtime_last_error()). */
tb_code c_api_gemm(const char* artifact, const char* const* specs, size_t n_specs, const char* overrides,
                   const char* profile, const char* entry, int64_t m, tb_act_mode mode, const float* x, float* y, char* placement,
                   size_t placement_capacity);

/* Bad arguments to every call on the runtime test artifact (tests/test_runtime_util.h): each must
 * return its code with a message naming what was wrong. Returns the number of calls that did
 * not, listed one a line in `failures`. */
int c_api_bad_calls(const char* artifact, char* failures, size_t capacity);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif /* TWINBIT_TESTS_C_API_CALLS_H */
