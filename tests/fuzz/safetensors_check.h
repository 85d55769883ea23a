// What the safetensors fuzzer asserts about one input, shared with the normal build's replay of
// its corpus (tests/test_import_fuzz_corpus.cpp): any bytes give either a header whose tensors
// tile the data section exactly, inside the input, or a clean INVALID_ARGUMENT / DATA_LOSS; the
// same bytes read as an index give a consistent index or INVALID_ARGUMENT, and read as a name map
// give rules or INVALID_ARGUMENT. The tensors of an accepted header are planned (names.h), with
// and without fusion and the name map in its __metadata__ "name_map" (if any): a plan or INVALID_ARGUMENT, and a plan accounts for every
// tensor once. Returns false when an invariant is broken (the fuzzer traps; the test fails).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "artifacts/import/names.h"
#include "artifacts/import/safetensors_file.h"

namespace fuzzcheck {

// A plan of `tensors`: each tensor is an entry or skipped, once (a tied lm_head is the embedding,
// which is then not skipped); entries are 2-D with their tensor's dims; fused parts exist.
inline bool plan_ok(const std::vector<twinbit::import::SourceTensor>& tensors,
                    const twinbit::import::NameOptions& options) {
  using namespace twinbit;
  auto plan = import::plan_names(tensors, options);
  if (!plan.ok()) return plan.status().code() == TB_INVALID_ARGUMENT;
  std::vector<int> seen(tensors.size(), 0);
  for (const auto& e : plan->entries) {
    if (e.tensor >= tensors.size() || tensors[e.tensor].dims.size() != 2) return false;
    if (e.n != tensors[e.tensor].dims[0] || e.k != tensors[e.tensor].dims[1] || e.n <= 0) return false;
    ++seen[e.tensor];
  }
  for (const auto& s : plan->skipped) {
    if (s.tensor >= tensors.size() || s.bytes != tensors[s.tensor].bytes) return false;
    ++seen[s.tensor];
  }
  for (int n : seen) {
    if (n != 1) return false;
  }
  for (const auto& g : plan->fused) {
    int64_t n = 0;
    for (size_t p : g.parts) {
      if (p >= plan->entries.size() || plan->entries[p].k != g.k) return false;
      n += plan->entries[p].n;
    }
    if (n != g.n || g.parts.size() < 2) return false;
  }
  return true;
}

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
    import::NameOptions options;
    if (!plan_ok(h->tensors, options)) return false;
    options.fuse_qkv = options.fuse_gate_up = true;
    // A name map the fuzzer can write: __metadata__'s "name_map" value.
    for (const auto& [key, text] : h->metadata) {
      if (key != "name_map") continue;
      auto rules = import::parse_name_map(text, "fuzz-map");
      if (!rules.ok() && rules.status().code() != TB_INVALID_ARGUMENT) return false;
      if (rules.ok()) options.rules = rules.value();
    }
    if (!plan_ok(h->tensors, options)) return false;
  }
  auto rules = import::parse_name_map({reinterpret_cast<const char*>(data), size}, "fuzz-map");
  if (!rules.ok() && rules.status().code() != TB_INVALID_ARGUMENT) return false;
  auto index = parse_safetensors_index({reinterpret_cast<const char*>(data), size}, "fuzz-index");
  if (!index.ok()) return index.status().code() == TB_INVALID_ARGUMENT;
  for (const auto& [tensor, shard] : index->weight_map) {
    if (shard >= index->shards.size()) return false;
  }
  return true;
}

}  // namespace fuzzcheck
