// Writing a strip cache in memory: validate each entry as it is added (artifact_layout.h: the
// rules the reader enforces), keep its payloads, then lay the file out (format.h) and either
// build the image or stream it to a temporary file that is renamed over the target only once it
// is complete and on disk. (stream_writer.h writes each payload as it is added instead.)
#include <xxhash.h>

#include <cstring>

#include "artifacts/artifact.h"
#include "artifacts/artifact_layout.h"
#include "artifacts/atomic_file.h"
#include "artifacts/format.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/precision.h"

namespace twinbit::artifact {

using layout::align_up;

Status Writer::add_pending(Entry entry, std::vector<std::vector<uint8_t>> payloads) {
  TB_RETURN_IF_ERROR(layout::check_name(entry.name));
  for (const Pending& p : pending_) {
    if (p.entry.name == entry.name) {
      return Error(TB_INVALID_ARGUMENT, "entry name '%s' is already used (names must be unique)",
                   entry.name.c_str());
    }
  }
  if (pending_.size() >= kMaxEntries) {
    return Error(TB_INVALID_ARGUMENT, "an artifact holds at most %u entries", kMaxEntries);
  }
  TB_RETURN_IF_ERROR(layout::check_sources(entry.name, entry.source_tensors));
  entry.payloads.resize(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    entry.payloads[i].bytes = payloads[i].size();
    entry.payloads[i].xxh64 = XXH64(payloads[i].data(), payloads[i].size(), 0);
  }
  pending_.push_back({std::move(entry), std::move(payloads)});
  return Status();
}

Status Writer::adopt_strips(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                            std::vector<uint8_t>&& codes, std::vector<uint16_t>&& scales,
                            std::vector<FusedRange> ranges,
                            std::vector<std::string> source_tensors) {
  std::vector<uint8_t> owned_codes = std::move(codes);
  std::vector<uint16_t> owned_scales = std::move(scales);
  if (prec != TB_PREC_Q8 && prec != TB_PREC_Q4) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': precision %d is unknown (expected 0 = q8, "
                 "1 = q4)", name.c_str(), static_cast<int>(prec));
  }
  TB_RETURN_IF_ERROR(layout::check_dim(name, "N", n));
  TB_RETURN_IF_ERROR(layout::check_dim(name, "K", k));
  TB_RETURN_IF_ERROR(layout::check_strip_sizes(name, prec, n, k, owned_codes.size(),
                                               owned_scales.size() * 2));
  TB_RETURN_IF_ERROR(layout::check_ranges(name, n, ranges));
  std::vector<uint8_t> scale_bytes = layout::scale_bytes(owned_scales);
  owned_scales = {};
  TB_RETURN_IF_ERROR(layout::check_strip_padding(name, prec, n, k, owned_codes.data(),
                                                 scale_bytes.data()));
  Entry e;
  e.name = name;
  e.kind = TB_WEIGHTS_STRIPS;
  e.prec = prec;
  e.n = n;
  e.k = k;
  e.ranges = std::move(ranges);
  e.source_tensors = std::move(source_tensors);
  std::vector<std::vector<uint8_t>> payloads;
  payloads.push_back(std::move(owned_codes));
  payloads.push_back(std::move(scale_bytes));
  return add_pending(std::move(e), std::move(payloads));
}

Status Writer::add_strips(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                          std::span<const uint8_t> codes, std::span<const uint16_t> scales,
                          std::vector<FusedRange> ranges,
                          std::vector<std::string> source_tensors) {
  // Sizes are checked before copying so that a wrong span costs nothing.
  if (precision_known(prec) && n >= 1 && n <= kMaxDim && k >= 1 && k <= kMaxDim) {
    TB_RETURN_IF_ERROR(layout::check_strip_sizes(name, prec, n, k, codes.size(),
                                                 scales.size() * 2));
  }
  return adopt_strips(name, prec, n, k, std::vector<uint8_t>(codes.begin(), codes.end()),
                      std::vector<uint16_t>(scales.begin(), scales.end()), std::move(ranges),
                      std::move(source_tensors));
}

Status Writer::add_matrix(const std::string& name, int64_t rows, int64_t cols,
                          std::span<const float> data, std::vector<std::string> source_tensors) {
  TB_RETURN_IF_ERROR(layout::check_dim(name, "rows", rows));
  TB_RETURN_IF_ERROR(layout::check_dim(name, "cols", cols));
  const uint64_t count = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  if (data.size() != count) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': matrix data holds %zu floats (expected %lld x "
                 "%lld = %llu)", name.c_str(), data.size(), (long long)rows, (long long)cols,
                 (unsigned long long)count);
  }
  Entry e;
  e.name = name;
  e.kind = TB_WEIGHTS_F32;
  e.prec = TB_PREC_Q8;  // stored as 0
  e.n = rows;
  e.k = cols;
  e.source_tensors = std::move(source_tensors);
  std::vector<std::vector<uint8_t>> payloads;
  payloads.push_back(layout::matrix_bytes(data));
  return add_pending(std::move(e), std::move(payloads));
}

Result<std::vector<uint8_t>> Writer::serialize(const Provenance& provenance) const {
  std::vector<Entry> entries;
  entries.reserve(pending_.size());
  for (const Pending& p : pending_) entries.push_back(p.entry);
  auto plan = layout::make_plan(provenance, entries);
  if (!plan.ok()) return plan.status();
  std::vector<uint8_t> image(plan->file_bytes, 0);
  std::memcpy(image.data(), plan->prefix.data(), plan->prefix.size());
  uint64_t at = align_up(plan->prefix.size());
  for (const Pending& p : pending_) {
    for (const std::vector<uint8_t>& bytes : p.payloads) {
      std::memcpy(image.data() + at, bytes.data(), bytes.size());
      at = align_up(at + bytes.size());
    }
  }
  return image;
}

Status Writer::write(const std::string& path, const Provenance& provenance) const {
  auto file = OutputFile::open(path);
  if (!file.ok()) return file.status();
  return write(file.value(), provenance);
}

Status Writer::write(OutputFile& file, const Provenance& provenance) const {
  std::vector<Entry> entries;
  entries.reserve(pending_.size());
  for (const Pending& p : pending_) entries.push_back(p.entry);
  auto plan = layout::make_plan(provenance, entries);
  if (!plan.ok()) return plan.status();

  static const uint8_t kZeros[kPayloadAlign] = {};
  uint64_t written = plan->prefix.size();
  TB_RETURN_IF_ERROR(file.write(plan->prefix.data(), plan->prefix.size()));
  for (const Pending& p : pending_) {
    for (const std::vector<uint8_t>& bytes : p.payloads) {
      const uint64_t gap = align_up(written) - written;
      TB_RETURN_IF_ERROR(file.write(kZeros, gap));
      TB_RETURN_IF_ERROR(file.write(bytes.data(), bytes.size()));
      written += gap + bytes.size();
    }
  }
  return file.commit();  // on any early return, the caller's OutputFile discards the temporary
}

}  // namespace twinbit::artifact
