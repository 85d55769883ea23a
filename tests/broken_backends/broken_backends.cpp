#include "tests/broken_backends/broken_backends.h"

#include <atomic>
#include <cstring>
#include <new>
#include <vector>

#include <twinbit/backend_params.hpp>
#include "backends/cpu/cpu_backend.h"
#include "core/reference.h"
#include <twinbit/status.hpp>

namespace {

using twinbit::Error;
using namespace twinbit::testing;

enum class Breakage { flip_bit, last_column, first_element, float_ops, second_call, declines_at_call, counts_quantize, none };

void flip_lowest_bit(float& f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u ^= 1u;
  std::memcpy(&f, &u, 4);
}

struct Ctx {
  Breakage breakage;
  // broken_first_element computes with the CPU backend underneath (the demo and run-model tests
  // run it on whole models, where the scalar reference takes minutes); {} for the others.
  tb_backend cpu{};
};

struct Bound {
  tb_weights_view view;
  int64_t gemm_calls = 0;  // on this binding (broken_second_call)
  void* cpu_handle = nullptr;  // the CPU backend's binding, when the context has one
};

tb_code describe(void* ctx, tb_backend_info* out, tb_error*) {
  *out = {};
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gdn_delta,reference";
  switch (static_cast<Ctx*>(ctx)->breakage) {
    case Breakage::flip_bit:
      out->name = "broken_flip_bit";
      out->device = "test backend: flips one bit of y[1][5] at M 3, N 33, K 96";
      break;
    case Breakage::last_column:
      out->name = "broken_last_column";
      out->device = "test backend: never writes column N-1 when N % 32 != 0";
      break;
    case Breakage::first_element:
      out->name = "broken_first_element";
      out->device = "test backend: the CPU backend, flipping one bit of y[0][0] in every gemm";
      out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gdn_delta";
      break;
    case Breakage::float_ops:
      out->name = "broken_float_ops";
      out->device = "test backend: flips one bit of gemv_f32, gemv_f32_pair and gdn_delta outputs";
      out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gemv_f32_pair,gdn_delta,reference";
      break;
    case Breakage::second_call:
      out->name = "broken_second_call";
      out->device = "test backend: flips one bit of y[0][0] in the second gemm on a binding";
      break;
    case Breakage::declines_at_call:
      out->name = "declines_at_call";
      out->device = "test backend: supports() accepts every op, every gemm answers UNIMPLEMENTED";
      break;
    case Breakage::counts_quantize:
      out->name = "counts_quantize";
      out->device = "test backend: the scalar reference, counting its quantize_i8 calls";
      break;
    case Breakage::none:
      out->name = "test_reference";
      out->device = "test backend: the scalar reference, unbroken";
      out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gemv_f32_pair,gdn_delta,reference";
      break;
  }
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc*, tb_error*) { return TB_OK; }

tb_code weights_bind(void* ctx, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return Error(TB_RESOURCE_EXHAUSTED, "broken backend: out of memory").to_c(err);
  const tb_backend& cpu = static_cast<Ctx*>(ctx)->cpu;
  if (cpu.iface) {
    if (tb_code c = cpu.iface->weights_bind(cpu.ctx, view, &b->cpu_handle, err); c != TB_OK) {
      delete b;
      return c;
    }
  }
  *out_handle = b;
  return TB_OK;
}

void weights_release(void* ctx, void* handle) {
  auto* b = static_cast<Bound*>(handle);
  const tb_backend& cpu = static_cast<Ctx*>(ctx)->cpu;
  if (cpu.iface && b->cpu_handle) cpu.iface->weights_release(cpu.ctx, b->cpu_handle);
  delete b;
}

tb_code gemm(void* ctx, void* handle, const tb_gemm_args* a, tb_error* err) {
  if (static_cast<Ctx*>(ctx)->breakage == Breakage::declines_at_call) {
    return Error(TB_UNIMPLEMENTED, "declines_at_call backend: gemm declined at the call").to_c(err);
  }
  const tb_backend& cpu = static_cast<Ctx*>(ctx)->cpu;
  if (cpu.iface) {  // broken_first_element: the CPU backend's bits, one of them flipped
    if (tb_code c = cpu.iface->gemm(cpu.ctx, static_cast<Bound*>(handle)->cpu_handle, a, err); c != TB_OK) {
      return c;
    }
    flip_lowest_bit(a->y[0]);
    return TB_OK;
  }
  const tb_strips& w = static_cast<Bound*>(handle)->view.strips;
  std::vector<float> y(static_cast<size_t>(a->m * w.n));
  if (a->mode == TB_ACT_F32) {
    twinbit::ref::gemm_f32(w, a->m, a->x, a->ldx, y.data(), w.n);
  } else {
    twinbit::ref::gemm_i8(w, a->m, a->xq, a->ldxq, a->xd, a->ldxd, y.data(), w.n);
  }
  const Breakage br = static_cast<Ctx*>(ctx)->breakage;
  if (br == Breakage::flip_bit && a->m == kFlipM && w.n == kFlipN && w.k == kFlipK) {
    flip_lowest_bit(y[kFlipRow * w.n + kFlipCol]);
  }
  if (br == Breakage::second_call && ++static_cast<Bound*>(handle)->gemm_calls == 2) {
    flip_lowest_bit(y[0]);
  }
  const int64_t cols = br == Breakage::last_column && w.n % 32 != 0 ? w.n - 1 : w.n;
  for (int64_t r = 0; r < a->m; ++r) {
    std::memcpy(a->y + r * a->ldy, y.data() + r * w.n, static_cast<size_t>(cols) * 4);
  }
  return TB_OK;
}

bool breaks_float_ops(void* ctx) { return static_cast<Ctx*>(ctx)->breakage == Breakage::float_ops; }

tb_code gemv_f32(void* ctx, void* handle, const float* x, float* y, tb_error*) {
  const tb_matrix_f32& w = static_cast<Bound*>(handle)->view.matrix;
  twinbit::ref::gemv_f32(w, x, y);
  if (breaks_float_ops(ctx)) flip_lowest_bit(y[w.rows - 1]);
  return TB_OK;
}

tb_code gemv_f32_pair(void* ctx, void* a, void* b, const float* x, float* ya, float* yb, tb_error*) {
  twinbit::ref::gemv_f32(static_cast<Bound*>(a)->view.matrix, x, ya);
  twinbit::ref::gemv_f32(static_cast<Bound*>(b)->view.matrix, x, yb);
  if (breaks_float_ops(ctx)) flip_lowest_bit(yb[0]);
  return TB_OK;
}

tb_code gdn_delta(void* ctx, const tb_gdn_args* a, tb_error*) {
  twinbit::ref::gdn_delta(*a);
  if (breaks_float_ops(ctx)) {
    flip_lowest_bit(a->o[0]);
    flip_lowest_bit(a->state[a->vh * a->kd * a->vd - 1]);
  }
  return TB_OK;
}

void destroy(void* ctx) {
  auto* c = static_cast<Ctx*>(ctx);
  if (c->cpu.iface) {
    c->cpu.iface->destroy(c->cpu.ctx);
    delete c;  // the one kind of context made per creation (create_first_element)
  }
}

// counts_quantize: the reference quantiser, counted; the count is read through get_proc.
std::atomic<int64_t> quantize_calls{0};

tb_code quantize_i8(void*, const tb_quantize_args* a, tb_error*) {
  quantize_calls.fetch_add(1);
  twinbit::ref::quantize_activations(a->m, a->k, a->x, a->ldx, a->xq, a->ldxq, a->xd, a->ldxd);
  return TB_OK;
}

int64_t read_quantize_calls() { return quantize_calls.load(); }

void* get_proc(void*, const char* name) {
  return std::strcmp(name, "test.quantize_calls") == 0 ? reinterpret_cast<void*>(&read_quantize_calls) : nullptr;
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
    .gemv_f32_pair = nullptr,
    .read_floor = nullptr,
    .quantize_i8 = nullptr,
    .get_proc = nullptr,
};

// The same table with its own pair entry (the two above leave the pair to core's default).
const tb_backend_iface kIfaceWithPair = [] {
  tb_backend_iface t = kIface;
  t.gemv_f32_pair = gemv_f32_pair;
  return t;
}();

const tb_backend_iface kIfaceCounting = [] {
  tb_backend_iface t = kIface;
  t.quantize_i8 = quantize_i8;
  t.get_proc = get_proc;
  return t;
}();

Ctx kFlip{Breakage::flip_bit};
Ctx kLastColumn{Breakage::last_column};
Ctx kFirstElement{Breakage::first_element};
Ctx kFloatOps{Breakage::float_ops};
Ctx kSecondCall{Breakage::second_call};
Ctx kDeclinesAtCall{Breakage::declines_at_call};
Ctx kCountsQuantize{Breakage::counts_quantize};
Ctx kNone{Breakage::none};

tb_code create(uint32_t host, Ctx* ctx, tb_backend* out, tb_error* err,
               const tb_backend_params* params) {
  *out = {};
  if (host != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "broken backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host).to_c(err);
  }
  const twinbit::Status s = twinbit::check_param_keys(params, "broken backend", {});
  if (!s.ok()) return s.to_c(err);
  const bool with_pair = ctx->breakage == Breakage::float_ops || ctx->breakage == Breakage::none;
  out->iface = ctx->breakage == Breakage::counts_quantize ? &kIfaceCounting
                : with_pair                                  ? &kIfaceWithPair
                                                             : &kIface;
  out->ctx = ctx;
  return TB_OK;
}

}  // namespace

extern "C" tb_code tb_backend_create_broken_flip_bit(uint32_t host, tb_backend* out, tb_error* err, const tb_backend_params* params) {
  return create(host, &kFlip, out, err, params);
}

extern "C" tb_code tb_backend_create_broken_last_column(uint32_t host, tb_backend* out,
                                                        tb_error* err, const tb_backend_params* params) {
  return create(host, &kLastColumn, out, err, params);
}

// A context of its own per creation, holding the CPU backend it computes with.
extern "C" tb_code tb_backend_create_broken_first_element(uint32_t host, tb_backend* out,
                                                          tb_error* err, const tb_backend_params* params) {
  if (tb_code c = create(host, &kFirstElement, out, err, params); c != TB_OK) return c;
  auto* ctx = new (std::nothrow) Ctx{Breakage::first_element};
  if (!ctx) return Error(TB_RESOURCE_EXHAUSTED, "broken backend: out of memory").to_c(err);
  if (tb_code c = tb_backend_create_cpu(TB_BACKEND_ABI_VERSION, &ctx->cpu, err, nullptr); c != TB_OK) {
    delete ctx;
    *out = {};
    return c;
  }
  out->ctx = ctx;
  return TB_OK;
}

extern "C" tb_code tb_backend_create_broken_float_ops(uint32_t host, tb_backend* out, tb_error* err, const tb_backend_params* params) {
  return create(host, &kFloatOps, out, err, params);
}

extern "C" tb_code tb_backend_create_broken_second_call(uint32_t host, tb_backend* out, tb_error* err,
                                                        const tb_backend_params* params) {
  return create(host, &kSecondCall, out, err, params);
}

extern "C" tb_code tb_backend_create_declines_at_call(uint32_t host, tb_backend* out, tb_error* err,
                                                      const tb_backend_params* params) {
  return create(host, &kDeclinesAtCall, out, err, params);
}

extern "C" tb_code tb_backend_create_counts_quantize(uint32_t host, tb_backend* out, tb_error* err,
                                                     const tb_backend_params* params) {
  return create(host, &kCountsQuantize, out, err, params);
}

extern "C" tb_code tb_backend_create_test_reference(uint32_t host, tb_backend* out, tb_error* err, const tb_backend_params* params) {
  return create(host, &kNone, out, err, params);
}
