// twinbit's host C interface: the runtime (docs/RUNTIME.md "The C API").
//
// An engine written in C (or any language with a C FFI) opens an artifact with a list of
// backends and optional override rules, then calls gemm by entry name; the runtime places each
// call (threshold plan, overrides, fallback) and the bits are those of the scalar reference
// whatever the placement. The packaging issue completes this header (install, version query);
// what is here is the runtime's calls.
//
// TYPES are the backend ABI's (twinbit/backend.h): tb_code for every status (TB_OK = 0; the codes
// and their meanings are twinbit/status.h's), tb_act_mode for the activation mode.
//
// ERRORS. Every call that can fail returns a tb_code; on failure it also stores a one-line
// message, readable with tb_runtime_last_error() on the same thread. The message belongs to the
// calling thread (thread-local), so threads never see each other's errors; a successful call
// leaves it as it was (like errno). Every pointer argument is checked: NULL where a value is
// needed is TB_INVALID_ARGUMENT naming the argument. No C++ exception ever crosses this
// interface (an allocation failure is TB_RESOURCE_EXHAUSTED, anything else TB_INTERNAL).
//
// THREADS. tb_runtime_gemm, tb_runtime_entry_shape and tb_runtime_describe may be called on one
// runtime from several threads at once (each with its own y). tb_runtime_close must not race
// with any other call on the same runtime.
#ifndef TWINBIT_TWINBIT_H
#define TWINBIT_TWINBIT_H

#include <stddef.h>
#include <stdint.h>

#include <twinbit/backend.h>
#include <twinbit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

// An open runtime: the artifact, its backends and the bindings made so far.
typedef struct tb_runtime tb_runtime;

// Opens `artifact` (a .tbc file) with the backends `backend_specs[0 .. n_specs)` in that order
// (spec grammar: docs/BACKENDS.md; n_specs = 0: just "cpu"; the first "cpu" spec is the plan's
// CPU backend, and a plain "cpu" is added when none is listed). `overrides_text_or_null` holds
// override rules, one PATTERN=TARGET per line as in an overrides file (messages call it
// "overrides text": "overrides text line 2: ..."), or NULL for none. `profile_path_or_null` names
// a profile written by `twinbit calibrate`: calls no override places get the calibrated plan
// (docs/RUNTIME.md "Calibration and the calibrated plan"); NULL: the threshold plan. On success
// *out is the runtime, to be closed with tb_runtime_close; on failure *out is NULL. Errors: those
// of Runtime::open (core/runtime/runtime.h): a missing or corrupt artifact, a bad spec, a backend
// with no device here (TB_UNAVAILABLE), a malformed rule or one that names an unknown backend or
// matches no entry (TB_INVALID_ARGUMENT quoting the rule), a profile that cannot be read or is
// not valid (naming the file).
TWINBIT_API tb_code tb_runtime_open(const char* artifact, const char* const* backend_specs, size_t n_specs,
                                    const char* overrides_text_or_null, const char* profile_path_or_null,
                                    tb_runtime** out);

// y[m][ldy] = the gemm of the strip entry `entry` on x (TB_ACT_F32 / TB_ACT_I8 as in
// twinbit/backend.h tb_gemm_args; I8 mode quantises x once per call). x holds m rows of ldx floats
// (ldx >= K), y m rows of ldy floats (ldy >= N); only the N columns of each row are written.
TWINBIT_API tb_code tb_runtime_gemm(tb_runtime* rt, const char* entry, int64_t m, tb_act_mode mode,
                                    const float* x, int64_t ldx, float* y, int64_t ldy);

// The entry's output columns (*n) and inner dimension (*k). TB_INVALID_ARGUMENT for an unknown
// entry or one that is not a strip set (it has no gemm).
TWINBIT_API tb_code tb_runtime_entry_shape(const tb_runtime* rt, const char* entry, int64_t* n, int64_t* k);

// Where a gemm of `m` rows of `entry` in `mode` would run, and why, as one line of text:
// "PLACEMENT (WHY)", e.g. "cpu,isa=sse2*0.5+cpu*0.5 (override overrides text line 1: ...)".
// Writes at most `capacity` bytes into `text`, always NUL-terminated when capacity > 0
// (truncated if longer); *length_or_null receives the full length without the NUL, so a caller
// can size a buffer by calling with capacity 0 and text NULL. Nothing is computed or bound.
TWINBIT_API tb_code tb_runtime_describe(const tb_runtime* rt, const char* entry, int64_t m, tb_act_mode mode,
                                        char* text, size_t capacity, size_t* length_or_null);

// Closes the runtime (NULL is ignored): its bindings and backends are released.
TWINBIT_API void tb_runtime_close(tb_runtime* rt);

// The message of the latest call that failed on this thread, as "CODE: CALL: what was wrong",
// e.g. "INVALID_ARGUMENT: tb_runtime_gemm: entry must not be NULL" or "INVALID_ARGUMENT:
// tb_runtime_gemm: no entry 'x' in model.tbc"; "" when none has. Never NULL; the text stays valid
// until the next failing call on this thread (a message past 2047 bytes is cut).
TWINBIT_API const char* tb_runtime_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_TWINBIT_H
