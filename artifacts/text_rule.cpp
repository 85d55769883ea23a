// UTF-8 validation by the table of well-formed byte sequences (Unicode 15, table 3-7): the lead
// byte fixes the length and the allowed range of the second byte, which is where overlong forms
// (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code points above U+10FFFF (F4 90..) differ.
#include "artifacts/text_rule.h"

namespace twinbit::artifact {

TextProblem check_text(std::string_view s, uint32_t max_bytes) {
  if (s.size() > max_bytes) return {"longer than the limit", max_bytes};
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const uint64_t n = s.size();
  for (uint64_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return {"control character", i};
      ++i;
      continue;
    }
    int len = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c == 0xe0) {
      len = 3, lo = 0xa0;
    } else if (c == 0xed) {
      len = 3, hi = 0x9f;
    } else if (c >= 0xe1 && c <= 0xef) {
      len = 3;
    } else if (c == 0xf0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xf1 && c <= 0xf3) {
      len = 4;
    } else if (c == 0xf4) {
      len = 4, hi = 0x8f;
    } else if (c >= 0x80 && c <= 0xbf) {
      return {"continuation byte without a lead byte", i};
    } else if (c == 0xc0 || c == 0xc1) {
      return {"overlong encoding", i};
    } else {
      return {"byte 0xf5..0xff, which UTF-8 never uses", i};
    }
    if (n - i < static_cast<uint64_t>(len)) return {"sequence truncated by the end of the text", i};
    const unsigned char c1 = p[i + 1];
    if (c1 < lo || c1 > hi) {
      if (c1 < 0x80 || c1 > 0xbf) return {"sequence truncated (a continuation byte is missing)", i};
      if (c == 0xe0 || c == 0xf0) return {"overlong encoding", i};
      if (c == 0xed) return {"UTF-16 surrogate (U+D800..U+DFFF)", i};
      return {"code point above U+10FFFF", i};
    }
    for (int j = 2; j < len; ++j) {
      if (p[i + j] < 0x80 || p[i + j] > 0xbf) {
        return {"sequence truncated (a continuation byte is missing)", i};
      }
    }
    if (c == 0xc2 && c1 <= 0x9f) return {"control character", i};  // C1: U+0080..U+009F
    i += static_cast<uint64_t>(len);
  }
  return {};
}

}  // namespace twinbit::artifact
