// GGML tensor types as GGUF numbers them (ggml.h's enum ggml_type), with their block sizes: the
// GGUF reader needs a type's size to check a tensor's extent even when twinbit cannot convert it.
#pragma once

#include <cstdint>

#include "artifacts/import/tensor_source.h"

namespace twinbit::import {

struct GgmlType {
  uint32_t number;
  const char* name;       // "Q4_K", "IQ2_XXS"
  SourceType source;      // SourceType::other for types twinbit does not convert
  int64_t block_elems;
  int64_t block_bytes;
};

// The type with this number, or nullptr when the number names no GGML type this reader knows
// the size of (removed numbers 4 and 5, or types newer than this table).
const GgmlType* find_ggml_type(uint32_t number);

}  // namespace twinbit::import
