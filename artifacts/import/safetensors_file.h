// The safetensors reader: a Hugging Face checkpoint - one .safetensors file, or a folder of shards
// with its model.safetensors.index.json - opened as a TensorFile (tensor_source.h).
//
// THE FORMAT (all integers little-endian):
//   offset  size  field
//   0       8     N, the header's length: u64, 2 .. kSafetensorsMaxHeaderBytes, <= file size - 8
//   8       N     header: a UTF-8 JSON object, possibly padded with trailing spaces:
//                   {"__metadata__": {"format": "pt"},
//                    "model.layers.0.self_attn.q_proj.weight":
//                        {"dtype": "BF16", "shape": [64, 64], "data_offsets": [0, 8192]}, ...}
//   8+N     ...   the data section: each tensor's bytes at [begin, end) relative to its start,
//                 C (row-major) order, little-endian elements
//
// WHAT IS ACCEPTED. Nothing in the bytes is trusted:
// - the header parses as JSON (an error quotes the byte position), nests at most 3 levels deep
//   (root, tensor, shape), holds no array longer than kSafetensorsMaxDims, is an object, and no
//   object in it gives a key twice (the DOM of a hostile header stays a small multiple of its
//   size);
// - each tensor is an object with exactly "dtype", "shape" and "data_offsets"; the dtype is one
//   safetensors defines (F32, F16 and BF16 are importable; the others - F64, integers, bool, the
//   8/6/4-bit floats - are listed as SourceType::other with their name); the shape is at most
//   kSafetensorsMaxDims non-negative integers whose product (and its size in bytes) fits in 63
//   bits; data_offsets is [begin, end] with begin <= end <= the data section's size and
//   end - begin == the shape's size in bytes;
// - the tensors tile the data section as the reference implementation requires: sorted by begin,
//   no two share a byte (an overlap names both) and no byte belongs to no tensor (a gap or
//   trailing bytes name the range); a tensor of zero bytes may sit at any offset within bounds;
// - "__metadata__", when present, maps strings to strings.
// Tensors are listed in file order (by offset). Their bytes are NOT aligned: safetensors aligns
// nothing, so a converter reads elements with memcpy.
//
// THE INDEX of a sharded checkpoint: a JSON object {"metadata": {...}, "weight_map": {TENSOR:
// SHARD, ...}} (other keys are ignored; metadata values of any scalar type are shown as text).
// Every shard it names must be a plain file name (no '/', not "." or "..") present beside it;
// every tensor it names must be in the shard it names, and every tensor of a shard must be named
// by the index, for that shard (a tensor in two shards is refused).
//
// ERRORS (messages name the file, the tensor and the field, and quote the offending value):
//   INVALID_ARGUMENT  malformed or inconsistent header or index (sizes, dtypes, overlaps ...)
//   DATA_LOSS         the file ends inside the size prefix or the header, or a tensor's range
//                     lies past the end of the data section
//                     (also: the path, a folder's model.safetensors(.index.json) or a shard is
//                     missing, or is not a regular file)
//   UNAVAILABLE       a file exists but cannot be opened, mapped or read
// A file truncated while its header is read (SIGBUS on the mapping) is DATA_LOSS, not a crash.
//
// Files are mapped read-only for the life of the TensorFile; bytes() points into the mapping.
// Thread safety: parse functions are pure; an opened TensorFile may be read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "artifacts/import/tensor_source.h"
#include <twinbit/status.hpp>

namespace twinbit::import {

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull << 20;  // as the reference library
inline constexpr size_t kSafetensorsMaxDims = 16;
inline constexpr uint64_t kSafetensorsMaxIndexBytes = 100ull << 20;
inline constexpr size_t kSafetensorsMaxShards = 4096;

// One file's header, checked against the file's size.
struct SafetensorsHeader {
  uint64_t data_start = 0;  // 8 + N
  std::vector<SourceTensor> tensors;  // file order; offsets from the start of the FILE
  std::vector<std::pair<std::string, std::string>> metadata;  // __metadata__, sorted by key
};

// Parses the header of a safetensors file of `file_bytes` bytes whose first bytes are `prefix`
// (at least the 8-byte size and the header it announces; more is ignored). `source` names the
// file in messages; every tensor gets `file_index` as its SourceTensor::file.
Result<SafetensorsHeader> parse_safetensors(std::span<const uint8_t> prefix, uint64_t file_bytes,
                                            const std::string& source, size_t file_index = 0);

// A parsed model.safetensors.index.json.
struct SafetensorsIndex {
  std::vector<std::string> shards;  // distinct shard file names, sorted
  std::vector<std::pair<std::string, size_t>> weight_map;  // tensor -> index into shards, sorted
  std::vector<std::pair<std::string, std::string>> metadata;
};
Result<SafetensorsIndex> parse_safetensors_index(std::string_view text, const std::string& source);

// Opens `path`: a .safetensors file, a model.safetensors.index.json, or a folder holding either
// (the index is preferred when both are there). Each shard is mapped read-only; release(t) drops
// the mapping's pages lying wholly inside t's bytes (read again from the file if asked for), so a
// pass over shards larger than memory keeps a bounded resident set.
Result<std::unique_ptr<TensorFile>> open_safetensors(const std::string& path);

// The safetensors dtype names and their element sizes in bits (0 when the name is not one).
int safetensors_dtype_bits(std::string_view dtype);

}  // namespace twinbit::import
