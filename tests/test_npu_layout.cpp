// The RK3588 native layouts (backends/npu_layout/npu_layout.h) against offsets computed by hand
// from the vendor's index formulas (rknn_matmul_api demo's norm_layout_to_native_layout and the
// user guide's table, docs/NPU.md): M = 1, 3, 33; K = 32, 8192, 8224, 11008 (one and two
// segments); N = 32, 4096, 4128, 151936.
#include <doctest/doctest.h>

#include "backends/npu_layout/npu_layout.h"

namespace twinbit::npu {

TEST_CASE("npu layout A [K/16][M][16]: hand-computed offsets") {
  CHECK(a_offset(1, 0, 31) == 31);              // M = 1: native A is the row itself
  CHECK(a_offset(3, 2, 17) == 81);              // 1*48 + 2*16 + 1
  CHECK(a_offset(33, 32, 8191) == 270335);      // 511*528 + 32*16 + 15
  CHECK(a_offset(33, 5, 11007) == 362831);      // 687*528 + 5*16 + 15
  CHECK(a_bytes(33, 11008) == 363264);
  CHECK(a_bytes(1, 32) == 32);
  CHECK(a_bytes(3, 8224) == 24672);
}

TEST_CASE("npu layout B [N/32][K/32][32][32] with K segments of 8192: hand-computed offsets") {
  CHECK(b_offset(32, 32, 5, 7) == 229);                      // 7*32 + 5
  CHECK(b_bytes(32, 32) == 1024);
  CHECK(b_offset(8192, 4096, 8191, 4095) == 33554431);       // one segment: the last byte
  CHECK(b_offset(8192, 4096, 40, 100) == 787592);            // (3*256 + 1)*1024 + 4*32 + 8
  CHECK(b_segments(8192) == 1);
  // K = 8224: segments of 8192 and 32 k, each a native block of its own.
  CHECK(b_segments(8224) == 2);
  CHECK(b_offset(8224, 4128, 8191, 4127) == 33816575);       // end of segment 0 = 4128*8192 - 1
  CHECK(b_offset(8224, 4128, 8200, 33) == 33817640);         // 4128*8192 + 1*1024 + 1*32 + 8
  CHECK(b_bytes(8224, 4128) == 33948672);
  // K = 11008 (a down projection's K), N = 151936 (lm_head's N): segment 1 has 2816 k, 88 tiles.
  CHECK(b_segments(11008) == 2);
  CHECK(b_segment_k(11008, 1) == 2816);
  CHECK(b_offset(11008, 151936, 8192, 32) == 1244749824);    // 151936*8192 + 88*1024
  CHECK(b_offset(11008, 151936, 11007, 151935) == 1672511487);
  CHECK(b_bytes(11008, 151936) == 1672511488);
  CHECK(b_offset(11008, 151936, 40, 100) == 787592);         // segment 0 of K = 11008: 256 tiles
}

TEST_CASE("npu layout C int32 [N/4][M][4]: hand-computed offsets") {
  CHECK(c_offset(1, 0, 151935) == 151935);    // M = 1: native C is the row itself
  CHECK(c_offset(3, 1, 6) == 18);             // 1*12 + 1*4 + 2
  CHECK(c_offset(33, 0, 4) == 132);
  CHECK(c_offset(33, 32, 4127) == 136223);    // the last element: 4128*33 - 1
  CHECK(c_elems(33, 4128) == 136224);
  CHECK(c_elems(1, 32) == 32);
}

}  // namespace twinbit::npu
