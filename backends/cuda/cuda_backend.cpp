// The CUDA backend's C interface: device-resident weights, pinned staging, one synchronisation
// per call (a large gemm output: one per piece, each copied out as it lands; gemm_offload.cpp).
// Its state (contexts, bound weights, lanes): backend_state.h.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "artifacts/read_guard.h"
#include "backends/cuda/backend_state.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_calls.h"
#include "backends/cuda/quantize_kernels.h"
#include <twinbit/backend_params.hpp>
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"

namespace twinbit::cuda {
namespace {

// ---- describe / supports ---------------------------------------------------------------------

tb_code describe(void* c, tb_backend_info* out, tb_error*) {
  const Ctx& ctx = ctx_of(c);
  *out = {};
  out->name = "cuda";
  out->device = ctx.device_desc.c_str();
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gemv_f32_pair,gdn_delta,quantize_i8,read_floor";
  out->memory_bytes = ctx.memory_bytes;
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc* op, tb_error* err) {
  switch (op->op) {
    case TB_OP_GEMM:
      if (!check_precision(op->prec).ok()) return check_precision(op->prec).to_c(err);
      if (!kernels_have(op->prec)) {
        return Error(TB_UNIMPLEMENTED, "cuda: no kernel for precision %s",
                     prec_name(op->prec)).to_c(err);
      }
      if (op->mode != TB_ACT_F32 && op->mode != TB_ACT_I8) {
        return Error(TB_INVALID_ARGUMENT, "cuda: activation mode %d is unknown",
                     static_cast<int>(op->mode)).to_c(err);
      }
      if (const char* why = gemm_unsupported_reason(op->n, op->k)) {
        return Error(TB_UNIMPLEMENTED, "cuda: %s (K = %lld)", why,
                     static_cast<long long>(op->k)).to_c(err);
      }
      return TB_OK;
    case TB_OP_GEMV_F32:
    case TB_OP_GEMV_F32_PAIR:
    case TB_OP_GDN_DELTA:
    case TB_OP_QUANTIZE_I8:
      return TB_OK;
  }
  return Error(TB_UNIMPLEMENTED, "cuda: operation %d is unknown", static_cast<int>(op->op)).to_c(err);
}

// ---- weights ---------------------------------------------------------------------------------

// Copies host bytes to device memory through two pinned slots: the memcpy into one slot overlaps
// the DMA of the other (pageable sources would serialise every async copy).
Status upload(Ctx& c, void* dst, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(c.bind_mu);
  if (!c.bind_stream) {
    TB_CUDA_TRY(cudaStreamCreateWithFlags(&c.bind_stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2; ++i) {
      if (cudaMallocHost(&c.bind_slot[i], kBindChunk) != cudaSuccess) {
        (void)cudaGetLastError();
        c.bind_slot[i] = nullptr;
        return Error(TB_RESOURCE_EXHAUSTED, "cuda: cannot allocate %zu bytes of pinned staging",
                     kBindChunk);
      }
      TB_CUDA_TRY(cudaEventCreateWithFlags(&c.bind_done[i], cudaEventDisableTiming));
    }
  }
  size_t i = 0;
  for (size_t off = 0; off < bytes; off += kBindChunk, ++i) {
    const size_t len = std::min(kBindChunk, bytes - off);
    const int slot = static_cast<int>(i & 1);
    TB_CUDA_TRY(cudaEventSynchronize(c.bind_done[slot]));  // the slot's previous DMA is done
    // The source is often a mapped artifact: a file that shrank under it faults here (SIGBUS).
    if (!twinbit::artifact::guarded_copy(c.bind_slot[slot], static_cast<const char*>(src) + off, len)) {
      (void)cudaStreamSynchronize(c.bind_stream);  // the other slot's DMA, before dst is freed
      return Error(TB_DATA_LOSS, "cuda: reading the weights to copy them to the device faulted "
                   "at byte %zu of %zu: the artifact file shrank under its mapping (another "
                   "process truncated or is rewriting it)", off, bytes);
    }
    TB_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + off, c.bind_slot[slot], len,
                                cudaMemcpyHostToDevice, c.bind_stream));
    TB_CUDA_TRY(cudaEventRecord(c.bind_done[slot], c.bind_stream));
  }
  TB_CUDA_TRY(cudaStreamSynchronize(c.bind_stream));
  return Status();
}

Status alloc_weights(void** p, size_t bytes, const char* what) {
  if (cudaMalloc(p, bytes) != cudaSuccess) {
    *p = nullptr;
    return device_oom(bytes, what);
  }
  return Status();
}

Status bind_impl(Ctx& c, const tb_weights_view& v, void** out_handle) {
  TB_CUDA_TRY(cudaSetDevice(c.device));
  const auto t0 = std::chrono::steady_clock::now();
  auto b = std::make_unique<Bound>();
  b->id = c.next_bind_id.fetch_add(1);
  b->owner = &c;
  b->kind = v.kind;
  if (v.kind == TB_WEIGHTS_STRIPS) {
    const tb_strips& s = v.strips;
    TB_RETURN_IF_ERROR(check_strips(s));
    if (!kernels_have(s.prec)) {
      return Error(TB_UNIMPLEMENTED, "cuda: no kernel for precision %s", prec_name(s.prec));
    }
    char what[160];
    std::snprintf(what, sizeof what, "the codes of a %s strip set N = %lld, K = %lld",
                  prec_name(s.prec), static_cast<long long>(s.n), static_cast<long long>(s.k));
    TB_RETURN_IF_ERROR(alloc_weights(&b->d_codes, s.codes_bytes, what));
    std::snprintf(what, sizeof what, "the scales of a %s strip set N = %lld, K = %lld",
                  prec_name(s.prec), static_cast<long long>(s.n), static_cast<long long>(s.k));
    TB_RETURN_IF_ERROR(alloc_weights(&b->d_scales, s.scales_bytes, what));
    TB_RETURN_IF_ERROR(upload(c, b->d_codes, s.codes, s.codes_bytes));  // q4 stays packed
    TB_RETURN_IF_ERROR(upload(c, b->d_scales, s.scales, s.scales_bytes));
    b->strips.prec = s.prec;
    b->strips.n = s.n;
    b->strips.k = s.k;
    b->strips.np = s.np;
    b->strips.kp = s.kp;
    b->strips.n_total = s.n_total;
    b->strips.n_begin = s.n_begin;
    b->strips.codes = static_cast<const uint8_t*>(b->d_codes);
    b->strips.scales = static_cast<const uint16_t*>(b->d_scales);
    b->report.bytes = s.codes_bytes + s.scales_bytes;
  } else if (v.kind == TB_WEIGHTS_F32) {
    const tb_matrix_f32& m = v.matrix;
    TB_RETURN_IF_ERROR(check_matrix(m));
    const size_t bytes = static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols) * 4;
    void* p = nullptr;
    TB_RETURN_IF_ERROR(alloc_weights(&p, bytes, "a float matrix"));
    b->d_matrix = static_cast<float*>(p);
    TB_RETURN_IF_ERROR(upload(c, p, m.data, bytes));
    b->rows = m.rows;
    b->cols = m.cols;
    b->report.bytes = bytes;
  } else {
    return Error(TB_INVALID_ARGUMENT, "cuda: weights kind %d is unknown", static_cast<int>(v.kind));
  }
  b->report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *out_handle = b.release();
  return Status();
}

tb_code weights_bind(void* c, const tb_weights_view* v, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  return bind_impl(ctx_of(c), *v, out_handle).to_c(err);
}

// The frees run on the backend's device (cuda:N), whichever device the calling thread had.
void weights_release(void* c, void* handle) {
  (void)cudaSetDevice(ctx_of(c).device);
  delete static_cast<Bound*>(handle);
}

// ---- gemm ------------------------------------------------------------------------------------

tb_code gemm(void* c, void* handle, const tb_gemm_args* a, tb_error* err) {
  return gemm_offload(ctx_of(c), *static_cast<const Bound*>(handle), *a).to_c(err);
}


// ---- gemv ------------------------------------------------------------------------------------

Status gemv_impl(Ctx& c, const Bound& b0, const Bound* b1, const float* x, float* y0, float* y1) {
  if (b0.kind != TB_WEIGHTS_F32 || (b1 && b1->kind != TB_WEIGHTS_F32)) {
    return Error(TB_FAILED_PRECONDITION, "cuda: gemv_f32 needs float matrices, a handle holds strips");
  }
  if (b1 && (b1->rows != b0.rows || b1->cols != b0.cols)) {
    return Error(TB_INVALID_ARGUMENT, "cuda: gemv_f32_pair needs same-shape matrices, got %lld x "
                 "%lld and %lld x %lld", (long long)b0.rows, (long long)b0.cols,
                 (long long)b1->rows, (long long)b1->cols);
  }
  TB_CUDA_TRY(cudaSetDevice(c.device));
  LaneLease lease(c);
  TB_RETURN_IF_ERROR(lease.acquire());
  Lane& l = *lease;
  const size_t in_bytes = static_cast<size_t>(b0.cols) * 4;
  const size_t out_bytes = static_cast<size_t>(b0.rows) * 4 * (b1 ? 2 : 1);
  bool moved = false;
  TB_RETURN_IF_ERROR(grow(l.h_in, in_bytes, "gemv input staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.h_out, out_bytes, "gemv output staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_in, in_bytes, "gemv input", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_out, out_bytes, "gemv output", &moved));
  if (moved) l.drop_graphs();
  std::memcpy(l.h_in.p, x, in_bytes);
  TB_CUDA_TRY(cudaMemcpyAsync(l.d_in.p, l.h_in.p, in_bytes, cudaMemcpyHostToDevice, l.stream));
  GemvLaunch g;
  g.rows = b0.rows;
  g.cols = b0.cols;
  g.w0 = b0.d_matrix;
  g.w1 = b1 ? b1->d_matrix : nullptr;
  g.x = static_cast<const float*>(l.d_in.p);
  g.y0 = static_cast<float*>(l.d_out.p);
  g.y1 = b1 ? g.y0 + b0.rows : nullptr;
  TB_RETURN_IF_ERROR(launch_gemv(g, l.stream));
  TB_CUDA_TRY(cudaMemcpyAsync(l.h_out.p, l.d_out.p, out_bytes, cudaMemcpyDeviceToHost, l.stream));
  TB_CUDA_TRY(cudaStreamSynchronize(l.stream));
  std::memcpy(y0, l.h_out.p, static_cast<size_t>(b0.rows) * 4);
  if (b1) std::memcpy(y1, static_cast<const float*>(l.h_out.p) + b0.rows, static_cast<size_t>(b0.rows) * 4);
  return Status();
}

tb_code gemv_f32(void* c, void* handle, const float* x, float* y, tb_error* err) {
  return gemv_impl(ctx_of(c), *static_cast<const Bound*>(handle), nullptr, x, y, nullptr).to_c(err);
}

tb_code gemv_f32_pair(void* c, void* ha, void* hb, const float* x, float* ya, float* yb,
                      tb_error* err) {
  return gemv_impl(ctx_of(c), *static_cast<const Bound*>(ha), static_cast<const Bound*>(hb), x,
                   ya, yb).to_c(err);
}

// ---- gdn_delta -------------------------------------------------------------------------------

Status gdn_impl(Ctx& c, const tb_gdn_args& a) {
  TB_RETURN_IF_ERROR(check_gdn_args(a));
  TB_CUDA_TRY(cudaSetDevice(c.device));
  LaneLease lease(c);
  TB_RETURN_IF_ERROR(lease.acquire());
  Lane& l = *lease;
  // One packed input (state, q, k, v, g, beta) and one packed output (state, o), in floats.
  const size_t n_state = static_cast<size_t>(a.vh * a.kd * a.vd);
  const size_t n_qk = static_cast<size_t>(a.kh * a.kd), n_v = static_cast<size_t>(a.vh * a.vd);
  const size_t n_h = static_cast<size_t>(a.vh);
  const size_t off_q = n_state, off_k = off_q + n_qk, off_v = off_k + n_qk, off_g = off_v + n_v,
               off_b = off_g + n_h, n_in = off_b + n_h;
  const size_t n_out = n_state + n_v;
  bool moved = false;
  TB_RETURN_IF_ERROR(grow(l.h_in, n_in * 4, "gdn input staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.h_out, n_out * 4, "gdn output staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_in, n_in * 4, "gdn state and inputs", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_out, n_v * 4, "gdn output", &moved));
  if (moved) l.drop_graphs();
  float* h = static_cast<float*>(l.h_in.p);
  std::memcpy(h, a.state, n_state * 4);
  std::memcpy(h + off_q, a.q, n_qk * 4);
  std::memcpy(h + off_k, a.k, n_qk * 4);
  std::memcpy(h + off_v, a.v, n_v * 4);
  std::memcpy(h + off_g, a.g, n_h * 4);
  std::memcpy(h + off_b, a.beta, n_h * 4);
  float* d = static_cast<float*>(l.d_in.p);
  TB_CUDA_TRY(cudaMemcpyAsync(d, h, n_in * 4, cudaMemcpyHostToDevice, l.stream));
  GdnLaunch g;
  g.vh = a.vh;
  g.kh = a.kh;
  g.kd = a.kd;
  g.vd = a.vd;
  g.state = d;
  g.q = d + off_q;
  g.k = d + off_k;
  g.v = d + off_v;
  g.g = d + off_g;
  g.beta = d + off_b;
  g.o = static_cast<float*>(l.d_out.p);
  g.variant = static_cast<GdnVariant>(c.gdn_variant.load(std::memory_order_relaxed));
  TB_RETURN_IF_ERROR(launch_gdn(g, l.stream));
  float* ho = static_cast<float*>(l.h_out.p);
  TB_CUDA_TRY(cudaMemcpyAsync(ho, d, n_state * 4, cudaMemcpyDeviceToHost, l.stream));
  TB_CUDA_TRY(cudaMemcpyAsync(ho + n_state, g.o, n_v * 4, cudaMemcpyDeviceToHost, l.stream));
  TB_CUDA_TRY(cudaStreamSynchronize(l.stream));
  std::memcpy(a.state, ho, n_state * 4);
  std::memcpy(a.o, ho + n_state, n_v * 4);
  return Status();
}

tb_code gdn_delta(void* c, const tb_gdn_args* a, tb_error* err) {
  return gdn_impl(ctx_of(c), *a).to_c(err);
}

// ---- quantize_i8 ------------------------------------------------------------------------------

// Rows packed to (m, k) in pinned staging, one launch (quantize_kernels.h), codes and scales back
// through one copy each, then scattered to the caller's leading dimensions.
Status quantize_impl(Ctx& c, const tb_quantize_args& a) {
  TB_RETURN_IF_ERROR(check_quantize_args(a));
  TB_CUDA_TRY(cudaSetDevice(c.device));
  LaneLease lease(c);
  TB_RETURN_IF_ERROR(lease.acquire());
  Lane& l = *lease;
  const int64_t kp = pad32(a.k), ng = kp / 32;
  const size_t in_bytes = static_cast<size_t>(a.m * a.k) * 4;
  const size_t q_bytes = static_cast<size_t>(a.m * kp), d_bytes = static_cast<size_t>(a.m * ng) * 4;
  bool moved = false;
  TB_RETURN_IF_ERROR(grow(l.h_in, in_bytes, "quantize input staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.h_out, q_bytes + d_bytes, "quantize output staging", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_in, in_bytes, "quantize input", &moved));
  TB_RETURN_IF_ERROR(grow(l.d_out, q_bytes + d_bytes, "quantize output", &moved));
  if (moved) l.drop_graphs();
  auto* h_in = static_cast<float*>(l.h_in.p);
  for (int64_t r = 0; r < a.m; ++r) std::memcpy(h_in + r * a.k, a.x + r * a.ldx, static_cast<size_t>(a.k) * 4);
  TB_CUDA_TRY(cudaMemcpyAsync(l.d_in.p, h_in, in_bytes, cudaMemcpyHostToDevice, l.stream));
  QuantizeLaunch q;
  q.m = a.m;
  q.k = a.k;
  q.x = static_cast<const float*>(l.d_in.p);
  q.ldx = a.k;
  q.xq = static_cast<int8_t*>(l.d_out.p);
  q.ldxq = kp;
  q.xd = reinterpret_cast<float*>(static_cast<char*>(l.d_out.p) + q_bytes);  // q_bytes % 32 == 0
  q.ldxd = ng;
  TB_RETURN_IF_ERROR(launch_quantize_i8(q, l.stream));
  TB_CUDA_TRY(cudaMemcpyAsync(l.h_out.p, l.d_out.p, q_bytes + d_bytes, cudaMemcpyDeviceToHost, l.stream));
  TB_CUDA_TRY(cudaStreamSynchronize(l.stream));
  const auto* hq = static_cast<const int8_t*>(l.h_out.p);
  const auto* hd = reinterpret_cast<const float*>(static_cast<const char*>(l.h_out.p) + q_bytes);
  for (int64_t r = 0; r < a.m; ++r) {
    std::memcpy(a.xq + r * a.ldxq, hq + r * kp, static_cast<size_t>(kp));
    std::memcpy(a.xd + r * a.ldxd, hd + r * ng, static_cast<size_t>(ng) * 4);
  }
  return Status();
}

// ---- read_floor: the bound strips' bytes read once on the device, dispatched like a gemm (a
// lane's stream, one synchronisation), so a gemm's time over it is what the kernels add -------

Status read_floor_impl(Ctx& c, const Bound& b, int64_t m) {
  if (b.kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_INVALID_ARGUMENT, "cuda: read_floor needs strip weights, the handle holds a float matrix");
  }
  if (m < 1) return Error(TB_INVALID_ARGUMENT, "cuda: read_floor: m = %lld (expected >= 1)", (long long)m);
  TB_CUDA_TRY(cudaSetDevice(c.device));
  LaneLease lease(c);
  TB_RETURN_IF_ERROR(lease.acquire());
  Lane& l = *lease;
  const StripLayout layout{b.strips.prec, b.strips.n, b.strips.k};
  TB_RETURN_IF_ERROR(launch_read_bytes(b.d_codes, layout.codes_bytes(), b.d_scales, layout.scales_bytes(), l.stream));
  TB_CUDA_TRY(cudaStreamSynchronize(l.stream));
  return Status();
}

tb_code read_floor(void* c, void* h, int64_t m, tb_error* err) {
  return read_floor_impl(ctx_of(c), *static_cast<const Bound*>(h), m).to_c(err);
}

tb_code quantize_i8(void* c, const tb_quantize_args* a, tb_error* err) {
  return quantize_impl(ctx_of(c), *a).to_c(err);
}

void destroy(void* c) {
  (void)cudaSetDevice(static_cast<Ctx*>(c)->device);
  delete static_cast<Ctx*>(c);
}

// ---- switches (get_proc; their names and values are documented in cuda_backend.h) ------------

Status switch_value(const char* name, int64_t v, int64_t max) {
  if (v < 0 || v > max) {
    return Error(TB_INVALID_ARGUMENT, "%s: value %lld is out of range (expected 0 .. %lld)", name,
                 static_cast<long long>(v), static_cast<long long>(max));
  }
  return Status();
}

template <std::atomic<int> Ctx::*Field, int64_t Max>
tb_code set_int_switch(void* c, int64_t v, tb_error* err, const char* name) {
  Status s = switch_value(name, v, Max);
  if (!s.ok()) return s.to_c(err);
  (ctx_of(c).*Field).store(static_cast<int>(v));
  return TB_OK;
}

template <std::atomic<bool> Ctx::*Field>
tb_code set_bool_switch(void* c, int64_t v, tb_error* err, const char* name) {
  Status s = switch_value(name, v, 1);
  if (!s.ok()) return s.to_c(err);
  (ctx_of(c).*Field).store(v != 0);
  return TB_OK;
}

tb_code sw_use_graphs(void* c, int64_t v, tb_error* err) {
  return set_bool_switch<&Ctx::use_graphs>(c, v, err, "cuda.set_use_graphs");
}
tb_code sw_direct_output(void* c, int64_t v, tb_error* err) {
  return set_bool_switch<&Ctx::direct_output>(c, v, err, "cuda.set_direct_output");
}
tb_code sw_dependent_launch(void* c, int64_t v, tb_error* err) {
  return set_bool_switch<&Ctx::dependent_launch>(c, v, err, "cuda.set_dependent_launch");
}
tb_code sw_direct_output_kib(void* c, int64_t v, tb_error* err) {
  return set_int_switch<&Ctx::direct_output_kib, kMaxDirectOutputKib>(c, v, err, "cuda.set_direct_output_kib");
}
tb_code sw_chunked_output(void* c, int64_t v, tb_error* err) {
  return set_int_switch<&Ctx::output_form, static_cast<int64_t>(OutputForm::kColumnRanges)>(
      c, v, err, "cuda.set_chunked_output");
}
tb_code sw_output_chunks(void* c, int64_t v, tb_error* err) {
  return set_int_switch<&Ctx::output_ranges, kMaxColumnRanges>(c, v, err, "cuda.set_output_chunks");
}
tb_code sw_range_plan(void* c, int64_t v, tb_error* err) {
  return set_int_switch<&Ctx::range_plan, static_cast<int64_t>(RangePlan::kWhole)>(c, v, err, "cuda.set_range_plan");
}
tb_code sw_decode_path(void* c, int64_t v, tb_error* err) {
  return set_int_switch<&Ctx::decode_path, static_cast<int64_t>(DecodePath::kStripBlocks)>(
      c, v, err, "cuda.set_decode_path");
}
tb_code sw_gdn_variant(void* c, int64_t v, tb_error* err) {
  return set_int_switch<&Ctx::gdn_variant, static_cast<int64_t>(GdnVariant::kGeneric)>(
      c, v, err, "cuda.set_gdn_variant");
}

// ---- device-resident calls (get_proc; the spec is twinbit/cuda_device.h) ----------------------

// The strip set of a handle bound on this backend, or why the handle cannot be used.
Status strips_of_handle(const Ctx& c, const void* handle, const char* who, const DeviceStrips** out) {
  const auto* b = static_cast<const Bound*>(handle);
  if (!b) return Error(TB_INVALID_ARGUMENT, "%s: the weights handle is null", who);
  if (b->magic != kBoundMagic || b->owner != &c) {
    return Error(TB_INVALID_ARGUMENT, "%s: the weights handle was not bound on this CUDA backend "
                 "(device %d)", who, c.device);
  }
  if (b->kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_FAILED_PRECONDITION, "%s: the handle holds a float matrix (%lld x %lld), the "
                 "gemm needs strip weights", who, static_cast<long long>(b->rows),
                 static_cast<long long>(b->cols));
  }
  *out = &b->strips;
  return Status();
}

Status null_ctx(const char* who) {
  return Error(TB_INVALID_ARGUMENT, "%s: the backend context is null", who);
}

tb_code workspace_create(void* c, void* const* weights, size_t count, int64_t max_m,
                         tb_cuda_workspace** out, tb_error* err) {
  constexpr const char* kWho = "cuda.workspace_create";
  if (!out) return Error(TB_INVALID_ARGUMENT, "%s: out_workspace is null", kWho).to_c(err);
  *out = nullptr;
  if (!c) return null_ctx(kWho).to_c(err);
  const Ctx& ctx = ctx_of(c);
  std::vector<const DeviceStrips*> strips;
  try {
    strips.resize(weights ? count : 0);
  } catch (const std::exception&) {  // a count no memory holds: refused, never thrown across C
    return Error(TB_RESOURCE_EXHAUSTED, "%s: count = %zu strip sets", kWho, count).to_c(err);
  }
  for (size_t i = 0; i < strips.size(); ++i) {
    Status s = strips_of_handle(ctx, weights[i], kWho, &strips[i]);
    if (!s.ok()) return Error(s.code(), "%s (weights[%zu])", s.message().c_str(), i).to_c(err);
  }
  static const DeviceStrips* const kNone[1] = {nullptr};  // weights given, count 0: never read
  const DeviceStrips* const* list = !weights ? nullptr : strips.empty() ? kNone : strips.data();
  return create_workspace(&ctx, ctx.device, list, count, max_m, out).to_c(err);
}

void workspace_destroy(void*, tb_cuda_workspace* ws) { destroy_workspace(ws); }

tb_code gemm_device_call(void* c, void* weights, tb_cuda_workspace* ws, const tb_gemm_args* args,
                         void* stream, tb_error* err) {
  constexpr const char* kWho = "cuda.gemm_device";
  if (!c) return null_ctx(kWho).to_c(err);
  const Ctx& ctx = ctx_of(c);
  const DeviceStrips* w = nullptr;
  Status s = strips_of_handle(ctx, weights, kWho, &w);
  if (s.ok()) {
    s = gemm_device(&ctx, ctx.device, *w, ws, args, static_cast<cudaStream_t>(stream),
                    static_cast<DecodePath>(ctx.decode_path.load(std::memory_order_relaxed)),
                    ctx.dependent_launch.load(std::memory_order_relaxed));
  }
  return s.to_c(err);
}

tb_code quantize_i8_device_call(void* c, const tb_quantize_args* args, void* stream, tb_error* err) {
  if (!c) return null_ctx("cuda.quantize_i8_device").to_c(err);
  return quantize_i8_device(ctx_of(c).device, args, static_cast<cudaStream_t>(stream)).to_c(err);
}

void* get_proc(void*, const char* name) {
  if (!name) return nullptr;
  static const struct {
    const char* name;
    tb_switch_fn fn;
  } kSwitches[] = {{"cuda.set_use_graphs", sw_use_graphs},
                   {"cuda.set_direct_output", sw_direct_output},
                   {"cuda.set_direct_output_kib", sw_direct_output_kib},
                   {"cuda.set_dependent_launch", sw_dependent_launch},
                   {"cuda.set_chunked_output", sw_chunked_output},
                   {"cuda.set_output_chunks", sw_output_chunks},
                   {"cuda.set_range_plan", sw_range_plan},
                   {"cuda.set_decode_path", sw_decode_path},
                   {"cuda.set_gdn_variant", sw_gdn_variant}};
  for (const auto& p : kSwitches) {
    if (std::strcmp(p.name, name) == 0) return reinterpret_cast<void*>(p.fn);
  }
  // The device-resident calls, each of the type its name has in twinbit/cuda_device.h (the
  // initialisers check the types).
  static const tb_cuda_workspace_create_fn kCreate = workspace_create;
  static const tb_cuda_workspace_destroy_fn kDestroy = workspace_destroy;
  static const tb_cuda_gemm_device_fn kGemm = gemm_device_call;
  static const tb_cuda_quantize_i8_device_fn kQuantize = quantize_i8_device_call;
  static const struct {
    const char* name;
    void* fn;
  } kCalls[] = {{TB_CUDA_WORKSPACE_CREATE, reinterpret_cast<void*>(kCreate)},
                {TB_CUDA_WORKSPACE_DESTROY, reinterpret_cast<void*>(kDestroy)},
                {TB_CUDA_GEMM_DEVICE, reinterpret_cast<void*>(kGemm)},
                {TB_CUDA_QUANTIZE_I8_DEVICE, reinterpret_cast<void*>(kQuantize)}};
  for (const auto& p : kCalls) {
    if (std::strcmp(p.name, name) == 0) return p.fn;
  }
  return nullptr;
}

const tb_backend_iface kIface = {
    .abi_version = TB_BACKEND_ABI_VERSION,
    .struct_size = sizeof(tb_backend_iface),
    .describe = describe,
    .supports = supports,
    .weights_bind = weights_bind,
    .weights_release = weights_release,
    .gemm = gemm,
    .gemv_f32 = gemv_f32,
    .gdn_delta = gdn_delta,
    .destroy = destroy,
    .gemv_f32_pair = gemv_f32_pair,
    .read_floor = read_floor,
    .quantize_i8 = quantize_i8,
    .get_proc = get_proc,
};

Status not_cuda() {
  return Error(TB_INVALID_ARGUMENT, "the backend passed is not a CUDA backend");
}

}  // namespace

bool is_cuda_backend(const tb_backend& b) { return b.iface == &kIface && b.ctx != nullptr; }

Status bind_report(const tb_backend& b, void* handle, BindReport* out) {
  if (!is_cuda_backend(b)) return not_cuda();
  if (!handle) return Error(TB_INVALID_ARGUMENT, "bind_report: null handle");
  *out = static_cast<const Bound*>(handle)->report;
  return Status();
}

Status device_strips(const tb_backend& b, void* handle, DeviceStrips* out) {
  if (!is_cuda_backend(b)) return not_cuda();
  const auto* bound = static_cast<const Bound*>(handle);
  if (!bound || bound->kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_INVALID_ARGUMENT, "device_strips: the handle holds no strip set");
  }
  *out = bound->strips;
  return Status();
}

Status scales_on_device(float* out) {
  cudaStream_t s = nullptr;
  TB_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* d = nullptr;
  Status st;
  if (cudaMalloc(&d, 65536 * 4) != cudaSuccess) st = device_oom(65536 * 4, "scale conversions");
  if (st.ok()) st = launch_scale_to_float_all(d, s);
  if (st.ok()) {
    const cudaError_t e = cudaMemcpyAsync(out, d, 65536 * 4, cudaMemcpyDeviceToHost, s);
    const cudaError_t e2 = e == cudaSuccess ? cudaStreamSynchronize(s) : e;
    if (e2 != cudaSuccess) st = cuda_status(e2, "scale conversions copy back", __FILE__, __LINE__);
  }
  if (d) cudaFree(d);
  cudaStreamDestroy(s);
  return st;
}

Status expf_on_device(uint32_t first_bits, uint64_t count, float* out) {
  constexpr uint64_t kChunk = uint64_t{1} << 26;  // 256 MiB of results per pass
  cudaStream_t s = nullptr;
  TB_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* d = nullptr;
  Status st;
  if (cudaMalloc(&d, std::min(count, kChunk) * 4) != cudaSuccess) {
    st = device_oom(std::min(count, kChunk) * 4, "expf results");
  }
  for (uint64_t done = 0; st.ok() && done < count; done += kChunk) {
    const uint64_t len = std::min(kChunk, count - done);
    st = launch_expf_range(first_bits + static_cast<uint32_t>(done), len, d, s);
    if (st.ok()) {
      const cudaError_t e = cudaMemcpyAsync(out + done, d, len * 4, cudaMemcpyDeviceToHost, s);
      const cudaError_t e2 = e == cudaSuccess ? cudaStreamSynchronize(s) : e;
      if (e2 != cudaSuccess) st = cuda_status(e2, "expf copy back", __FILE__, __LINE__);
    }
  }
  if (d) cudaFree(d);
  cudaStreamDestroy(s);
  return st;
}

}  // namespace twinbit::cuda

namespace {
// The device count, or UNAVAILABLE with the driver's reason.
twinbit::Status cuda_device_count(int* count) {
  *count = 0;
  const cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return twinbit::Error(TB_UNAVAILABLE, "no CUDA device: %s", twinbit::cuda::device_error_text(e).c_str());
  }
  if (*count < 1) return twinbit::Error(TB_UNAVAILABLE, "no CUDA device: the driver reports 0 devices");
  return twinbit::Status();
}

twinbit::Status cuda_device_props(int device, cudaDeviceProp* prop) {
  const cudaError_t pe = cudaGetDeviceProperties(prop, device);
  if (pe != cudaSuccess) {
    (void)cudaGetLastError();
    return twinbit::Error(TB_UNAVAILABLE, "CUDA device %d: %s", device, cudaGetErrorString(pe));
  }
  return twinbit::Status();
}

// "NVIDIA H200 (device 1, 132 SMs)": the device list's name (describe() adds the details).
std::string device_title(int device, const cudaDeviceProp& prop) {
  return twinbit::Format("%s (device %d, %d SMs)", prop.name, device, prop.multiProcessorCount);
}
}  // namespace

extern "C" tb_code tb_backend_devices_cuda(uint32_t host_abi_version, tb_device_info* out,
                                           uint32_t capacity, uint32_t* out_count, tb_error* err) {
  using twinbit::Error;
  *out_count = 0;
  if (host_abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "cuda backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host_abi_version).to_c(err);
  }
  int count = 0;
  twinbit::Status s = cuda_device_count(&count);
  if (!s.ok()) return s.to_c(err);
  for (int d = 0; d < count && static_cast<uint32_t>(d) < capacity; ++d) {
    cudaDeviceProp prop{};
    s = cuda_device_props(d, &prop);
    if (!s.ok()) return s.to_c(err);
    std::snprintf(out[d].name, sizeof(out[d].name), "%s", device_title(d, prop).c_str());
  }
  *out_count = static_cast<uint32_t>(count);
  return TB_OK;
}

extern "C" tb_code tb_backend_create_cuda(uint32_t host_abi_version, tb_backend* out,
                                          tb_error* err, const tb_backend_params* params) {
  using twinbit::Error;
  *out = {};
  if (host_abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "cuda backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host_abi_version).to_c(err);
  }
  // No keys yet; the device index chooses the GPU.
  twinbit::Status s = twinbit::check_param_keys(params, "cuda backend", {});
  int count = 0;
  if (s.ok()) s = cuda_device_count(&count);
  int32_t device = 0;
  if (s.ok()) s = twinbit::choose_device(params, "cuda backend", count, &device);
  cudaDeviceProp prop{};
  if (s.ok()) s = cuda_device_props(device, &prop);
  if (!s.ok()) return s.to_c(err);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  auto* ctx = new (std::nothrow) twinbit::cuda::Ctx;
  if (!ctx) return Error(TB_RESOURCE_EXHAUSTED, "cuda backend: out of host memory").to_c(err);
  ctx->device = device;
  ctx->memory_bytes = prop.totalGlobalMem;
  ctx->device_desc = twinbit::Format(
      "%s (device %d, %d SMs; sm_%d%d, %d MiB L2, %llu MiB; CUDA runtime %d.%d, driver %d.%d)",
      prop.name, device, prop.multiProcessorCount, prop.major, prop.minor, prop.l2CacheSize >> 20,
      static_cast<unsigned long long>(prop.totalGlobalMem >> 20), runtime / 1000,
      (runtime % 1000) / 10, driver / 1000, (driver % 1000) / 10);
  out->iface = &twinbit::cuda::kIface;
  out->ctx = ctx;
  return TB_OK;
}
