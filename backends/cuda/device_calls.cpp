// The device-resident calls (device_calls.h). Every check runs before the first enqueue, so a
// refused call leaves the stream, and a capture in progress on it, untouched.
#include "backends/cuda/device_calls.h"

#include <algorithm>
#include <initializer_list>
#include <new>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/quantize_kernels.h"
#include "core/op_checks.h"

namespace twinbit::cuda {
namespace {

constexpr const char* kGemm = "cuda.gemm_device";
constexpr const char* kQuantize = "cuda.quantize_i8_device";
constexpr const char* kCreate = "cuda.workspace_create";

Status prefixed(const char* who, const Status& s) {
  return s.ok() ? s : Status(s.code(), Format("%s: %s", who, s.message().c_str()));
}

// Makes `device` current for the scope and restores the caller's device after: an engine's
// threads keep the device they chose.
class DeviceScope {
 public:
  explicit DeviceScope(int device) : device_(device) {}
  ~DeviceScope() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  Status enter() {
    TB_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device_) {
      TB_CUDA_TRY(cudaSetDevice(device_));
      switched_ = true;
    }
    return Status();
  }

 private:
  int device_, previous_ = 0;
  bool switched_ = false;
};

// While a capture is in progress in "global" mode (cudaStreamBeginCapture's default), the
// runtime refuses calls it deems unsafe from any capturing thread; the plan's first-use queries
// and settings (occupancy, device and kernel attributes) touch no stream, so this thread runs
// them in relaxed mode and restores its own mode after. Launches are captured either way.
class RelaxedCaptureScope {
 public:
  RelaxedCaptureScope() { exchanged_ = cudaThreadExchangeStreamCaptureMode(&mode_) == cudaSuccess; }
  ~RelaxedCaptureScope() {
    if (exchanged_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool exchanged_ = false;
};

// `p` is memory a kernel on `device` can read or write: device memory of that device, managed
// memory, or mapped pinned host memory. A pageable host pointer would fault inside the kernel and
// poison the context, so it is refused here, by name.
Status check_device_pointer(const char* who, const char* what, const void* p, int device) {
  cudaPointerAttributes at{};
  const cudaError_t e = cudaPointerGetAttributes(&at, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Error(TB_INVALID_ARGUMENT, "%s: %s = %p is not memory the CUDA runtime knows (%s)", who,
                 what, p, cudaGetErrorString(e));
  }
  switch (at.type) {
    case cudaMemoryTypeDevice:
      if (at.device != device) {
        return Error(TB_INVALID_ARGUMENT, "%s: %s is memory of device %d, the backend runs on "
                     "device %d", who, what, at.device, device);
      }
      return Status();
    case cudaMemoryTypeManaged:
      return Status();
    case cudaMemoryTypeHost:
      if (at.devicePointer) return Status();
      return Error(TB_INVALID_ARGUMENT, "%s: %s is pinned host memory the device cannot address "
                   "(not mapped)", who, what);
    default:
      return Error(TB_INVALID_ARGUMENT, "%s: %s = %p is host memory (expected device memory: "
                   "this call copies nothing)", who, what, p);
  }
}

// The stream belongs to `device` (the current device here). Older runtimes cannot say; a
// stream of another device then fails at the launch, with the runtime's error.
Status check_stream(const char* who, cudaStream_t stream, int device) {
#if CUDART_VERSION >= 12080
  int on = -1;
  const cudaError_t e = cudaStreamGetDevice(stream, &on);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Error(TB_INVALID_ARGUMENT, "%s: the stream is not usable (%s)", who, cudaGetErrorString(e));
  }
  if (on != device) {
    return Error(TB_INVALID_ARGUMENT, "%s: the stream belongs to device %d, the backend runs on "
                 "device %d", who, on, device);
  }
#else
  (void)who;
  (void)stream;
  (void)device;
#endif
  return Status();
}

// A pointer's alignment, refused by name before a kernel would fault on it.
Status check_aligned(const char* who, const char* what, const void* p, uintptr_t bytes, const char* why) {
  if (reinterpret_cast<uintptr_t>(p) % bytes == 0) return Status();
  return Error(TB_INVALID_ARGUMENT, "%s: %s = %p is not %zu-byte aligned (%s)", who, what, p,
               static_cast<size_t>(bytes), why);
}

struct NamedPointer {
  const char* name;
  const void* p;
};

// The device's answers about the call: the stream's device and each array's memory. Skipped while
// the stream captures: some drivers refuse the stream query then (cudaErrorStreamCaptureUnsupported,
// driver-dependent, not toolkit-dependent), and a refusal invalidates the caller's capture, which
// costs more than the check is worth. cudaStreamIsCapturing is the query every driver answers.
Status check_on_device(const char* who, cudaStream_t stream, int device,
                       std::initializer_list<NamedPointer> arrays) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(stream, &capture);
  if (e == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return Error(TB_INVALID_ARGUMENT, "%s: the default stream takes no work while another stream "
                 "of the device captures (pass the capturing stream)", who);
  }
  TB_CUDA_TRY(e);
  if (capture != cudaStreamCaptureStatusNone) return Status();
  TB_RETURN_IF_ERROR(check_stream(who, stream, device));
  for (const NamedPointer& a : arrays) TB_RETURN_IF_ERROR(check_device_pointer(who, a.name, a.p, device));
  return Status();
}

WorkspaceNeed max_need(const DeviceStrips& w, int64_t max_m) {
  // Sized at M = 1 and at max_m: decode counts its counters per strip block, prefill per row tile.
  const WorkspaceNeed one = workspace_need(w, 1), most = workspace_need(w, max_m);
  return {std::max(one.partial_floats, most.partial_floats), std::max(one.counter_count, most.counter_count)};
}

}  // namespace

WorkspaceNeed workspace_need(const DeviceStrips& w, int64_t m) {
  return {gemm_partial_floats(w, m), gemm_counter_count(w, m)};
}

Status check_workspace_request(const DeviceStrips* const* w, size_t count, int64_t max_m) {
  if (!w || count < 1) {
    return Error(TB_INVALID_ARGUMENT, "%s: no weights to size the workspace for (weights %s, "
                 "count %zu; expected at least one bound strip set)", kCreate, w ? "set" : "null", count);
  }
  for (size_t i = 0; i < count; ++i) {
    if (!w[i]) return Error(TB_INVALID_ARGUMENT, "%s: weights[%zu] is null", kCreate, i);
  }
  if (max_m < 1 || max_m > kMaxRowsPerLaunch) {
    return Error(TB_INVALID_ARGUMENT, "%s: max_m = %lld is out of range (expected 1 .. %lld rows: "
                 "a device call is one launch)", kCreate, static_cast<long long>(max_m),
                 static_cast<long long>(kMaxRowsPerLaunch));
  }
  return Status();
}

Status check_gemm_device_args(const void* owner, const DeviceStrips& w, const tb_cuda_workspace* ws,
                              const tb_gemm_args* a) {
  if (!a) return Error(TB_INVALID_ARGUMENT, "%s: args is null", kGemm);
  if (!ws) return Error(TB_INVALID_ARGUMENT, "%s: workspace is null (make one with %s)", kGemm, kCreate);
  if (ws->magic != kWorkspaceMagic) {
    return Error(TB_INVALID_ARGUMENT, "%s: the workspace is not one %s made (or it was destroyed)",
                 kGemm, kCreate);
  }
  if (ws->owner != owner) {
    return Error(TB_INVALID_ARGUMENT, "%s: the workspace was made by another CUDA backend (device %d)",
                 kGemm, ws->device);
  }
  if (const char* why = gemm_unsupported_reason(w.n, w.k)) {
    return Error(TB_UNIMPLEMENTED, "%s: %s (K = %lld)", kGemm, why, static_cast<long long>(w.k));
  }
  tb_strips shape{};  // the fields check_gemm_args reads
  shape.prec = w.prec;
  shape.n = w.n;
  shape.k = w.k;
  shape.np = w.np;
  shape.kp = w.kp;
  TB_RETURN_IF_ERROR(prefixed(kGemm, check_gemm_args(shape, *a)));
  const bool f32 = a->mode == TB_ACT_F32;
  if ((f32 && a->ldx != w.kp) || (!f32 && (a->ldxq != w.kp || a->ldxd != w.kp / 32)) || a->ldy != w.n) {
    return Error(TB_INVALID_ARGUMENT, "%s: leading dimensions %s = %lld, ldy = %lld (the device "
                 "kernels read dense rows: expected %s, ldy = N = %lld)", kGemm,
                 f32 ? "ldx" : "ldxq, ldxd", static_cast<long long>(f32 ? a->ldx : a->ldxq),
                 static_cast<long long>(a->ldy),
                 f32 ? Format("ldx = K = %lld", static_cast<long long>(w.kp)).c_str()
                     : Format("ldxq = K = %lld, ldxd = K/32 = %lld", static_cast<long long>(w.kp),
                              static_cast<long long>(w.kp / 32)).c_str(),
                 static_cast<long long>(w.n));
  }
  constexpr const char* kVector = "the kernels load activations 16 bytes at a time";
  TB_RETURN_IF_ERROR(f32 ? check_aligned(kGemm, "x", a->x, 16, kVector)
                         : check_aligned(kGemm, "xq", a->xq, 16, kVector));
  if (!f32) TB_RETURN_IF_ERROR(check_aligned(kGemm, "xd", a->xd, 4, "floats"));
  TB_RETURN_IF_ERROR(check_aligned(kGemm, "y", a->y, 4, "floats"));
  if (a->m > ws->max_m) {
    return Error(TB_INVALID_ARGUMENT, "%s: M = %lld is more than the workspace's max_m = %lld", kGemm,
                 static_cast<long long>(a->m), static_cast<long long>(ws->max_m));
  }
  const WorkspaceNeed need = workspace_need(w, a->m);
  if (need.partial_floats > ws->partial_floats || need.counter_count > ws->counter_count) {
    return Error(TB_INVALID_ARGUMENT, "%s: N = %lld, K = %lld at M = %lld needs %zu partial floats "
                 "and %zu counters, the workspace holds %zu and %zu (create it with these weights "
                 "among its strip sets)", kGemm, static_cast<long long>(w.n),
                 static_cast<long long>(w.k), static_cast<long long>(a->m), need.partial_floats,
                 need.counter_count, ws->partial_floats, ws->counter_count);
  }
  return Status();
}

Status create_workspace(const void* owner, int device, const DeviceStrips* const* w, size_t count,
                        int64_t max_m, tb_cuda_workspace** out) {
  *out = nullptr;
  TB_RETURN_IF_ERROR(check_workspace_request(w, count, max_m));
  WorkspaceNeed need;
  for (size_t i = 0; i < count; ++i) {
    const WorkspaceNeed n = max_need(*w[i], max_m);
    need.partial_floats = std::max(need.partial_floats, n.partial_floats);
    need.counter_count = std::max(need.counter_count, n.counter_count);
  }
  DeviceScope scope(device);
  TB_RETURN_IF_ERROR(scope.enter());
  auto* ws = new (std::nothrow) tb_cuda_workspace;
  if (!ws) return Error(TB_RESOURCE_EXHAUSTED, "%s: out of host memory", kCreate);
  ws->owner = owner;
  ws->device = device;
  ws->max_m = max_m;
  ws->partial_floats = need.partial_floats;
  ws->counter_count = need.counter_count;
  const size_t partial_bytes = std::max<size_t>(4, need.partial_floats * 4);
  const size_t counter_bytes = std::max<size_t>(4, need.counter_count * 4);
  void* p = nullptr;
  void* c = nullptr;
  Status st;
  if (cudaMalloc(&p, partial_bytes) != cudaSuccess || cudaMalloc(&c, counter_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    st = Error(TB_RESOURCE_EXHAUSTED, "%s: out of device memory for %zu bytes of slice partials and "
               "%zu of counters (max_m = %lld; %zu of %zu bytes free)", kCreate, partial_bytes,
               counter_bytes, static_cast<long long>(max_m), free_b, total_b);
  }
  if (st.ok()) {
    const cudaError_t e = cudaMemset(c, 0, counter_bytes);  // synchronous: zero before any kernel
    if (e != cudaSuccess) st = cuda_status(e, "cudaMemset(workspace counters)", __FILE__, __LINE__);
  }
  if (!st.ok()) {
    if (p) cudaFree(p);
    if (c) cudaFree(c);
    delete ws;
    return st;
  }
  ws->partial = static_cast<float*>(p);
  ws->counters = static_cast<unsigned*>(c);
  ws->magic = kWorkspaceMagic;
  *out = ws;
  return Status();
}

void destroy_workspace(tb_cuda_workspace* ws) {
  if (!ws || ws->magic != kWorkspaceMagic) return;
  DeviceScope scope(ws->device);
  (void)scope.enter();
  cudaFree(ws->partial);
  cudaFree(ws->counters);
  ws->magic = 0;
  delete ws;
}

Status gemm_device(const void* owner, int device, const DeviceStrips& w, tb_cuda_workspace* ws,
                   const tb_gemm_args* a, cudaStream_t stream, DecodePath decode, bool overlap) {
  TB_RETURN_IF_ERROR(check_gemm_device_args(owner, w, ws, a));
  RelaxedCaptureScope relaxed;
  DeviceScope scope(device);
  TB_RETURN_IF_ERROR(scope.enter());
  GemmLaunch g;
  g.mode = a->mode;
  g.m = a->m;
  if (g.mode == TB_ACT_F32) {
    TB_RETURN_IF_ERROR(check_on_device(kGemm, stream, device, {{"x", a->x}, {"y", a->y}}));
    g.x = a->x;
  } else {
    TB_RETURN_IF_ERROR(check_on_device(kGemm, stream, device, {{"xq", a->xq}, {"xd", a->xd}, {"y", a->y}}));
    g.xq = a->xq;
    g.xd = a->xd;
  }
  g.y = a->y;
  g.partial = ws->partial;
  g.counters = ws->counters;
  g.decode = decode;
  g.overlap_previous = overlap;
  return prefixed(kGemm, launch_gemm(w, g, stream));
}

Status quantize_i8_device(int device, const tb_quantize_args* a, cudaStream_t stream) {
  if (!a) return Error(TB_INVALID_ARGUMENT, "%s: args is null", kQuantize);
  TB_RETURN_IF_ERROR(prefixed(kQuantize, check_quantize_args(*a)));
  TB_RETURN_IF_ERROR(check_aligned(kQuantize, "x", a->x, 4, "floats"));
  TB_RETURN_IF_ERROR(check_aligned(kQuantize, "xd", a->xd, 4, "floats"));
  RelaxedCaptureScope relaxed;
  DeviceScope scope(device);
  TB_RETURN_IF_ERROR(scope.enter());
  TB_RETURN_IF_ERROR(check_on_device(kQuantize, stream, device, {{"x", a->x}, {"xq", a->xq}, {"xd", a->xd}}));
  QuantizeLaunch q;
  q.m = a->m;
  q.k = a->k;
  q.x = a->x;
  q.ldx = a->ldx;
  q.xq = a->xq;
  q.ldxq = a->ldxq;
  q.xd = a->xd;
  q.ldxd = a->ldxd;
  return prefixed(kQuantize, launch_quantize_i8(q, stream));
}

}  // namespace twinbit::cuda
