// twinbit's host C interface, for engines: open and verify an artifact, list its entries, open a
// backend from a spec, bind entries and run the operations on them (twinbit/artifact.h,
// twinbit/engine.h, included here), or let the runtime place every call (the tb_runtime_* calls
// below). The reference with an example: docs/C_API.md; the runtime: docs/RUNTIME.md "The C API".
// This header and those it includes are C11 (no C++ in them).
//
// TYPES are the backend ABI's (twinbit/backend.h): tb_code for every status (TB_OK = 0; the codes
// and their meanings are twinbit/status.h's), tb_act_mode for the activation mode, tb_prec,
// tb_weights_kind, tb_gdn_args and tb_backend_info.
//
// ERRORS. Every call that can fail returns a tb_code; on failure it also stores a one-line
// message "CODE: CALL: what was wrong", readable with tb_last_error() on the same thread. The
// message belongs to the calling thread (thread-local), so threads never see each other's errors;
// a successful call leaves it as it was (like errno). Every pointer argument is checked: NULL
// where a value is needed is TB_INVALID_ARGUMENT naming the argument. A handle that is not open
// (closed already, or never returned by its open call) is TB_INVALID_ARGUMENT too: open handles
// are tracked, so such a handle is refused without being read - unless its address has since been
// reused by a new handle of the same type, which no check can see. No C++ exception ever crosses
// this interface (an allocation failure is TB_RESOURCE_EXHAUSTED, anything else TB_INTERNAL).
//
// OWNERSHIP. Every handle made by a tb_*_open or tb_bind call is released by its close call
// (tb_artifact_close, tb_backend_close, tb_unbind, tb_runtime_close), which ignores NULL and
// handles that are not open. A bound entry (tb_bound) holds what it needs: the artifact's bytes
// and the backend stay alive until it is unbound, whatever is closed first.
//
// THREADS. Every call may be made from any thread. Calls that only read a handle (queries,
// operations, tb_bind) may run on one handle from several threads at once, each with its own
// outputs; a close must not race with any other call on the same handle.
#ifndef TWINBIT_TWINBIT_H
#define TWINBIT_TWINBIT_H

#include <stddef.h>
#include <stdint.h>

#include <twinbit/artifact.h>
#include <twinbit/backend.h>
#include <twinbit/engine.h>
#include <twinbit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- version ----------------------------------------------------------------------------------

// The project's version, "MAJOR.MINOR.PATCH" (e.g. "0.1.0"). Static text: never NULL, never freed.
TWINBIT_API const char* tb_version_string(void);

// The backend ABI version this library hosts (TB_BACKEND_ABI_VERSION of the twinbit/backend.h it
// was built with): a plugin must be built against the same version.
TWINBIT_API uint32_t tb_backend_abi_version(void);

// ---- errors -------------------------------------------------------------------------------------

// The message of the latest call of this API that failed on this thread, as "CODE: CALL: what
// was wrong", e.g. "INVALID_ARGUMENT: tb_bind: no entry 'x' in model.tbc"; "" when none has.
// Never NULL; the text stays valid until the next failing call on this thread (a message past
// 2047 bytes is cut).
TWINBIT_API const char* tb_last_error(void);

// ---- the runtime --------------------------------------------------------------------------------

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

// The same as tb_last_error() (kept for the runtime's first callers): the thread's latest
// failure of any call of this API.
TWINBIT_API const char* tb_runtime_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_TWINBIT_H
