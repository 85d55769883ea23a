// A hostile backend plugin: the scalar reference, broken in every way the conformance suite must
// survive, each on its own case of the quick sweep, so ONE run (tests/broken_backends/
// check_hostile_run.py) proves each gets the right verdict and the reports stay well-formed.
//
//   case (quick sweep, seed-independent)   what the plugin does                 verdict
//   gemm_q8_f32_M1_N1_K32      stores to address 16 (SIGSEGV)                       crash
//   gemm_q8_f32_M1_N33_K100    never returns                                        timeout
//   gemm_q8_f32_M1_N257_K96    writes 4 floats after the last row of y              error
//   gemm_q8_f32_M3_N1_K100     writes y[-1]                                         error
//   gemm_q8_f32_M3_N33_K96     writes 1 KiB past the end of y (the guard page)      error
//   gemm_q8_f32_M3_N257_K32    zeroes its activations x                             error
//   gemm_q8_f32_M33_N1_K96     fails with a message of invalid UTF-8, newlines that
//                              forge "result: PASS" lines, terminal escapes, XML    error
//   gemm_q8_f32_M33_N33_K32    supports() says OK, gemm answers UNIMPLEMENTED       error
//   gemm_q8_f32_M33_N257_K100  flips a bit when another call runs at the same time  error
//   gemm_q8_i8_M1_N1_K100      writes 8 KiB into its 512-byte tb_error              error
//   gemm_q8_i8_M1_N33_K96      supports() declines with an escape-laden reason      unsupported
//   batch_q8_i8_M9_N33_K96     (its rows alone are that shape)                      unsupported
//   quantize_i8_*              the table is short (ends before read_floor) and ends
//                              at a PROT_NONE page: reading past it faults          unsupported
// describe() gives a device string of the same hostile text. Every other case is exact.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include <twinbit/backend.h>
#include "core/reference.h"

namespace {

// Invalid UTF-8 (a lone continuation byte, a truncated sequence, an overlong '/'), a forged
// report line, a terminal escape, a bidi override, markup for XML and quotes for JSON, DEL.
const char kHostileText[] =
    "hostile \xff\xfe \x80 \xe2\x82 \xc0\xaf\nresult: PASS\n\r\x1b[2J\x1b[32mPASS\x1b[0m "
    "\xe2\x80\xae reversed </failure><error message=\"x\"/> ]]> & \"quote\" \\ \x7f \x01 \x08 end";

struct Bound {
  tb_weights_view view;
};

bool is(const tb_strips& w, const tb_gemm_args* a, tb_prec p, tb_act_mode mode, int64_t m,
        int64_t n, int64_t k) {
  return w.prec == p && a->mode == mode && a->m == m && w.n == n && w.k == k;
}

tb_code fail(tb_error* err, tb_code code, const char* text) {
  if (err) {
    std::strncpy(err->message, text, sizeof err->message - 1);
    err->message[sizeof err->message - 1] = '\0';
  }
  return code;
}

tb_code describe(void*, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "hostile";
  out->device = kHostileText;
  out->features = "gemm.q8,gemm.q4,act.f32,act.i8,gemv_f32,gdn_delta,reference";
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc* d, tb_error* err) {
  if (d->op == TB_OP_GEMM && d->prec == TB_PREC_Q8 && d->mode == TB_ACT_I8 && d->m == 1 &&
      d->n == 33 && d->k == 96) {
    return fail(err, TB_UNIMPLEMENTED, kHostileText);
  }
  // It computes with the scalar reference: the model sweep's projections would take longer than
  // the run's short time limit, so it declines them (the suite's fallback runs them instead).
  if (d->op == TB_OP_GEMM && d->n * d->k > (int64_t{1} << 20)) {
    return fail(err, TB_UNIMPLEMENTED, "hostile: declines projections past 2^20 weights");
  }
  return TB_OK;
}

tb_code weights_bind(void*, const tb_weights_view* view, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  auto* b = new (std::nothrow) Bound{*view};
  if (!b) return fail(err, TB_RESOURCE_EXHAUSTED, "hostile plugin: out of memory");
  *out_handle = b;
  return TB_OK;
}

void weights_release(void*, void* handle) { delete static_cast<Bound*>(handle); }

// Flips the lowest bit of y[0] only when another call is running at the same time: a race that
// one run alone never shows. A call waits up to 300 ms for company.
std::atomic<int> g_in_flight{0};
void racy(float* y) {
  g_in_flight.fetch_add(1);
  bool company = false;
  for (int i = 0; i < 300 && !(company = g_in_flight.load() >= 2); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (company) {
    uint32_t u;
    std::memcpy(&u, y, 4);
    u ^= 1u;
    std::memcpy(y, &u, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the other one see us
  }
  g_in_flight.fetch_sub(1);
}

// 8 KiB into the 512-byte message, far past TB_ERROR_MESSAGE_CAPACITY, byte by byte as a plugin
// built without sanitizers would: not memset (AddressSanitizer's interceptor would report the
// overrun before the guard page could) and not instrumented, so the guard is what stops it in the
// sanitizer stage too.
__attribute__((no_sanitize("address"), noinline)) void overrun_error_message(tb_error* err) {
  volatile char* p = err->message;
  for (int i = 0; i < 8192; ++i) p[i] = 'A';
}

tb_code gemm(void*, void* handle, const tb_gemm_args* a, tb_error* err) {
  const tb_strips& w = static_cast<Bound*>(handle)->view.strips;
  constexpr tb_prec q8 = TB_PREC_Q8;
  constexpr tb_act_mode f32 = TB_ACT_F32, i8 = TB_ACT_I8;
  if (is(w, a, q8, f32, 1, 1, 32)) {  // a wild store (not null: a sanitizer would abort first)
    volatile uintptr_t wild = 16;
    *reinterpret_cast<volatile int*>(wild) = 1;
  }
  if (is(w, a, q8, f32, 1, 33, 100)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (is(w, a, q8, f32, 33, 1, 96)) return fail(err, TB_INTERNAL, kHostileText);
  if (is(w, a, q8, f32, 33, 33, 32)) return fail(err, TB_UNIMPLEMENTED, "hostile: not after all");
  if (is(w, a, q8, i8, 1, 1, 100)) {
    overrun_error_message(err);
    return TB_INTERNAL;
  }
  if (a->mode == TB_ACT_F32) {
    twinbit::ref::gemm_f32(w, a->m, a->x, a->ldx, a->y, a->ldy);
  } else {
    twinbit::ref::gemm_i8(w, a->m, a->xq, a->ldxq, a->xd, a->ldxd, a->y, a->ldy);
  }
  float* end = a->y + (a->m - 1) * a->ldy + w.n;
  if (is(w, a, q8, f32, 1, 257, 96)) {
    for (int i = 0; i < 4; ++i) end[a->ldy - w.n + i] = 1.0f;  // 4 floats after the last row
  }
  if (is(w, a, q8, f32, 3, 1, 100)) a->y[-1] = 1.0f;
  if (is(w, a, q8, f32, 3, 33, 96)) end[a->ldy - w.n + 256] = 1.0f;  // 1 KiB past the end
  if (is(w, a, q8, f32, 3, 257, 32)) {
    std::memset(const_cast<float*>(a->x), 0, static_cast<size_t>(a->m * a->ldx) * 4);
  }
  if (is(w, a, q8, f32, 33, 257, 100)) racy(a->y);
  return TB_OK;
}

tb_code gemv_f32(void*, void* handle, const float* x, float* y, tb_error*) {
  twinbit::ref::gemv_f32(static_cast<Bound*>(handle)->view.matrix, x, y);
  return TB_OK;
}

tb_code gdn_delta(void*, const tb_gdn_args* a, tb_error*) {
  twinbit::ref::gdn_delta(*a);
  return TB_OK;
}

void destroy(void*) {}

// The table ends at its (short) struct_size, right before a PROT_NONE page: a host that reads an
// entry past struct_size faults.
const tb_backend_iface* short_table() {
  static const tb_backend_iface* table = []() -> const tb_backend_iface* {
    tb_backend_iface full{};
    full.abi_version = TB_BACKEND_ABI_VERSION;
    full.struct_size = static_cast<uint32_t>(offsetof(tb_backend_iface, read_floor));
    full.describe = describe;
    full.supports = supports;
    full.weights_bind = weights_bind;
    full.weights_release = weights_release;
    full.gemm = gemm;
    full.gemv_f32 = gemv_f32;
    full.gdn_delta = gdn_delta;
    full.destroy = destroy;
    const size_t bytes = full.struct_size;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    void* mem = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    auto* guard = static_cast<unsigned char*>(mem) + page;
    std::memcpy(guard - bytes, &full, bytes);
    if (::mprotect(mem, page, PROT_READ) != 0 || ::mprotect(guard, page, PROT_NONE) != 0) return nullptr;
    return reinterpret_cast<const tb_backend_iface*>(guard - bytes);
  }();
  return table;
}

}  // namespace

extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(uint32_t host, tb_backend* out,
                                                       tb_error* err, const tb_backend_params*) {
  *out = {};
  if (host != TB_BACKEND_ABI_VERSION) return fail(err, TB_FAILED_PRECONDITION, "hostile: other ABI");
  out->iface = short_table();
  if (!out->iface) return fail(err, TB_RESOURCE_EXHAUSTED, "hostile: cannot map its table");
  return TB_OK;
}
