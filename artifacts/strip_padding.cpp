// Visits only the padding: the last strip's padding columns (every group) and the last group's
// padding k (every real column) - a few KB even for lm_head, never the whole payload.
#include "artifacts/strip_padding.h"

#include "core/strip_layout.h"

namespace twinbit::artifact {

PaddingProblem find_bad_padding(tb_prec prec, int64_t n, int64_t k, const uint8_t* codes,
                                const uint8_t* scales) noexcept {
  const StripLayout layout{prec, n, k};
  const PrecisionTraits& t = layout.traits();
  const int64_t ng = layout.groups(), nstrips = layout.strips(), run = layout.run_bytes();

  if (const int64_t real = n % 32; real != 0) {  // padding columns of the last strip
    const int64_t s = nstrips - 1;
    for (int64_t g = 0; g < ng; ++g) {
      for (int64_t c = real; c < 32; ++c) {
        const int64_t base = layout.code_offset(s * 32 + c, g);
        for (int64_t j = 0; j < run; ++j) {
          if (codes[base + j] != t.padding_byte) {
            return {"codes", static_cast<uint64_t>(base + j), s * 32 + c, g * 32 + j, codes[base + j]};
          }
        }
        const int64_t sc = layout.scale_index(s * 32 + c, g) * 2;
        for (int64_t b = 0; b < 2; ++b) {
          if (scales[sc + b] != 0) return {"scales", static_cast<uint64_t>(sc + b), s * 32 + c, -1, scales[sc + b]};
        }
      }
    }
  }
  if (const int64_t valid = k % 32; valid != 0) {  // padding k of the last group, real columns
    const int64_t g = ng - 1;
    for (int64_t col = 0; col < n; ++col) {
      const int64_t base = layout.code_offset(col, g);
      for (int64_t j = 0; j < run; ++j) {  // byte by byte, each byte's padding codes in k order
        for (int kk = static_cast<int>(valid); kk < 32; ++kk) {
          if (t.code_byte(kk) != j || t.load_code(codes + base, kk) == 0) continue;
          return {"codes", static_cast<uint64_t>(base + j), col, g * 32 + kk, codes[base + j]};
        }
      }
    }
  }
  return {};
}

}  // namespace twinbit::artifact
