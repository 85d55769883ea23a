#include "conformance/guards/untrusted_text.h"

#include <cstdint>
#include <cstdio>

namespace twinbit::conformance::guards {
namespace {

bool reorders_or_breaks(uint32_t cp) {
  return cp == 0x2028 || cp == 0x2029 || cp == 0xfffe || cp == 0xffff ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string sanitize_untrusted(const std::string& in, size_t max_bytes) {
  std::string out;
  char buf[16];
  size_t i = 0;
  for (; i < in.size() && out.size() < max_bytes;) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(in, i, cp);
    if (len == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(cp));
      out += buf;
    } else if (reorders_or_breaks(cp)) {
      std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(in, i, len);
    }
    i += len;
  }
  if (i < in.size()) out += " [... " + std::to_string(in.size() - i) + " more bytes]";
  return out;
}

size_t utf8_sequence(const std::string& in, size_t i, uint32_t& cp) {
  const auto b = [&](size_t j) { return static_cast<uint8_t>(in[j]); };
  const uint8_t c = b(i);
  size_t len = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    len = 2, cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > in.size()) return 0;
  for (size_t j = 1; j < len; ++j) {
    if ((b(i + j) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + j) & 0x3f);
  }
  const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

}  // namespace twinbit::conformance::guards
