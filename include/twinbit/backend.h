// The twinbit backend interface, ABI version 2 (C).
//
// A backend is a table of function pointers (tb_backend_iface) plus an opaque context pointer.
// It is a C interface so that backends built out of tree, by another compiler, can be loaded
// with dlopen: a plugin exports one function, `tb_backend_create_v1` (see the end of this file).
// Built-in backends expose the same entry point under their own name and are listed by the
// build (core never includes a backend header and never branches on a backend's name).
//
// THE PROMISE. Every operation computes exactly the operations of docs/NUMERICS.md, in that
// order, so its output is bit-identical (memcmp) to the scalar reference in core/reference.h:
//   gemm, TB_ACT_F32  == twinbit::ref::gemm_f32
//   gemm, TB_ACT_I8   == twinbit::ref::gemm_i8   (activations already quantised by the caller
//                                                 with twinbit::ref::quantize_activations)
//   gemv_f32         == twinbit::ref::gemv_f32
//   gemv_f32_pair    == twinbit::ref::gemv_f32 applied to each matrix
//   gdn_delta        == twinbit::ref::gdn_delta
//   quantize_i8      == twinbit::ref::quantize_activations
// A backend that cannot do that for some case returns TB_UNIMPLEMENTED from supports() and from
// the operation, with the reason; it never computes something "close enough".
//
// MEMORY. All pointers passed to operations are host pointers. An operation returns when its
// result is in host memory. Inputs are only read; outputs are only written where stated.
//
// THREAD SAFETY. supports() and describe() may be called from any thread at any time. Operations
// on one backend instance may be called concurrently from several host threads, with distinct
// outputs; a backend that cannot do that serialises internally. weights_bind/release must not
// race with an operation that uses the same handle.
//
// A GROWABLE TABLE. tb_backend_iface starts with a header that never changes (abi_version,
// struct_size), then the REQUIRED entries, then the OPTIONAL entries in the order they were
// added. Later versions of this header only append optional entries, so a plugin built against
// an older header declares a smaller struct_size: the host reads only the entries that lie
// inside the plugin's struct_size (TB_IFACE_HAS) and treats the others as absent. A null
// optional entry also means "not provided"; the default is what callers get through
// twinbit::Backend (core/backend.hpp). A table whose abi_version differs from the host's, whose
// struct_size is below TB_IFACE_MIN_SIZE, or which has a null required entry is refused and
// never called - not even destroy (the host cannot trust anything in it; its context leaks).
//
// THE ENTRY SYMBOL keeps its name, `tb_backend_create_v1`, across ABI versions: the "v1" is the
// version of the entry point's calling convention (tb_backend_create_fn), which only grows at its
// end (the creation parameters were appended), so a plugin of any version still reads the host's
// version where it expects it. The ABI version is negotiated through that argument and the
// table's abi_version field, so a plugin of another version is found and refused with a message
// naming both versions (a renamed symbol would only say "not found"). The symbol is renamed only
// if the leading arguments of tb_backend_create_fn ever change.
#ifndef TWINBIT_BACKEND_H
#define TWINBIT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <twinbit/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_BACKEND_ABI_VERSION 2u

// Group width of the quantised formats: one scale per 32 consecutive k of one output column.
#define TB_GROUP 32

typedef enum tb_prec {
  TB_PREC_Q8 = 0,  // int8 codes, one byte each (GGUF q8_0): packers write [-127, 127], and
                   // every backend computes exactly with any int8, -128 included
                   // (docs/NUMERICS.md "Notation")
  TB_PREC_Q4 = 1,  // int4 codes in [-8, 7], two per byte (GGUF q4_0 nibble order)
} tb_prec;

typedef enum tb_act_mode {
  TB_ACT_F32 = 0,  // float activations; float products per weight
  TB_ACT_I8 = 1,   // int8 activation codes + one float scale per (row, group); exact int dots
} tb_act_mode;

typedef enum tb_op {
  TB_OP_GEMM = 0,
  TB_OP_GEMV_F32 = 1,
  TB_OP_GEMV_F32_PAIR = 2,
  TB_OP_GDN_DELTA = 3,
  TB_OP_QUANTIZE_I8 = 4,
} tb_op;

// A strip set in the canonical layout (docs/FORMAT.md), in host memory (often a mapped file):
// a projection, or a range of its columns (a share for one backend or device).
// n, k are the logical sizes of this view; np = 32*ceil(n/32), kp = 32*ceil(k/32).
// n_total is the projection's N and n_begin where this view's columns start inside it (a multiple
// of 32; n_begin + n <= n_total); a whole projection has n_begin = 0, n_total = n. The fold plan
// is split_plan(n_total, k), so a range computes exactly the bits of those columns of the whole
// (docs/NUMERICS.md "Column ranges"). core/strip_layout.h fills these fields.
//   codes  : q8: [np/32][kp/32][32 columns][32 k] int8         (np*kp bytes)
//            q4: [np/32][kp/32][32 columns][16 bytes]          (np*kp/2 bytes)
//                byte j of a column-group: low nibble k=j, high nibble k=j+16, stored code+8
//   scales : [np/32][kp/32][32 columns] IEEE binary16 bits     (np*kp/32 * 2 bytes)
// Padding columns (n >= N) and padding k (k >= K) hold code 0 (q4: nibble 8) and scale 0.
typedef struct tb_strips {
  tb_prec prec;
  int64_t n, k;
  int64_t np, kp;
  const void* codes;
  uint64_t codes_bytes;
  const uint16_t* scales;
  uint64_t scales_bytes;
  int64_t n_total;  // the projection's N (>= 1: a view that leaves it 0 is refused)
  int64_t n_begin;  // first column of this view inside the projection
} tb_strips;

// A row-major float matrix [rows][cols] (gemv_f32 weights).
typedef struct tb_matrix_f32 {
  int64_t rows, cols;
  const float* data;
} tb_matrix_f32;

typedef enum tb_weights_kind {
  TB_WEIGHTS_STRIPS = 0,
  TB_WEIGHTS_F32 = 1,
} tb_weights_kind;

// What weights_bind receives. The memory stays valid and unchanged until weights_release.
typedef struct tb_weights_view {
  tb_weights_kind kind;
  tb_strips strips;      // kind == TB_WEIGHTS_STRIPS
  tb_matrix_f32 matrix;  // kind == TB_WEIGHTS_F32
} tb_weights_view;

// What supports() is asked. Fields that do not apply to the op are 0.
//   gemm:          prec, mode, m, n, k
//   gemv_f32(_pair): n = rows, k = cols
//   gdn_delta:     vh, kh, kd, vd
//   quantize_i8:   m, k
typedef struct tb_op_desc {
  tb_op op;
  tb_prec prec;
  tb_act_mode mode;
  int64_t m, n, k;
  int64_t vh, kh, kd, vd;
} tb_op_desc;

// gemm: y[m][n] for m < M, n < N (the strip set's logical N).
//   mode F32: x  [M][ldx] floats, k < K read (K = the strip set's logical K).
//   mode I8 : xq [M][ldxq] int8 codes, k < Kp read (padding codes are 0);
//             xd [M][ldxd] floats, one per group g < Kp/32.
//   y [M][ldy] floats; only n < N of each row is written.
typedef struct tb_gemm_args {
  tb_act_mode mode;
  int64_t m;
  const float* x;
  int64_t ldx;
  const int8_t* xq;
  int64_t ldxq;
  const float* xd;
  int64_t ldxd;
  float* y;
  int64_t ldy;
} tb_gemm_args;

// gdn_delta: one gated-delta step. State S [vh][kd][vd] is read and written in place.
//   q, k [kh][kd]; v [vh][vd]; g, beta [vh]; o [vh][vd] (written).
typedef struct tb_gdn_args {
  int64_t vh, kh, kd, vd;
  float* state;
  const float* q;
  const float* k;
  const float* v;
  const float* g;
  const float* beta;
  float* o;
} tb_gdn_args;

// quantize_i8: the I8 activation quantiser, exactly twinbit::ref::quantize_activations.
//   x  [m][ldx] floats, k < K read (K = k);
//   xq [m][ldxq] int8 codes, Kp = 32*ceil(k/32) written per row (padding k get code 0);
//   xd [m][ldxd] floats, Kp/32 activation scales written per row.
typedef struct tb_quantize_args {
  int64_t m, k;
  const float* x;
  int64_t ldx;
  int8_t* xq;
  int64_t ldxq;
  float* xd;
  int64_t ldxd;
} tb_quantize_args;

// Identity, filled by describe(). Strings are owned by the backend and live as long as it.
typedef struct tb_backend_info {
  const char* name;         // short, stable, lowercase: "cpu", "cuda", "null"
  const char* device;       // "Intel Xeon ... (2 threads, avx512bw)", "NVIDIA H200 (132 SMs)"
  const char* features;     // comma-separated capability tags: "gemm.q8,gemm.q4,act.f32,..."
  uint64_t memory_bytes;    // memory available for weights (0 = host memory, unbounded)
} tb_backend_info;

typedef struct tb_backend_iface {
  // ---- header: never changes ----
  uint32_t abi_version;  // TB_BACKEND_ABI_VERSION the backend was built against
  uint32_t struct_size;  // sizeof(tb_backend_iface) the backend was built against

  // ---- required entries (ABI 2): all non-null ----
  tb_code (*describe)(void* ctx, tb_backend_info* out_info, tb_error* err);

  // TB_OK if the operation will be performed exactly; otherwise TB_UNIMPLEMENTED (or
  // TB_INVALID_ARGUMENT for an impossible shape) with the reason in err.
  tb_code (*supports)(void* ctx, const tb_op_desc* op, tb_error* err);

  // Takes weights in the canonical layout; keeps what the backend needs (a view of the
  // mapped file, a device copy, native tiles). *out_handle is cleared first and set on success.
  tb_code (*weights_bind)(void* ctx, const tb_weights_view* weights, void** out_handle,
                          tb_error* err);
  void (*weights_release)(void* ctx, void* handle);

  tb_code (*gemm)(void* ctx, void* weights, const tb_gemm_args* args, tb_error* err);
  tb_code (*gemv_f32)(void* ctx, void* weights, const float* x, float* y, tb_error* err);
  tb_code (*gdn_delta)(void* ctx, const tb_gdn_args* args, tb_error* err);

  // Called once, after every bound handle was released.
  void (*destroy)(void* ctx);

  // ---- optional entries, in the order they were added: null or outside struct_size means
  // "not provided". New entries go at the end, never in between. ----

  // (optional) Two same-shape matrices against the same x. Defaults to two gemv_f32 calls.
  tb_code (*gemv_f32_pair)(void* ctx, void* weights_a, void* weights_b, const float* x,
                           float* y_a, float* y_b, tb_error* err);

  // (optional) A pure read of the bound weights' bytes with this backend's parallelism: the
  // floor the gemm is measured against (`twinbit gate`). Defaults to UNIMPLEMENTED.
  tb_code (*read_floor)(void* ctx, void* weights, int64_t m, tb_error* err);

  // (optional) The I8 activation quantiser (tb_quantize_args). Defaults to the scalar reference
  // on the host.
  tb_code (*quantize_i8)(void* ctx, const tb_quantize_args* args, tb_error* err);

  // (optional) A backend-private switch or function, reached by a name the backend documents
  // ("cuda.set_use_graphs"), like ggml's get_proc_address: null for a name it does not know. The
  // caller casts the pointer to the function type the backend documents for that name. Lets
  // tools reach tuning switches without including a backend's C++ header.
  void* (*get_proc)(void* ctx, const char* name);
} tb_backend_iface;

// The type of a backend-private SWITCH reached through get_proc: a named integer setting of a
// live backend (a boolean 0/1 or an enumerator), for A/B measurements in one process. Names are
// "<backend>.<switch>"; each backend documents its names and valid values (a bad value is
// INVALID_ARGUMENT naming it). Not thread-safe against operations of the same backend unless
// the backend says so.
typedef tb_code (*tb_switch_fn)(void* ctx, int64_t value, tb_error* err);

// The size of the header and the required entries: the smallest struct_size accepted.
#define TB_IFACE_MIN_SIZE \
  (offsetof(tb_backend_iface, destroy) + sizeof(((tb_backend_iface*)0)->destroy))

// Whether `iface` (a const tb_backend_iface*) provides `member`: the member lies inside the
// table's declared struct_size AND is non-null. The member is read only when it lies inside.
#define TB_IFACE_HAS(iface, member)                                                   \
  ((uint64_t)(iface)->struct_size >=                                                  \
       (uint64_t)(offsetof(tb_backend_iface, member) + sizeof((iface)->member)) &&    \
   (iface)->member != NULL)

typedef struct tb_backend {
  const tb_backend_iface* iface;
  void* ctx;
} tb_backend;

// ---- Creation: parameters, devices and the entry point -------------------------------------
//
// A backend is created from a spec (core/backend_spec.h: "cpu,threads=8", "cuda:1") whose
// device and key/value parameters reach it through tb_backend_params. Each backend validates them
// exactly at creation: an unknown key or a bad value is TB_INVALID_ARGUMENT quoting it and listing
// the valid keys or values; a device index it does not have is TB_UNAVAILABLE naming the count.
// docs/BACKENDS.md lists every built-in backend's keys.

typedef struct tb_backend_param {
  const char* key;    // [a-z0-9_]+, NUL-terminated
  const char* value;  // NUL-terminated
} tb_backend_param;

// Owned by the caller, valid during the create call only (a backend copies what it keeps).
typedef struct tb_backend_params {
  int32_t device;                 // device index; -1 = the backend's default device
  const tb_backend_param* items;  // `count` distinct keys, in the order the spec gave them
  uint32_t count;
} tb_backend_params;

// The entry point of a backend. `host_abi_version` is the caller's TB_BACKEND_ABI_VERSION; a
// backend that does not speak it returns TB_FAILED_PRECONDITION naming both versions. `params`
// may be NULL (default device, no parameters). Returns TB_UNAVAILABLE when the backend cannot
// run here (no device). The parameters come last so that a plugin of ABI version 1, which knows
// only the first three arguments, still reads them where they are and refuses by version.
typedef tb_code (*tb_backend_create_fn)(uint32_t host_abi_version, tb_backend* out_backend,
                                        tb_error* err, const tb_backend_params* params);

// One device a backend can be created on (the index is its position in the list).
#define TB_DEVICE_NAME_CAPACITY 256
typedef struct tb_device_info {
  char name[TB_DEVICE_NAME_CAPACITY];  // NUL-terminated: "NVIDIA H200 (device 1, 132 SMs)"
} tb_device_info;

// (optional) Lists the devices of a backend without creating it: writes min(count, capacity)
// entries to `out` and the number of devices to *out_count. TB_UNAVAILABLE with the reason when
// the backend cannot run here (no driver). A backend without this function has one device, 0.
typedef tb_code (*tb_backend_devices_fn)(uint32_t host_abi_version, tb_device_info* out,
                                         uint32_t capacity, uint32_t* out_count, tb_error* err);

// The symbols a plugin shared library exports: the entry point, and optionally its devices (the
// names stay across ABI versions; see the top of this file).
#define TB_PLUGIN_ENTRY_SYMBOL "tb_backend_create_v1"
#define TB_PLUGIN_DEVICES_SYMBOL "tb_backend_devices_v1"

// Marks a plugin's exported functions. Build a plugin with hidden visibility by default (nothing
// of its internals, nor of the plugin SDK it links, is then visible to the host) and put this on
// the entry point (and the devices function) only:
//   extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(uint32_t, tb_backend*, tb_error*,
//                                                          const tb_backend_params*);
#if defined(__GNUC__) || defined(__clang__)
#define TB_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define TB_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_BACKEND_H
