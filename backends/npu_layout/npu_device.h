// THE DEVICE SEAM: the few calls the npu_layout backend makes to the RK3588 NPU's matmul runtime,
// with the vendor's semantics and limits (librknnrt's rknn_matmul_* API; docs/NPU.md maps each
// call below to the vendor calls a port makes). Everything above this header is the real backend;
// below it, npu_emulator.cpp implements the calls exactly on the host CPU. A port to a board
// replaces that one file.
//
// The model of the device:
//   - a matmul CONTEXT is created for one (K, N, type) and rows M = 1 .. max_m (the vendor's
//     dynamic shape: only M varies), on ONE NPU core (multi-core masks are reported to fail);
//   - B is bound once, in the native layout (npu_layout.h), as device memory the context reads in
//     place (no relayout: the vendor relayouts only a normal-layout B);
//   - each run: set A (native layout, with this run's M), run, read C (native int32 layout);
//   - a core runs one matmul at a time: the caller serialises the contexts of one core.
// Only int8 x int8 -> int32 is offered: the one RK3588 type whose results are exact integers.
//
// Every limit the device has is enforced and violations return the status codes below, so a
// shape that would fail on the chip fails here too.
#pragma once

#include <cstdint>

namespace twinbit::npu {

// The seam's status codes (the emulator's own, documented in docs/NPU.md; a port translates the
// vendor's RKNN_ERR_* codes and its log lines into these).
enum class DevStatus : int {
  ok = 0,
  null_argument = -1,      // a null context or buffer
  bad_type = -2,           // a matmul type other than int8 x int8 -> int32
  bad_core = -3,           // core index outside 0 .. kCores-1
  k_not_aligned = -4,      // K % 32 != 0 (or K < 32)
  n_not_aligned = -5,      // N % 32 != 0 (or N < 32)
  n_too_large = -6,        // N > 4096 for int8
  m_out_of_range = -7,     // M < 1 or M > the context's max_m
  buffer_size = -8,        // a buffer whose byte count is not the layout's size
  b_not_bound = -9,        // run before bind_b
  a_not_set = -10,         // run before set_a
  c_not_ready = -11,       // read_c before a run (or after set_a changed M)
  out_of_memory = -12,
};
const char* dev_status_name(DevStatus s);

// RKNN's rknn_matmul_type value for int8 x int8 -> int32 (INT8_MM_INT8_TO_INT32 = 2).
enum class MatmulType : int { int8_int8_to_int32 = 2 };

struct MatmulDesc {
  int64_t k = 0, n = 0;    // fixed for the context's life
  int64_t max_m = 0;       // rows a run may have: 1 .. max_m
  MatmulType type = MatmulType::int8_int8_to_int32;
  int core = 0;            // 0 .. kCores-1
};

struct Matmul;  // a context (opaque)

// rknn_matmul_create_dynamic_shape + rknn_matmul_set_core_mask.
DevStatus matmul_create(const MatmulDesc& desc, Matmul** out);
// rknn_create_mem(_from_fd) over native B + rknn_matmul_set_io_mem(B). `b` must stay valid and
// unchanged until the context is destroyed; bytes == b_bytes(K, N).
DevStatus matmul_bind_b(Matmul* ctx, const int8_t* b, uint64_t bytes);
// rknn_matmul_set_dynamic_shape(M) + copy into the A memory + rknn_matmul_set_io_mem(A);
// bytes == a_bytes(m, K).
DevStatus matmul_set_a(Matmul* ctx, int64_t m, const int8_t* a, uint64_t bytes);
// rknn_matmul_run: C = A x B, int32, exact.
DevStatus matmul_run(Matmul* ctx);
// The C memory's contents (native int32 [N/4][M][4]); count == c_elems(M, N).
DevStatus matmul_read_c(const Matmul* ctx, int32_t* c, uint64_t count);
// rknn_matmul_destroy. Null is a no-op.
void matmul_destroy(Matmul* ctx);

// What this implementation of the seam is ("RK3588 NPU matmul, emulated on the host CPU").
const char* device_name();

// True for the host emulator (npu_emulator.cpp), false for a port to the chip: the backend then
// declares the capability tag "emulated" and the runtime's default plan leaves it out.
bool emulated();
// Matmul runs since the process started (all contexts): tests compare it with the mapping's count.
uint64_t runs_so_far();

}  // namespace twinbit::npu
