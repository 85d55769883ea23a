// The RK3588 NPU's native int8 matmul layouts and limits, as the vendor documents them
// (rknn_matmul_api.h of rknn-toolkit2 v2.3.2 and the RKNN SDK user guide's "Matrix
// Multiplication API"; docs/NPU.md lists the sources). Pure index arithmetic: the emulator, the
// backend's packing code and the tests all go through these functions, so each layout is written
// down once.
//
// int8 x int8 -> int32 on RK3588 (every division rounds up; padding is zeros):
//   A native  [K/16][M][16]   int8    off(m, k) = (k/16)*M*16 + m*16 + k%16
//   B native  [N/32][K/32][32][32]    off(k, n) = ((n/32)*Kt + k/32)*1024 + (n%32)*32 + k%32
//             and when K > 8192: ceil(K/8192) segments, each a native block of its own
//             (Kseg = min(8192, K - 8192 t)), concatenated in segment order
//   C native  [N/4][M][4]     int32   off(m, n) = (n/4)*M*4 + m*4 + n%4
#pragma once

#include <cstdint>

namespace twinbit::npu {

// ---- the device's limits (RK3588, int8 x int8 -> int32) ----
constexpr int64_t kKAlign = 32;        // K % 32 == 0
constexpr int64_t kNAlign = 32;        // N % 32 == 0
constexpr int64_t kMaxN = 4096;        // N <= 4096 per matmul (UG table 3-7, int8)
constexpr int64_t kKSegment = 8192;    // K > 8192: B in segments of at most 8192
constexpr int kCores = 3;              // NPU cores; one matmul context runs on one core

// ---- tile sizes of the native layouts ----
constexpr int64_t kASub = 16;   // A: 16 consecutive k of one row
constexpr int64_t kBSubN = 32;  // B: 32 columns x 32 k per tile
constexpr int64_t kBSubK = 32;
constexpr int64_t kCSub = 4;    // C: 4 consecutive n of one row

constexpr int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Element (m, k) of A [M][K] in the native layout; the buffer holds a_bytes(M, K) int8.
constexpr int64_t a_offset(int64_t M, int64_t m, int64_t k) {
  return (k / kASub) * M * kASub + m * kASub + k % kASub;
}
constexpr int64_t a_bytes(int64_t M, int64_t K) { return round_up(K, kASub) * M; }

// Segments of B's K axis: ceil(K / 8192); segment t covers k in [8192 t, min(K, 8192 (t+1))).
constexpr int64_t b_segments(int64_t K) { return (K + kKSegment - 1) / kKSegment; }
constexpr int64_t b_segment_k(int64_t K, int64_t t) {
  return (K - t * kKSegment) < kKSegment ? (K - t * kKSegment) : kKSegment;
}
// Element (k, n) of B [K][N] in the native layout (segments concatenated). N is padded to 32 and
// every segment's K to 32, so a segment t < T-1 holds Np * 8192 bytes.
constexpr int64_t b_offset(int64_t K, int64_t N, int64_t k, int64_t n) {
  const int64_t np = round_up(N, kBSubN);
  const int64_t t = k / kKSegment;
  const int64_t kk = k % kKSegment;
  const int64_t kt = round_up(b_segment_k(K, t), kBSubK) / kBSubK;  // tiles of this segment
  const int64_t base = t * np * kKSegment;
  return base + ((n / kBSubN) * kt + kk / kBSubK) * (kBSubN * kBSubK) + (n % kBSubN) * kBSubK +
         kk % kBSubK;
}
constexpr int64_t b_bytes(int64_t K, int64_t N) {
  return round_up(N, kBSubN) * ((b_segments(K) - 1) * kKSegment +
                                round_up(b_segment_k(K, b_segments(K) - 1), kBSubK));
}

// Element (m, n) of C [M][N] (int32) in the native layout; the buffer holds c_elems(M, N) int32.
constexpr int64_t c_offset(int64_t M, int64_t m, int64_t n) {
  return (n / kCSub) * M * kCSub + m * kCSub + n % kCSub;
}
constexpr int64_t c_elems(int64_t M, int64_t N) { return round_up(N, kCSub) * M; }

}  // namespace twinbit::npu
