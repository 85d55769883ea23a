// The artifact format's text rule (format.h): provenance fields and source tensor names are
// UTF-8 (RFC 3629: shortest form, no surrogates, nothing above U+10FFFF) without control
// characters (C0 U+0000..U+001F, DEL U+007F, C1 U+0080..U+009F), at most kMaxTextBytes bytes.
// So every text field can be printed in a terminal, an error message or a JSON string as is.
// The reader refuses other text with DATA_LOSS, the writer with INVALID_ARGUMENT; both name the
// field, the byte offset and the problem.
#pragma once

#include <cstdint>
#include <string_view>

namespace twinbit::artifact {

struct TextProblem {
  const char* what = nullptr;  // null when the text is fine; else e.g. "overlong encoding"
  uint64_t offset = 0;         // byte offset of the sequence at fault
  explicit operator bool() const { return what != nullptr; }
};

// The first violation of the text rule in s (at most max_bytes bytes), or an empty TextProblem.
TextProblem check_text(std::string_view s, uint32_t max_bytes);

}  // namespace twinbit::artifact
