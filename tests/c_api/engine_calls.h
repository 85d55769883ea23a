/* Calls of the host C API's artifact, backend and operation calls made from C
 * (tests/c_api/engine_calls.c) for tests/test_c_api_errors.cpp. */
#ifndef TWINBIT_TESTS_C_API_ENGINE_CALLS_H
#define TWINBIT_TESTS_C_API_ENGINE_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "twinbit/twinbit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens `artifact` and the backend `spec`, binds `entry`, then closes the backend and the artifact
 * handles - and, when remove_file is 1, removes the file - before running one gemm of m rows
 * (ldx = K, ldy = N) into y through the binding alone, and unbinds. The first failing call's
 * code. */
tb_code c_api_gemm_after_closes(const char* artifact, const char* spec, const char* entry, int64_t m,
                                tb_act_mode mode, const float* x, float* y, int remove_file);

/* Bad arguments to every artifact, backend, binding and operation call on the random-shape test
 * artifact (tests/test_c_api_util.h), and a truncated copy of it: each must return its code with a
 * message naming what was wrong. Returns the number of calls that did not, listed one a line in
 * `failures`. */
int c_api_engine_bad_calls(const char* artifact, const char* truncated, char* failures, size_t capacity);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* TWINBIT_TESTS_C_API_ENGINE_CALLS_H */
