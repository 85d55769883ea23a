// Visits only the padding: the last strip's padding columns (every group) and the last group's
// padding k (every real column) - a few KB even for lm_head, never the whole payload.
#include "artifacts/strip_padding.h"

#include "core/numerics.h"

namespace twinbit::artifact {

PaddingProblem find_bad_padding(tb_prec prec, int64_t n, int64_t k, const uint8_t* codes,
                                const uint8_t* scales) noexcept {
  const bool q4 = prec == TB_PREC_Q4;
  const int64_t ng = pad32(k) / 32, nstrips = pad32(n) / 32;
  const int64_t tile = q4 ? 512 : 1024, run = q4 ? 16 : 32;  // bytes per tile, per column
  const uint8_t pad = q4 ? 0x88 : 0x00;
  auto at = [&](int64_t strip, int64_t g, int64_t c) { return (strip * ng + g) * tile + c * run; };

  if (const int64_t real = n % 32; real != 0) {  // padding columns of the last strip
    const int64_t s = nstrips - 1;
    for (int64_t g = 0; g < ng; ++g) {
      for (int64_t c = real; c < 32; ++c) {
        const int64_t base = at(s, g, c);
        for (int64_t j = 0; j < run; ++j) {
          if (codes[base + j] != pad) {
            return {"codes", static_cast<uint64_t>(base + j), s * 32 + c, g * 32 + j, codes[base + j]};
          }
        }
        const int64_t sc = ((s * ng + g) * 32 + c) * 2;
        for (int64_t b = 0; b < 2; ++b) {
          if (scales[sc + b] != 0) return {"scales", static_cast<uint64_t>(sc + b), s * 32 + c, -1, scales[sc + b]};
        }
      }
    }
  }
  if (const int64_t valid = k % 32; valid != 0) {  // padding k of the last group, real columns
    const int64_t g = ng - 1;
    for (int64_t col = 0; col < n; ++col) {
      const int64_t base = at(col / 32, g, col % 32);
      for (int64_t j = 0; j < run; ++j) {
        const uint8_t b = codes[base + j];
        bool bad = false;
        int64_t kk = g * 32 + j;
        if (!q4) {
          bad = j >= valid && b != 0;
        } else if (j >= valid && (b & 0x0f) != 0x08) {  // low nibble: k = j
          bad = true;
        } else if (j + 16 >= valid && (b >> 4) != 0x08) {  // high nibble: k = j + 16
          bad = true;
          kk += 16;
        }
        if (bad) return {"codes", static_cast<uint64_t>(base + j), col, kk, b};
      }
    }
  }
  return {};
}

}  // namespace twinbit::artifact
