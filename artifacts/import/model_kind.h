// Which reader a model path needs, from what is there (not from its name): a GGUF file (magic
// "GGUF"), a safetensors file (an 8-byte little-endian header length, then the JSON header's
// '{'), or a folder of safetensors shards with its model.safetensors.index.json.
#pragma once

#include <string>

#include <twinbit/status.hpp>

namespace twinbit::import {

enum class ModelKind { gguf, safetensors_file, safetensors_folder };

const char* model_kind_name(ModelKind kind);  // "GGUF", "safetensors", "safetensors folder"

// INVALID_ARGUMENT naming the path when it does not exist, cannot be read, or is none of these
// (saying what its first bytes are).
Result<ModelKind> model_kind(const std::string& path);

}  // namespace twinbit::import
