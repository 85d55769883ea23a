// The host side's layout work, above the seam: the artifact's tiles re-tiled into the device's
// native B per group (at bind), and a group of activation codes into native A (per call).
#pragma once

#include <cstdint>
#include <vector>

#include <twinbit/backend.h>

namespace twinbit::npu {

// The strip view's codes as int8 native B tiles in GROUP-MAJOR order: [G][Np/32][32][32], where
// tile (g, s) is the artifact's tile (s, g) (q8: its bytes; q4: its codes unpacked to int8 in
// [-8, 7]). Group g's tiles of columns [c0, c0 + count) (c0, count multiples of 32) are then one
// contiguous native B of a (K = 32, N = count) matmul, at byte (g * Np + c0) * 32.
// Returns false when the memory cannot be had.
bool pack_group_major(const tb_strips& w, std::vector<int8_t>& out);
inline int64_t group_b_offset(int64_t np, int64_t g, int64_t c0) { return (g * np + c0) * 32; }

// Rows [r0, r0 + rows) of the I8 codes xq (leading dimension ldxq), group g, as native A of a
// (rows x 32) matmul: out holds a_bytes(rows, 32) = rows * 32 bytes.
void pack_group_a(const int8_t* xq, int64_t ldxq, int64_t r0, int64_t rows, int64_t g, int8_t* out);

}  // namespace twinbit::npu
