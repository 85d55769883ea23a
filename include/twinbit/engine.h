// The host C API's backends and operations (part of twinbit/twinbit.h, which includes this header;
// its rules on errors, ownership and threads apply): list the backends and their devices, open
// one from a spec, bind artifact entries to it and run gemm, gemv, the gated-delta step and the
// activation quantiser. Every result has the bits of the scalar reference (docs/NUMERICS.md),
// whichever backend computes it. C11; docs/C_API.md "Backends" and "Operations".
#ifndef TWINBIT_ENGINE_H
#define TWINBIT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <twinbit/artifact.h>
#include <twinbit/backend.h>
#include <twinbit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

// An open backend (the name tb_backend is the plugin ABI's table: twinbit/backend.h).
typedef struct tb_engine tb_engine;
// An artifact entry bound to a backend: its weights as the backend keeps them.
typedef struct tb_bound tb_bound;

// ---- backends -----------------------------------------------------------------------------------

// The number of backends built into this library.
TWINBIT_API size_t tb_backend_count(void);

// The name of built-in backend `index` (0 <= index < tb_backend_count()), in the registry's order
// of preference ("cpu", "cuda", "null", as built), into *name: static text, never freed.
// TB_INVALID_ARGUMENT naming the index and the count when it is out of range.
TWINBIT_API tb_code tb_backend_name(size_t index, const char** name);

// Text fields of tb_device_entry are cut at this many bytes, NUL included.
#define TB_DEVICE_TEXT_CAPACITY 256

// One device of a backend, as `twinbit devices` shows it. All text is NUL-terminated, copied in.
typedef struct tb_device_entry {
  int32_t index;                               // the DEVICE of a spec: "cuda:1" is index 1
  int32_t available;                           // 1: a backend can be opened on it here; 0: see why_not
  char spec[TB_DEVICE_TEXT_CAPACITY];          // "cpu:0", "cuda:1", or the plugin path
  char name[TB_DEVICE_TEXT_CAPACITY];          // from the backend's device list
  char description[TB_DEVICE_TEXT_CAPACITY];   // available: the backend's describe().device
  char features[TB_DEVICE_TEXT_CAPACITY];      // available: its capability tags
  char why_not[TB_DEVICE_TEXT_CAPACITY];       // not available: the error opening it gave
} tb_device_entry;

// The devices of the backend that `spec` names (a spec as for tb_backend_open; its device index
// is ignored, its parameters are used to open each device once). Writes at most `capacity`
// entries into `out` (may be NULL when capacity is 0) and the number of devices into *count, so a
// caller can ask for the count first. TB_UNAVAILABLE with the reason when the backend cannot run
// on this machine (e.g. no CUDA driver); TB_INVALID_ARGUMENT for a bad spec or an unknown name.
TWINBIT_API tb_code tb_devices(const char* spec, tb_device_entry* out, size_t capacity, size_t* count);

// Opens the backend `spec` names (grammar: docs/BACKENDS.md "Grammar": "cpu",
// "cpu,isa=sse2,threads=4", "cuda:1", a plugin's path "./libmine.so", or "plugin:PATH" for any
// path). On success *out is the handle, closed with tb_backend_close; on failure *out is NULL.
// Errors: TB_INVALID_ARGUMENT (bad spec, unknown backend or parameter, quoted), TB_UNAVAILABLE (no
// such device here), a plugin that cannot be loaded or has another ABI version (named).
TWINBIT_API tb_code tb_backend_open(const char* spec, tb_engine** out);

// The backend's identity into *info (tb_backend_info, twinbit/backend.h): name, device, features,
// memory. Its strings belong to the backend and stay valid until tb_backend_close.
TWINBIT_API tb_code tb_backend_describe(const tb_engine* engine, tb_backend_info* info);

// Closes the handle (NULL, or a handle that is not open, is ignored). Entries bound on it stay
// usable: the backend itself is destroyed when the last of them is unbound.
TWINBIT_API void tb_backend_close(tb_engine* engine);

// A backend-private entry by name (the backend ABI's get_proc, twinbit/backend.h): *fn is the
// function, to be cast to the C type the backend documents for the name (the CUDA backend's
// device-resident gemm: twinbit/cuda_device.h), and *ctx the backend context it takes as its
// first argument. Both stay valid while the engine or any binding made on it is open.
// TB_UNIMPLEMENTED naming the backend and the name when it has no such entry (then *fn and
// *ctx are NULL).
TWINBIT_API tb_code tb_backend_proc(const tb_engine* engine, const char* name, void** fn, void** ctx);

// ---- binding ------------------------------------------------------------------------------------

// Binds the entry `entry_name` of `art` on `engine`: verifies the entry's checksums (once per
// artifact handle) and hands its weights to the backend (a GPU copies them to device memory).
// On success *out is the binding, released by tb_unbind; on failure *out is NULL. The binding
// holds the artifact's mapping and the backend: closing either handle first is safe.
// Errors: TB_INVALID_ARGUMENT "no entry 'NAME' in PATH", TB_DATA_LOSS for a corrupt entry,
// TB_RESOURCE_EXHAUSTED (device memory), the backend's refusal (TB_UNIMPLEMENTED).
TWINBIT_API tb_code tb_bind(const tb_engine* engine, const tb_artifact* art, const char* entry_name,
                            tb_bound** out);

// The bound entry's description (as tb_artifact_entry gives it; `name` valid until tb_unbind).
TWINBIT_API tb_code tb_bound_entry(const tb_bound* bound, tb_entry_info* info);

// The backend's own handle of the binding (what its weights_bind returned) into *handle, for the
// entries of tb_backend_proc that take one (twinbit/cuda_device.h). Valid until tb_unbind.
TWINBIT_API tb_code tb_bound_backend_handle(const tb_bound* bound, void** handle);

// Releases the binding (NULL, or a binding that is not open, is ignored); the artifact's mapping
// and the backend go with the last user.
TWINBIT_API void tb_unbind(tb_bound* bound);

// ---- operations ---------------------------------------------------------------------------------
// Every shape, leading dimension and pointer is checked before the backend sees the call; the
// message names the argument ("ldx 255 must be >= K (256)"). M is 1 .. 2^24 rows.

// y[m][ldy] = the gemm of a strip entry on x: x holds m rows of ldx floats (ldx >= K; k < K read),
// y m rows of ldy floats (ldy >= N; only the N columns of each row are written). TB_ACT_F32: float
// activations; TB_ACT_I8: x is quantised once per call by the backend's quantiser
// (tb_quantize_i8), then the int8 gemm runs. TB_INVALID_ARGUMENT for an entry of float rows.
TWINBIT_API tb_code tb_bound_gemm(const tb_bound* bound, int64_t m, tb_act_mode mode, const float* x,
                                  int64_t ldx, float* y, int64_t ldy);

// y[rows] = W x[cols] for an entry of float rows. TB_INVALID_ARGUMENT for a strip entry.
TWINBIT_API tb_code tb_bound_gemv_f32(const tb_bound* bound, const float* x, float* y);

// ya = A x and yb = B x for two float-row entries of the same shape bound on the same backend (one
// pass over x where the backend has a fused entry; the bits are those of two tb_bound_gemv_f32).
// TB_FAILED_PRECONDITION when they were bound on different backends.
TWINBIT_API tb_code tb_bound_gemv_pair(const tb_bound* a, const tb_bound* b, const float* x, float* ya,
                                       float* yb);

// One gated-delta state step on `engine`, arguments as the backend ABI's (tb_gdn_args,
// twinbit/backend.h): state [vh][kd][vd] updated in place, o [vh][vd] written.
TWINBIT_API tb_code tb_gdn_delta(const tb_engine* engine, const tb_gdn_args* args);

// The I8 activation quantiser on `engine` (== the reference's quantize_activations): x [m][ldx]
// (k < K read) into codes xq [m][ldxq] (Kp = 32*ceil(k/32) per row, padding 0) and scales
// xd [m][ldxd] (Kp/32 per row). ldx >= k, ldxq >= Kp, ldxd >= Kp/32.
TWINBIT_API tb_code tb_quantize_i8(const tb_engine* engine, int64_t m, int64_t k, const float* x, int64_t ldx,
                                   int8_t* xq, int64_t ldxq, float* xd, int64_t ldxd);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_ENGINE_H
