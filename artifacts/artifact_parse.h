// Parsing a strip cache's header and manifest (format.h lists the checks): everything in them
// is validated against the file size before an Artifact is returned, and nothing read from the
// file is used before it has been bounded. Payload bytes are not read here (artifact_verify.cpp
// checks them on first use). Internal to artifacts/: artifact.h is the API.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "artifacts/artifact.h"

namespace twinbit::artifact {

// A friend of Artifact: fills in its private fields from a validated header and manifest.
class Reader {
 public:
  // Validates the header and manifest. `prefix` holds the file's first bytes: at least the header
  // and, when the header's manifest_bytes is valid, the manifest; `file_bytes` is the file's size.
  // The returned Artifact has no image yet (the caller attaches the bytes it read). Errors:
  // DATA_LOSS naming `what` and the field; RESOURCE_EXHAUSTED when a hash state cannot be made.
  static Result<std::unique_ptr<Artifact>> parse(std::span<const uint8_t> prefix,
                                                 uint64_t file_bytes, const std::string& what);
  // parse() of the API: a whole image in memory, borrowed.
  static Result<std::unique_ptr<Artifact>> parse_borrowed(std::span<const uint8_t> bytes,
                                                          const std::string& what);
};

// The name of payload p of e in messages: "codes" or "scales" (strips), "data" (f32 matrix).
const char* payload_name(const Entry& e, size_t p);

}  // namespace twinbit::artifact
