// The padding rule of a strip set in the canonical layout (twinbit/backend.h, docs/FORMAT.md):
// padding columns (n >= N) and padding k (k >= K, inside the last group) hold code 0 - a q8
// byte 0x00, a q4 nibble 8 (so 0x88 where both nibbles of a byte are padding) - and padding
// columns hold scale 0 (fp16 bits 0x0000). Kernels read whole tiles, so padding that is not zero
// would change results; the reader checks it in Artifact::verify, the writer when an entry is
// added.
#pragma once

#include <cstdint>

#include <twinbit/backend.h>

namespace twinbit::artifact {

struct PaddingProblem {
  const char* payload = nullptr;  // null when all padding is right; else "codes" or "scales"
  uint64_t offset = 0;            // byte offset inside that payload
  int64_t column = 0, k = 0;      // the cell it belongs to (k = -1 for a scale)
  uint8_t found = 0;              // the byte found there
  explicit operator bool() const { return payload != nullptr; }
};

// The first padding byte that breaks the rule. codes and scales are the payload bytes of a strip
// set of shape (prec, n, k) (sizes strip_codes_bytes / strip_scales_bytes; the caller checked the
// shape). Reads only, allocates nothing, never throws: it may run under guarded_run.
PaddingProblem find_bad_padding(tb_prec prec, int64_t n, int64_t k, const uint8_t* codes,
                                const uint8_t* scales) noexcept;

}  // namespace twinbit::artifact
