#include "backends/npu_layout/npu_pack.h"

#include <cstring>
#include <new>

#include "backends/npu_layout/npu_layout.h"
#include "core/strip_layout.h"

namespace twinbit::npu {

bool pack_group_major(const tb_strips& w, std::vector<int8_t>& out) {
  const StripLayout layout = StripLayout::of(w);
  const int64_t strips = layout.strips(), groups = layout.groups(), np = layout.np();
  try {
    out.assign(static_cast<size_t>(np * layout.kp()), 0);
  } catch (const std::bad_alloc&) {
    return false;
  }
  const auto* codes = static_cast<const uint8_t*>(w.codes);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t s = 0; s < strips; ++s) {
      int8_t* tile = out.data() + group_b_offset(np, g, s * 32);
      if (w.prec == TB_PREC_Q8) {  // the artifact's tile is already an int8 native B tile
        std::memcpy(tile, codes + layout.code_offset(s * 32, g), 1024);
        continue;
      }
      for (int64_t c = 0; c < 32; ++c) {  // q4: no int8 x int4 path on RK3588; unpack to int8
        const uint8_t* run = codes + layout.code_offset(s * 32 + c, g);
        for (int kk = 0; kk < 32; ++kk) {
          tile[c * 32 + kk] = static_cast<int8_t>(layout.traits().load_code(run, kk));
        }
      }
    }
  }
  return true;
}

void pack_group_a(const int8_t* xq, int64_t ldxq, int64_t r0, int64_t rows, int64_t g, int8_t* out) {
  for (int64_t m = 0; m < rows; ++m) {
    const int8_t* src = xq + (r0 + m) * ldxq + g * 32;
    std::memcpy(out + a_offset(rows, m, 0), src, 16);
    std::memcpy(out + a_offset(rows, m, 16), src + 16, 16);
  }
}

}  // namespace twinbit::npu
