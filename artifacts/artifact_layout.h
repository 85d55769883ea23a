// What both artifact writers share (artifact.h's Writer, which holds payloads until write(), and
// stream_writer.h's StreamWriter, which writes each payload as it is added): the checks an entry
// must pass before it is written (the rules the reader enforces, format.h) and the layout of the
// file - the header and manifest bytes and where each payload goes. Internal to artifacts/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include <twinbit/status.hpp>

namespace twinbit::artifact::layout {

uint64_t align_up(uint64_t v);  // the next multiple of kPayloadAlign

// Entry checks; each error is INVALID_ARGUMENT naming the entry and the field.
Status check_name(const std::string& name);
Status check_dim(const std::string& name, const char* what, int64_t v);
Status check_sources(const std::string& name, const std::vector<std::string>& sources);
Status check_ranges(const std::string& name, int64_t n, const std::vector<FusedRange>& ranges);
Status check_provenance(const Provenance& provenance);
// Everything about an entry but its payload bytes: name, kind, precision, shape, fused ranges
// (strips only), source tensors. The payload sizes the shape implies are filled in.
Status check_shape(Entry& entry);
// A strip set's payload sizes, then its padding (codes and scales as they are written: scales
// as little-endian bytes).
Status check_strip_sizes(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                         uint64_t codes_bytes, uint64_t scales_bytes);
Status check_strip_padding(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                           const uint8_t* codes, const uint8_t* scale_bytes);

// Payload encodings: fp16 scales and float32 matrix data as little-endian bytes on every host.
std::vector<uint8_t> scale_bytes(std::span<const uint16_t> scales);
std::vector<uint8_t> matrix_bytes(std::span<const float> data);

// The file's layout: `prefix` is the header and manifest; payloads follow, each at the next
// multiple of kPayloadAlign, in entry order; the file is file_bytes long. make_plan sets every
// payload's offset in `entries` (their bytes and xxh64 as given). The manifest's size depends
// only on the entries' shapes, names, ranges and sources (offsets, sizes and checksums are
// fixed-width), so a plan made before the checksums are known has the final size and offsets.
struct Plan {
  std::vector<uint8_t> prefix;
  uint64_t file_bytes = 0;
};
Result<Plan> make_plan(const Provenance& provenance, std::vector<Entry>& entries);

}  // namespace twinbit::artifact::layout
