// Deliberately broken backends, for proving that the conformance suite and the porting check
// catch what they must. All are the scalar reference underneath (but broken_first_element, which
// is the CPU backend underneath), broken in one precise, known way:
//
//   broken_flip_bit     gemm at exactly M = 3, N = 33, K = 96 (any precision and mode) flips the
//                       lowest mantissa bit of y[1][5]: 1 of 99 outputs differs, by 1 ulp.
//   broken_last_column  gemm with N % 32 != 0 never writes column N - 1 of any row: M of M*N
//                       outputs differ (they keep what the caller's buffer held).
//   broken_first_element  every gemm flips the lowest mantissa bit of y[0][0]: 1 of M*N outputs
//                       differs, by 1 ulp, whatever the shape (what any end-to-end run must see;
//                       the CPU backend computes, so a whole model runs in seconds).
//   broken_float_ops    gemm is exact; gemv_f32 flips the lowest mantissa bit of y[rows - 1];
//                       its own gemv_f32_pair entry flips that bit of y_b[0] (y_a exact);
//                       gdn_delta flips it in o[0][0] and in the last element of the state.
//   broken_second_call  the second gemm on a binding flips the lowest mantissa bit of y[0][0]
//                       (a replay that goes wrong); every other call is exact.
// Everything else (every other op and shape) is exact.
//
// Not broken but unwilling: declines_at_call accepts every op at supports() and answers every
// gemm with UNIMPLEMENTED (what the runtime's fallback at the call must handle).
// counts_quantize is the exact reference with its own quantize_i8 entry, counting the calls;
// get_proc("test.quantize_calls") gives the count as an int64_t (*)() (per process).
//
// And the control: test_reference is the scalar reference for every op, gemv_f32_pair
// included, broken nowhere.
#pragma once

#include <twinbit/backend.h>

extern "C" {
tb_code tb_backend_create_broken_flip_bit(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                           const tb_backend_params* params);
tb_code tb_backend_create_broken_last_column(uint32_t host_abi_version, tb_backend* out,
                                             tb_error* err,
                                           const tb_backend_params* params);
tb_code tb_backend_create_broken_first_element(uint32_t host_abi_version, tb_backend* out,
                                               tb_error* err,
                                           const tb_backend_params* params);
tb_code tb_backend_create_broken_float_ops(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                           const tb_backend_params* params);
tb_code tb_backend_create_broken_second_call(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                             const tb_backend_params* params);
tb_code tb_backend_create_declines_at_call(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                           const tb_backend_params* params);
tb_code tb_backend_create_counts_quantize(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                          const tb_backend_params* params);
tb_code tb_backend_create_test_reference(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                           const tb_backend_params* params);
}

namespace twinbit::testing {
// The shape the flip-bit backend breaks and the element it flips.
constexpr int64_t kFlipM = 3, kFlipN = 33, kFlipK = 96, kFlipRow = 1, kFlipCol = 5;
}  // namespace twinbit::testing
