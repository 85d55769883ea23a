// The bounds-checked reader of a GGUF header (gguf_file.cpp's parser; the fuzzer reaches it
// through parse_gguf). It reads from a prefix of the file copied into memory: a read that runs
// past the file is DATA_LOSS naming the field; a read that runs past the prefix but not the file
// fails too, with wants_more() set, and the caller parses again from a longer prefix.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "artifacts/import/tensor_source.h"
#include <twinbit/status.hpp>

namespace twinbit::import {

// GGUF value types (gguf_file.h lists them).
enum : uint32_t {
  kGgufU8 = 0, kGgufI8, kGgufU16, kGgufI16, kGgufU32, kGgufI32, kGgufF32, kGgufBool,
  kGgufString, kGgufArray, kGgufU64, kGgufI64, kGgufF64,
};

// What the header holds, tensor offsets made absolute.
struct ParsedGguf {
  std::vector<SourceTensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
};

class GgufCursor {
 public:
  GgufCursor(const uint8_t* prefix, uint64_t prefix_bytes, uint64_t file_bytes, std::string what)
      : p_(prefix), have_(prefix_bytes), file_bytes_(file_bytes), what_(std::move(what)) {}

  const std::string& what() const { return what_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t position() const { return pos_; }
  uint64_t file_left() const { return file_bytes_ - pos_; }
  bool wants_more() const { return wants_more_; }
  // What the next errors are about: "KV 3 'general.name'", "tensor 2 'output.weight'".
  void set_context(std::string context) { context_ = std::move(context); }

  // OK when `bytes` more bytes can be read; the error names `field`.
  Status need(uint64_t bytes, const char* field);
  const uint8_t* peek() const { return p_ + pos_; }  // after a successful need()
  void skip(uint64_t bytes) { pos_ += bytes; }       // after a successful need()
  Status u32(uint32_t* out, const char* field);
  Status u64(uint64_t* out, const char* field);
  // A GGUF string of at most max_bytes.
  Status str(std::string* out, uint64_t max_bytes, const char* field);
  // One value of `type` (arrays `depth` deep); its text (gguf_file.h) into *text when non-null.
  Status value(uint32_t type, int depth, std::string* text);
  // DATA_LOSS: "<what>: <context> <problem>".
  Status invalid(const char* problem) const;

 private:
  Status array(int depth, std::string* text);

  const uint8_t* p_;
  uint64_t have_;
  uint64_t file_bytes_;
  std::string what_;
  std::string context_;
  uint64_t pos_ = 0;
  bool wants_more_ = false;
};

// Parses and validates the whole header (defined in gguf_file.cpp; gguf_file.h lists the checks).
Status parse_gguf_header(GgufCursor& cursor, ParsedGguf* out);

}  // namespace twinbit::import
