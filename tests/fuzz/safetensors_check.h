// What the safetensors fuzzer asserts about one input, shared with the normal build's replay of
// its corpus (tests/test_import_fuzz_corpus.cpp): any bytes give either a header whose tensors
// tile the data section exactly, inside the input, or a clean INVALID_ARGUMENT / DATA_LOSS; the
// same bytes read as an index give a consistent index or INVALID_ARGUMENT. Returns false when an
// invariant is broken (the fuzzer traps; the replay test fails).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "artifacts/import/safetensors_file.h"

namespace fuzzcheck {

inline bool safetensors_input_ok(const uint8_t* data, size_t size) {
  using namespace twinbit;
  using namespace twinbit::import;
  auto h = parse_safetensors({data, size}, size, "fuzz");
  if (!h.ok()) {
    if (h.status().code() != TB_INVALID_ARGUMENT && h.status().code() != TB_DATA_LOSS) return false;
  } else {
    uint64_t covered = h->data_start;
    for (const SourceTensor& t : h->tensors) {
      if (t.offset < h->data_start || t.offset > size || t.bytes > size - t.offset) return false;
      if (t.bytes && t.offset != covered) return false;
      if (t.bytes) covered = t.offset + t.bytes;
      const int bits = safetensors_dtype_bits(t.type_name);
      if (bits == 0) return false;
      unsigned __int128 count = 1;
      for (int64_t d : t.dims) {
        if (d < 0) return false;
        count *= static_cast<uint64_t>(d);
      }
      if (count * static_cast<unsigned>(bits) != static_cast<unsigned __int128>(t.bytes) * 8) return false;
      volatile uint8_t sink = 0;  // every byte a tensor claims is readable
      for (uint64_t i = 0; i < t.bytes; i += 4096) sink = sink ^ data[t.offset + i];
    }
    if (covered != size) return false;
  }
  auto index = parse_safetensors_index({reinterpret_cast<const char*>(data), size}, "fuzz-index");
  if (!index.ok()) return index.status().code() == TB_INVALID_ARGUMENT;
  for (const auto& [tensor, shard] : index->weight_map) {
    if (shard >= index->shards.size()) return false;
  }
  return true;
}

}  // namespace fuzzcheck
