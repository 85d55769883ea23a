// The host side of the CUDA gemm's output copies (backends/cuda/output_copy.h), without a device:
// column ranges cover every strip once, in order; the range count rule and its clamps; copy_rows
// moves exactly the rows' bytes, serially and over oneTBB, and leaves the gaps of a wider stride
// untouched.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#ifdef TWINBIT_HAS_CUDA_BACKEND
#include "backends/cuda/output_copy.h"

namespace twinbit::cuda_test {

TEST_CASE("cuda column ranges cover strips 0 .. nstrips once, in order, in at most the asked count; each but the last of ceil(nstrips / ranges) strips") {
  for (int64_t nstrips : {1, 2, 7, 32, 384, 4748}) {
    for (int64_t asked : {1, 2, 3, 7, 8, 16, 64}) {
      const cuda::StripRanges r(nstrips, asked);
      CHECK(r.count() >= 1);
      CHECK(r.count() <= asked);
      int64_t next = 0;
      for (int64_t i = 0; i < r.count(); ++i) {
        CHECK(r.s0(i) == next);
        CHECK(r.s1(i) > r.s0(i));
        if (i + 1 < r.count()) CHECK(r.s1(i) - r.s0(i) == (nstrips + asked - 1) / asked);
        next = r.s1(i);
      }
      CHECK_MESSAGE(next == nstrips, "nstrips=" << nstrips << " asked=" << asked);
    }
  }
}

TEST_CASE("cuda column range count: one per MiB of output within 2 .. 3 by default, a forced count as asked, never more than the strips; the whole output's schedule on vocabulary-sized outputs") {
  // lm_head (4748 strips): M = 32 19.4 MB and M = 4 2.4 MB of output, 3 ranges; M = 2 1.2 MB,
  // 2. gate_up (384) M = 32: 1.6 MB, 2.
  CHECK(cuda::column_ranges_for(32, 4748, 0) == 3);
  CHECK(cuda::column_ranges_for(4, 4748, 0) == 3);
  CHECK(cuda::column_ranges_for(2, 4748, 0) == 2);
  CHECK(cuda::column_ranges_for(32, 384, 0) == 2);
  CHECK(cuda::ranges_run_whole_plan(cuda::RangePlan::kAuto, 151936));
  CHECK_FALSE(cuda::ranges_run_whole_plan(cuda::RangePlan::kAuto, 12288));
  CHECK(cuda::ranges_run_whole_plan(cuda::RangePlan::kWhole, 12288));
  CHECK_FALSE(cuda::ranges_run_whole_plan(cuda::RangePlan::kOwn, 151936));
  CHECK(cuda::column_ranges_for(1, 32, 0) == 2);
  CHECK(cuda::column_ranges_for(32, 4748, 3) == 3);
  CHECK(cuda::column_ranges_for(600, 32, 64) == 32);
  CHECK(cuda::column_ranges_for(600, 1, 0) == 1);
}

TEST_CASE("cuda copy_rows: rows of a packed source into a strided destination and back, under and over the parallel threshold, gaps untouched") {
  // Over oneTBB: 150 rows of 4000 bytes (whole rows a piece), 3 and 150 rows of 300000 (rows cut
  // into pieces); one thread: the rest.
  for (int64_t rows : {1, 3, 150}) {
    for (size_t row_bytes : {size_t{4}, size_t{4000}, size_t{300000}}) {
      const size_t stride = row_bytes + 12;
      std::vector<uint8_t> src(static_cast<size_t>(rows) * row_bytes), dst(static_cast<size_t>(rows) * stride, 0xee);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
      cuda::copy_rows(dst.data(), stride, src.data(), row_bytes, rows, row_bytes);
      int64_t bad = 0, touched = 0;
      for (int64_t r = 0; r < rows; ++r) {
        bad += std::memcmp(dst.data() + r * stride, src.data() + r * row_bytes, row_bytes) != 0;
        for (size_t g = row_bytes; g < stride; ++g) touched += dst[r * stride + g] != 0xee;
      }
      CHECK_MESSAGE(bad == 0, rows << " rows of " << row_bytes);
      CHECK(touched == 0);
      std::vector<uint8_t> back(src.size(), 0);
      cuda::copy_rows(back.data(), row_bytes, dst.data(), stride, rows, row_bytes);
      CHECK(back == src);
    }
  }
}

}  // namespace twinbit::cuda_test
#endif
