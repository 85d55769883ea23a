// twinbit status codes (C ABI).
//
// Every fallible entry point returns a tb_code and, on failure, writes a one-line message into
// the caller's tb_error (which may be NULL when the caller does not want the text). The message
// says what was found and what was expected: "K % 32 != 0 (K = 100) is not supported", never
// "invalid argument". The codes and their meanings are fixed by ABI version 1:
//
//   TB_OK                    success; the tb_error is untouched.
//   TB_INVALID_ARGUMENT      the caller passed something impossible (a shape, a null pointer, an
//                            unknown name). Retrying the same call fails the same way.
//   TB_UNIMPLEMENTED         the backend does not perform this operation / shape / mode. The
//                            runtime falls back to the next backend; never "close enough".
//   TB_UNAVAILABLE           the resource is absent right now (no device, driver missing). May
//                            succeed on another machine or later; tests report SKIPPED.
//   TB_FAILED_PRECONDITION   the state is wrong for the call (weights of another precision bound).
//   TB_RESOURCE_EXHAUSTED    out of memory (host or device), with the sizes in the message.
//   TB_DATA_LOSS             an artifact is corrupt or truncated (checksum, bounds, magic).
//   TB_INTERNAL              a bug in twinbit or a device error that should not happen.
#ifndef TWINBIT_STATUS_H
#define TWINBIT_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tb_code {
  TB_OK = 0,
  TB_INVALID_ARGUMENT = 1,
  TB_UNIMPLEMENTED = 2,
  TB_UNAVAILABLE = 3,
  TB_FAILED_PRECONDITION = 4,
  TB_RESOURCE_EXHAUSTED = 5,
  TB_DATA_LOSS = 6,
  TB_INTERNAL = 7,
} tb_code;

// Fixed-size so it can cross a dlopen boundary without sharing an allocator.
#define TB_ERROR_MESSAGE_CAPACITY 512
typedef struct tb_error {
  char message[TB_ERROR_MESSAGE_CAPACITY];  // NUL-terminated; truncated if longer
} tb_error;

// "INVALID_ARGUMENT", "UNIMPLEMENTED", ...; "UNKNOWN" for a value outside the enum.
const char* tb_code_name(tb_code code);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_STATUS_H
