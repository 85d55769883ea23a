/* The failure list the C callers of the C API tests fill (the .c files of tests/c_api): one line per wrong
 * result, read and printed by the C++ side. C11, static functions: each C file gets its own. */
#ifndef TWINBIT_TESTS_C_API_FAILURE_LIST_H
#define TWINBIT_TESTS_C_API_FAILURE_LIST_H

#include <stdio.h>
#include <string.h>

#include "twinbit/twinbit.h"

/* Appends a line to the failure list. */
static int failure(const char* what, char* failures, size_t capacity) {
  const size_t used = strlen(failures);
  if (used + 1 < capacity) snprintf(failures + used, capacity - used, "%s\n", what);
  return 1;
}

/* 0 when the call returned `want` and the last error holds `fragment`; else one failure line
 * "what: got CODE 'message', want CODE with 'fragment'". */
static int expect(tb_code got, tb_code want, const char* fragment, const char* what, char* failures,
                  size_t capacity) {
  const char* message = tb_last_error();
  if (got == want && (fragment == NULL || strstr(message, fragment) != NULL)) return 0;
  const size_t used = strlen(failures);
  if (used + 1 < capacity) {
    snprintf(failures + used, capacity - used, "%s: got %s '%s', want %s with '%s'\n", what, tb_code_name(got),
             message, tb_code_name(want), fragment ? fragment : "");
  }
  return 1;
}

#define EXPECT(call, code, fragment) wrong += expect((call), (code), (fragment), #call, failures, capacity)
#define CHECK_THAT(condition) wrong += (condition) ? 0 : failure(#condition, failures, capacity)

#endif
