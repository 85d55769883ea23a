// Device-resident calls of the CUDA backend: a gemm (and the I8 activation quantiser) on
// activations that already live in GPU memory, enqueued on the caller's stream with no host
// synchronisation and no device or pinned allocation, so an engine can capture them in a CUDA
// graph (cudaStreamBeginCapture ... cudaStreamEndCapture) and replay the graph every decode step.
//
// REACHED THROUGH get_proc (twinbit/backend.h, tb_backend_iface::get_proc) by the names below;
// the caller casts the pointer to the type given beside each name. From the host C API:
// tb_backend_proc (twinbit/engine.h) gives the function and `ctx`, tb_bound_backend_handle the
// `weights` handle of a binding; from C++: twinbit::Backend::proc, Backend::raw().ctx and
// BoundWeights::handle(). `weights` is a handle the backend's weights_bind returned for a strip
// set. Backends other than cuda have none of these names. This header is C11 and needs no CUDA
// header: a stream is passed as void* (a cudaStream_t; NULL is the default stream).
//
// NUMERIC CONTRACT. The same kernels, schedule and bits as the backend's gemm entry
// (twinbit::ref::gemm_f32 / gemm_i8 of core/reference.h, docs/NUMERICS.md), and the same bits as
// tb_backend_iface::quantize_i8 (twinbit::ref::quantize_activations).
//
// MEMORY. Every array pointer is a DEVICE pointer (memory of the backend's device, managed
// memory, or mapped pinned host memory). Outside a capture the call asks the device and refuses
// anything else; while the stream captures it does not ask (some drivers refuse such queries
// then, and a refusal would invalidate the capture), so make a call once before capturing it.
// The arrays' extents are the caller's to get right. The gemm kernels read and write dense
// rows, so the leading dimensions must equal the row lengths: ldx == K (mode F32), ldxq == K and
// ldxd == K/32 (mode I8), ldy == N; x and xq are 16-byte aligned, xd and y 4-byte aligned
// (cudaMalloc gives 256). Results are in device memory when the stream's work up to the call is
// done; the call itself returns as soon as the work is enqueued. On sm_90 and newer a mode-I8
// gemm may begin while the kernel before it on the stream still runs (programmatic dependent
// launch, after the quantiser): until that kernel has finished it reads only the bound weights,
// never activations or outputs, so stream order holds as for any launch.
//
// THE WORKSPACE. A gemm whose fold plan has several slices writes slice partials and fold
// counters to a workspace; two gemms whose device work may overlap must not share one. A
// workspace is created once, sized for a set of bound strip sets up to max_m rows, and serves
// one stream: calls enqueued one after another on that stream (or captured in order into one
// graph) share it safely, as the kernels leave its counters at zero; calls on different streams,
// or replays of graphs that use it on different streams at once, need a workspace each. A call
// whose weights and M need more than the workspace holds is refused (INVALID_ARGUMENT naming
// both sizes). Destroy it only when no enqueued work or instantiated graph that uses it will run
// again, and before the backend.
//
// ERRORS are tb_code values with a message in *err, decided before anything is enqueued:
// TB_INVALID_ARGUMENT for a null pointer (named), a host pointer where a device one is needed,
// memory or a stream of another device, a misaligned array, an unknown mode, M outside 1 .. the
// workspace's max_m, leading dimensions other than the dense ones, a workspace or weights handle
// that is not this backend's; TB_FAILED_PRECONDITION for a handle that holds a float matrix, not
// strips; TB_UNIMPLEMENTED for K % 32 != 0 (as for the gemm entry); an error of the CUDA runtime
// as translated by the backend (a stream capture invalidated by the caller, a launch failure).
//
// THREAD SAFETY. Calls may come from any thread; two calls that share a workspace must be
// ordered on one stream (see THE WORKSPACE). The host's current device is restored on return.
#ifndef TWINBIT_CUDA_DEVICE_H
#define TWINBIT_CUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include <twinbit/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

// The get_proc names.
#define TB_CUDA_WORKSPACE_CREATE "cuda.workspace_create"
#define TB_CUDA_WORKSPACE_DESTROY "cuda.workspace_destroy"
#define TB_CUDA_GEMM_DEVICE "cuda.gemm_device"
#define TB_CUDA_QUANTIZE_I8_DEVICE "cuda.quantize_i8_device"

// A gemm workspace in device memory (opaque).
typedef struct tb_cuda_workspace tb_cuda_workspace;

// "cuda.workspace_create": a workspace for gemms of up to `max_m` rows (1 .. 2^20) on any of the
// `count` (>= 1) bound strip sets `weights[0 .. count)` (and on any other strip set whose need
// fits). Allocates device memory and zeroes the counters, synchronously: call it once, before
// any capture, not per step. *out_workspace is cleared first and set on success.
// TB_RESOURCE_EXHAUSTED when the device memory is not there (the message gives the bytes).
typedef tb_code (*tb_cuda_workspace_create_fn)(void* ctx, void* const* weights, size_t count,
                                               int64_t max_m, tb_cuda_workspace** out_workspace,
                                               tb_error* err);

// "cuda.workspace_destroy": frees the workspace (NULL is ignored). See THE WORKSPACE for when.
typedef void (*tb_cuda_workspace_destroy_fn)(void* ctx, tb_cuda_workspace* workspace);

// "cuda.gemm_device": y = the gemm of the bound strip set `weights` on `args` (tb_gemm_args with
// DEVICE pointers and the dense leading dimensions of MEMORY above), enqueued on `stream`.
typedef tb_code (*tb_cuda_gemm_device_fn)(void* ctx, void* weights, tb_cuda_workspace* workspace,
                                          const tb_gemm_args* args, void* stream, tb_error* err);

// "cuda.quantize_i8_device": the I8 activation quantiser on DEVICE pointers (tb_quantize_args;
// any leading dimensions the struct allows), enqueued on `stream`. Needs no workspace: its
// codes and scales are the xq and xd of a following "cuda.gemm_device" in mode I8.
typedef tb_code (*tb_cuda_quantize_i8_device_fn)(void* ctx, const tb_quantize_args* args,
                                                 void* stream, tb_error* err);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_CUDA_DEVICE_H
