// Text that comes from a backend (its name, device, features, every error message) is bytes a
// plugin chose: it may be invalid UTF-8, carry newlines that forge report lines ("\nresult:
// PASS"), terminal escapes, or characters XML forbids. sanitize_untrusted() makes it one safe
// line before it enters any report: well-formed UTF-8, no control characters, printable in a
// terminal, valid in JSON and (after the usual markup escaping) in XML 1.0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace twinbit::conformance::guards {

// - invalid UTF-8 (a stray byte, truncated, overlong, a surrogate, past U+10FFFF) -> U+FFFD;
// - newline, carriage return, tab -> the two characters \n, \r, \t;
// - other C0 controls, DEL, C1 controls -> \xNN (the code point in hex);
// - U+2028, U+2029 (line breaks to some readers), U+FFFE, U+FFFF (not characters), the bidi
//   embedding/override/isolate controls U+202A..U+202E, U+2066..U+2069 (they reorder what a
//   terminal shows) -> \u{XXXX};
// - longer than `max_bytes`: cut at a character boundary, " [... N more bytes]" appended.
std::string sanitize_untrusted(const std::string& in, size_t max_bytes = 2000);

// Length of the well-formed UTF-8 sequence at in[i] (1..4) with its code point in `cp`, or 0 when
// the bytes there are not one (a stray continuation byte, a truncated or overlong sequence, a
// surrogate, past U+10FFFF). The JUnit writer's XML escaping walks text with it too.
size_t utf8_sequence(const std::string& in, size_t i, uint32_t& cp);

}  // namespace twinbit::conformance::guards
