// The scalar reference: the executable form of docs/NUMERICS.md and the oracle of every test.
//
// Written for clarity, not speed: each function spells out the contract's pseudo-code, with the
// same loop structure, the same accumulators starting at +0.0f and the same explicit std::fma.
// Backends are compared to it with memcmp. If this file and NUMERICS.md ever disagree, that is a
// bug in one of them, fixed before anything else.
//
// Preconditions (shapes consistent, pointers valid) are checked by core/op_checks.h before any
// backend or the reference is called; the reference itself only asserts them.
#pragma once

#include <cstdint>

#include <twinbit/backend.h>

namespace twinbit::ref {

// Weight code w[n][k] of a strip set (0 for padding), and the weight scale ws[n][g] as float.
int weight_code(const tb_strips& w, int64_t n, int64_t k);
float weight_scale(const tb_strips& w, int64_t n, int64_t g);

// gemm, activation mode F32. x [m][ldx] (k < K read), y [m][ldy] (n < N written).
void gemm_f32(const tb_strips& w, int64_t m, const float* x, int64_t ldx, float* y, int64_t ldy);
// One output element y[m][n] of gemm_f32 (x_row = x + m*ldx): what gemm_f32 computes for it.
// Lets tools check a sample of the columns of a large projection.
float gemm_f32_at(const tb_strips& w, const float* x_row, int64_t n);

// The activation quantiser of mode I8, for rows of k values (k < K read, padding +0):
// xq [m][ldxq] gets Kp codes per row, xd [m][ldxd] gets Kp/32 scales per row. Per group of 32:
// amax = max |x| over the non-NaN values, d = amax / 127, code = clamp(rint(x / d), -127, 127)
// (0 when d == 0 or x / d is NaN), so every code lies in [-127, 127] for every input.
void quantize_activations(int64_t m, int64_t k, const float* x, int64_t ldx, int8_t* xq,
                          int64_t ldxq, float* xd, int64_t ldxd);

// gemm, activation mode I8, on already-quantised activations.
void gemm_i8(const tb_strips& w, int64_t m, const int8_t* xq, int64_t ldxq, const float* xd,
             int64_t ldxd, float* y, int64_t ldy);
// One output element of gemm_i8 (xq_row = xq + m*ldxq, xd_row = xd + m*ldxd).
float gemm_i8_at(const tb_strips& w, const int8_t* xq_row, const float* xd_row, int64_t n);

// y[r] = sum_c W[r][c] * x[c] in the 32-lane order of the source engine's warp kernel.
void gemv_f32(const tb_matrix_f32& w, const float* x, float* y);

// One gated-delta step; updates args.state in place and writes args.o.
void gdn_delta(const tb_gdn_args& args);

}  // namespace twinbit::ref
