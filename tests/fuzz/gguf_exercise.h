// What the GGUF fuzzer and its corpus replay (tests/test_import_gguf_corpus.cpp) do with one
// input: parse it; a clean error must be DATA_LOSS or INVALID_ARGUMENT; an accepted file must
// hand out tensors whose bytes lie inside the input, are as long as their dims and type say, do
// not overlap, and decode (a bounded number of rows of each convertible tensor).
// Returns false when a property does not hold.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "artifacts/import/dequantize.h"
#include "artifacts/import/gguf_file.h"

namespace twinbit::import {

inline bool exercise_gguf(const uint8_t* data, size_t size) {
  auto f = parse_gguf({data, size}, "fuzz.gguf");
  if (!f.ok()) {
    const tb_code c = f.status().code();
    return (c == TB_DATA_LOSS || c == TB_INVALID_ARGUMENT) && !f.status().message().empty();
  }
  const TensorFile& file = *f.value();
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<float> rows;
  for (const SourceTensor& t : file.tensors()) {
    const auto bytes = file.bytes(t);
    if (bytes.size() != t.bytes || t.bytes == 0) return false;
    if (bytes.data() < data || bytes.data() + bytes.size() > data + size) return false;
    if (t.dims.empty() || t.dims.size() > kGgufMaxDims) return false;
    ranges.emplace_back(t.offset, t.offset + t.bytes);
    if (t.type == SourceType::other) continue;
    const int64_t width = t.dims.back();
    const int64_t n = std::min<int64_t>(source_rows(t), std::max<int64_t>(1, 4096 / width));
    if (width > (int64_t{1} << 20)) continue;  // bound the work per input
    rows.resize(static_cast<size_t>(n * width));
    if (!to_float_rows(t, bytes, 0, n, rows.data()).ok()) return false;
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i - 1].second > ranges[i].first) return false;
  }
  return true;
}

}  // namespace twinbit::import
