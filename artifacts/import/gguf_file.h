// Reading llama.cpp's GGUF files (versions 2 and 3) as a TensorFile (tensor_source.h).
//
// THE FORMAT (all integers little-endian; a "string" is a u64 byte length, then the bytes):
//   u32 magic "GGUF" (the bytes 47 47 55 46), u32 version (2 or 3),
//   u64 tensor_count, u64 kv_count,
//   kv_count x { string key, u32 value_type, value },
//     value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (1 byte, 0 or 1),
//     8 string, 9 array { u32 element_type, u64 count, count x value }, 10 u64, 11 i64, 12 f64;
//   tensor_count x { string name, u32 n_dims, u64 ne[n_dims] (innermost first), u32 ggml_type,
//                    u64 offset (from the start of the data section) },
//   zero padding to `general.alignment` (a u32 KV; 32 when absent), then the data section.
//
// WHAT open_gguf CHECKS, before it allocates anything sized by the file (every violation is an
// error naming the field, its index and the offending value; DATA_LOSS for a damaged or hostile
// file, INVALID_ARGUMENT for a file that is not GGUF or a version this reader does not know):
// - magic, version; tensor_count and kv_count against the bytes that could hold that many
//   entries (a count that cannot fit in the file is refused before any vector is sized by it);
// - every string length against the bytes left; keys non-empty and unique; tensor names 1 ..
//   kGgufMaxNameBytes bytes and unique; keys and names valid text (artifacts/text_rule.h);
// - every value type and array element type (arrays nest at most kGgufMaxArrayDepth deep, and an
//   array's count times its element's smallest encoding must fit in the bytes left); bools 0 or 1;
// - general.alignment: a u32, a nonzero power of two;
// - tensor infos: 1 <= n_dims <= 4, every ne >= 1, the element count and byte size without
//   overflow (at most 2^62 bytes), the innermost ne a whole number of the type's blocks; the type
//   a GGML type whose block size is known (those twinbit cannot convert are kept as
//   SourceType::other with their GGML name); the offset a multiple of the alignment, the tensor's
//   bytes inside the file, and no two tensors' bytes overlapping;
// - the header (everything before the data section) at most kGgufMaxHeaderBytes.
//
// WHAT IT GIVES: tensors in file order, dims reversed to outermost first (tensor_source.h),
// `offset` the absolute file offset; metadata() the KVs in file order, scalars as text (numbers
// in decimal, floats with enough digits to round-trip, strings as they are when they are valid
// text, else with the bytes outside printable ASCII as \xNN), arrays summarised as "[N x TYPE]".
//
// MEMORY AND LIFETIME. The file is mapped read-only; the header is copied out of the mapping
// under the SIGBUS guard (artifacts/read_guard.h), so a file truncated while it is parsed gives
// DATA_LOSS. bytes() hands out spans of the mapping, valid while the TensorFile lives; reading
// them is not guarded (a file truncated after open can still fault - do not rewrite model files
// in place while importing them). release(t) drops the mapping's pages lying wholly inside t's
// bytes (madvise MADV_DONTNEED; they are read from the file again if asked for), so a pass over a
// model larger than memory keeps a bounded resident set; parse_gguf's borrowed bytes are left be.
//
// THREAD SAFETY. An opened TensorFile is immutable: any number of threads may call its methods.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "artifacts/import/tensor_source.h"
#include <twinbit/status.hpp>

namespace twinbit::import {

inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint64_t kGgufMaxHeaderBytes = uint64_t{256} << 20;  // tokenizers are ~10 MB
inline constexpr uint64_t kGgufMaxNameBytes = 256;
inline constexpr int kGgufMaxArrayDepth = 8;
inline constexpr uint32_t kGgufMaxDims = 4;

// Opens and validates the GGUF file at `path` (see above).
Result<std::unique_ptr<TensorFile>> open_gguf(const std::string& path);

// The same checks over an image already in memory (the fuzzer, tests). `bytes` is borrowed: it
// must outlive the result. `what` names the image in messages; files() returns it.
Result<std::unique_ptr<TensorFile>> parse_gguf(std::span<const uint8_t> bytes,
                                               const std::string& what);

}  // namespace twinbit::import
