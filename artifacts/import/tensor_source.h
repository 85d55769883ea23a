// What an importer reads from a model file, before twinbit decides what to make of it: the seam
// between the format readers (GGUF, safetensors) and the import pipeline that maps names to
// projections, converts, fuses and writes the strip cache.
//
// A reader validates the whole file's structure when it opens it (every count, string, dim,
// offset and size checked against the file; nothing allocated from an unchecked count) and then
// hands out tensors as byte ranges of a read-only mapping. Reading a tensor's bytes never
// allocates; converting them (dequantize.h) works a bounded number of rows at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit::import {

// The element encodings importers meet. Block types store `block_elems` elements in
// `block_bytes` bytes (llama.cpp's ggml_type layouts); the others one element each.
enum class SourceType {
  f32, f16, bf16,
  q8_0, q4_0,                      // re-tiled into the strip cache losslessly
  q4_1, q5_0, q5_1,                // legacy blocks: converted (dequantised, re-quantised)
  q2_k, q3_k, q4_k, q5_k, q6_k,    // k-quants: converted
  other,                           // anything else: listed, never imported
};

struct SourceTypeTraits {
  SourceType type;
  const char* name;       // "F32", "Q8_0", "Q4_K": as GGUF and safetensors name them
  int64_t block_elems;    // 1 for f32 / f16 / bf16
  int64_t block_bytes;
};
const SourceTypeTraits& source_type_traits(SourceType type);

// One tensor of a model file. dims are outermost first, as numpy and safetensors write them:
// a projection weight is {N outputs, K inputs}, its row r (output column r) is K consecutive
// elements. (GGUF stores ne[] innermost first; its reader reverses them into this order.)
struct SourceTensor {
  std::string name;                // as in the file: "blk.0.attn_q.weight", "model.layers.0..."
  SourceType type = SourceType::other;
  std::string type_name;           // the file's own name of the type, also for `other`
  std::vector<int64_t> dims;
  uint64_t bytes = 0;              // computed from dims and type, checked against the file
  size_t file = 0;                 // index into TensorFile::files() (a shard)
  uint64_t offset = 0;             // of the first byte within that file
};

// An opened model: one file, or the shards of a safetensors folder.
class TensorFile {
 public:
  virtual ~TensorFile() = default;
  virtual const std::vector<std::string>& files() const = 0;
  virtual const std::vector<SourceTensor>& tensors() const = 0;
  // The tensor's bytes in its mapping; valid while this object lives.
  virtual std::span<const uint8_t> bytes(const SourceTensor& t) const = 0;
  // The caller is done with t's bytes for now. A reader over a file mapping may let their pages
  // go (they are read from the file again if asked for), so that a pass over a model larger than
  // memory keeps a bounded resident set; what bytes() returns is unchanged. Default: nothing.
  virtual void release(const SourceTensor& t) const { (void)t; }
  // Key-value metadata worth showing or mapping names with (GGUF's general.architecture,
  // block_count; safetensors' __metadata__), as text.
  virtual std::vector<std::pair<std::string, std::string>> metadata() const = 0;
};

}  // namespace twinbit::import
