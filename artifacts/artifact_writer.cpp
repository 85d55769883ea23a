// Writing a strip cache: validate each entry as it is added (same rules the reader enforces),
// lay the file out (format.h), then either build the image in memory or stream it to a temporary
// file that is renamed over the target only once it is complete and on disk.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "artifacts/artifact.h"
#include "artifacts/atomic_file.h"
#include "artifacts/format.h"
#include "artifacts/strip_padding.h"
#include "artifacts/text_rule.h"
#include "core/numerics.h"
#include "core/op_checks.h"

namespace twinbit::artifact {

namespace {

using ull = unsigned long long;
using ll = long long;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}
void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void store_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t align_up(uint64_t v) { return (v + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign; }

Status check_dim(const std::string& name, const char* what, int64_t v) {
  if (v < 1 || v > kMaxDim) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': %s = %lld is out of range (expected 1 .. %lld)",
                 name.c_str(), what, (ll)v, (ll)kMaxDim);
  }
  return Status();
}

Status check_sources(const std::string& name, const std::vector<std::string>& sources) {
  if (sources.size() > kMaxSources) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' has %zu source tensors (at most %u)",
                 name.c_str(), sources.size(), kMaxSources);
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (const TextProblem p = check_text(sources[i], kMaxTextBytes)) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': source tensor %zu (%zu bytes) is not valid "
                   "text: %s at byte %llu (expected at most %u bytes of UTF-8 without control "
                   "characters)", name.c_str(), i, sources[i].size(), p.what, (ull)p.offset,
                   kMaxTextBytes);
    }
  }
  return Status();
}

Status check_provenance_text(const char* field, const std::string& text) {
  if (const TextProblem p = check_text(text, kMaxTextBytes)) {
    return Error(TB_INVALID_ARGUMENT, "provenance %s (%zu bytes) is not valid text: %s at byte "
                 "%llu (expected at most %u bytes of UTF-8 without control characters)", field,
                 text.size(), p.what, (ull)p.offset, kMaxTextBytes);
  }
  return Status();
}

Status check_ranges(const std::string& name, int64_t n, const std::vector<FusedRange>& ranges) {
  if (ranges.size() > kMaxRanges) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' has %zu fused ranges (at most %u)", name.c_str(),
                 ranges.size(), kMaxRanges);
  }
  std::unordered_set<std::string> seen;
  int64_t floor = 0;
  for (const FusedRange& r : ranges) {
    if (!valid_name(r.name) || !seen.insert(r.name).second) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': fused range name '%s' is empty, longer than "
                   "%u, not printable ASCII without spaces, or repeated", name.c_str(),
                   r.name.c_str(), kMaxNameBytes);
    }
    if (r.begin < floor || r.end <= r.begin || r.end > n) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': fused range '%s' = [%lld, %lld) (expected "
                   "%lld <= begin < end <= N = %lld, ranges ascending and disjoint)",
                   name.c_str(), r.name.c_str(), (ll)r.begin, (ll)r.end, (ll)floor, (ll)n);
    }
    floor = r.end;
  }
  return Status();
}

// The file's layout: the header + manifest bytes (payloads follow, each at the next multiple of
// kPayloadAlign, in entry order) and the total size.
struct Plan {
  std::vector<uint8_t> prefix;  // header and manifest
  uint64_t file_bytes = 0;
};

}  // namespace

Status Writer::add_pending(Entry entry, std::vector<std::vector<uint8_t>> payloads) {
  if (!valid_name(entry.name)) {
    return Error(TB_INVALID_ARGUMENT, "entry name '%s' (%zu bytes) is invalid (expected 1 .. %u "
                 "bytes of printable ASCII without spaces)", entry.name.c_str(), entry.name.size(),
                 kMaxNameBytes);
  }
  for (const Pending& p : pending_) {
    if (p.entry.name == entry.name) {
      return Error(TB_INVALID_ARGUMENT, "entry name '%s' is already used (names must be unique)",
                   entry.name.c_str());
    }
  }
  if (pending_.size() >= kMaxEntries) {
    return Error(TB_INVALID_ARGUMENT, "an artifact holds at most %u entries", kMaxEntries);
  }
  TB_RETURN_IF_ERROR(check_sources(entry.name, entry.source_tensors));
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
  TB_RETURN_IF_ERROR(check_dim(name, "N", n));
  TB_RETURN_IF_ERROR(check_dim(name, "K", k));
  const uint64_t want_codes = strip_codes_bytes(prec, n, k);
  const uint64_t want_scales = strip_scales_bytes(n, k);
  if (owned_codes.size() != want_codes || owned_scales.size() * 2 != want_scales) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': codes %zu bytes, scales %zu bytes (a %s strip "
                 "set of N = %lld, K = %lld needs %llu and %llu)", name.c_str(),
                 owned_codes.size(), owned_scales.size() * 2, prec_name(prec), (ll)n, (ll)k,
                 (ull)want_codes, (ull)want_scales);
  }
  TB_RETURN_IF_ERROR(check_ranges(name, n, ranges));
  std::vector<uint8_t> scale_bytes(want_scales);
  for (size_t i = 0; i < owned_scales.size(); ++i) {  // little-endian on every host
    scale_bytes[2 * i] = static_cast<uint8_t>(owned_scales[i]);
    scale_bytes[2 * i + 1] = static_cast<uint8_t>(owned_scales[i] >> 8);
  }
  owned_scales = {};
  if (const PaddingProblem p = find_bad_padding(prec, n, k, owned_codes.data(), scale_bytes.data())) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': %s byte %llu is padding (column %lld%s) and "
                 "holds 0x%02x (expected %s: N = %lld, K = %lld)", name.c_str(), p.payload,
                 (ull)p.offset, (ll)p.column, p.k < 0 ? "" : Format(", k %lld", (ll)p.k).c_str(),
                 p.found, p.k < 0 ? "scale 0" : precision_traits(prec).padding_text,
                 (ll)n, (ll)k);
  }
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
  if (precision_known(prec) && n >= 1 && n <= kMaxDim && k >= 1 &&
      k <= kMaxDim &&
      (codes.size() != strip_codes_bytes(prec, n, k) ||
       scales.size() * 2 != strip_scales_bytes(n, k))) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': codes %zu bytes, scales %zu bytes (a %s strip "
                 "set of N = %lld, K = %lld needs %llu and %llu)", name.c_str(), codes.size(),
                 scales.size() * 2, prec_name(prec), (ll)n, (ll)k,
                 (ull)strip_codes_bytes(prec, n, k), (ull)strip_scales_bytes(n, k));
  }
  return adopt_strips(name, prec, n, k, std::vector<uint8_t>(codes.begin(), codes.end()),
                      std::vector<uint16_t>(scales.begin(), scales.end()), std::move(ranges),
                      std::move(source_tensors));
}

Status Writer::add_matrix(const std::string& name, int64_t rows, int64_t cols,
                          std::span<const float> data, std::vector<std::string> source_tensors) {
  TB_RETURN_IF_ERROR(check_dim(name, "rows", rows));
  TB_RETURN_IF_ERROR(check_dim(name, "cols", cols));
  const uint64_t count = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  if (data.size() != count) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': matrix data holds %zu floats (expected %lld x "
                 "%lld = %llu)", name.c_str(), data.size(), (ll)rows, (ll)cols, (ull)count);
  }
  std::vector<uint8_t> bytes(count * 4);
  for (uint64_t i = 0; i < count; ++i) store_u32(bytes.data() + 4 * i, std::bit_cast<uint32_t>(data[i]));
  Entry e;
  e.name = name;
  e.kind = TB_WEIGHTS_F32;
  e.prec = TB_PREC_Q8;  // stored as 0
  e.n = rows;
  e.k = cols;
  e.source_tensors = std::move(source_tensors);
  std::vector<std::vector<uint8_t>> payloads;
  payloads.push_back(std::move(bytes));
  return add_pending(std::move(e), std::move(payloads));
}

namespace {

// Encodes the manifest with the payload offsets in `entries`.
std::vector<uint8_t> encode_manifest(const Provenance& prov, const std::vector<Entry>& entries) {
  std::vector<uint8_t> m;
  put_str(m, prov.source_file);
  put_str(m, prov.packer);
  for (const Entry& e : entries) {
    const bool strips = e.kind == TB_WEIGHTS_STRIPS;
    put_str(m, e.name);
    put_u32(m, static_cast<uint32_t>(e.kind));
    put_u32(m, strips ? static_cast<uint32_t>(e.prec) : 0u);
    put_u64(m, static_cast<uint64_t>(e.n));
    put_u64(m, static_cast<uint64_t>(e.k));
    put_u64(m, static_cast<uint64_t>(strips ? pad32(e.n) : e.n));
    put_u64(m, static_cast<uint64_t>(strips ? pad32(e.k) : e.k));
    put_u32(m, static_cast<uint32_t>(e.ranges.size()));
    for (const FusedRange& r : e.ranges) {
      put_str(m, r.name);
      put_u64(m, static_cast<uint64_t>(r.begin));
      put_u64(m, static_cast<uint64_t>(r.end));
    }
    put_u32(m, static_cast<uint32_t>(e.source_tensors.size()));
    for (const std::string& s : e.source_tensors) put_str(m, s);
    put_u32(m, static_cast<uint32_t>(e.payloads.size()));
    for (const Entry::Payload& p : e.payloads) {
      put_u64(m, p.offset);
      put_u64(m, p.bytes);
      put_u64(m, p.xxh64);
    }
  }
  return m;
}

Result<Plan> make_plan(const Provenance& prov, const std::vector<Entry>& pending_entries) {
  TB_RETURN_IF_ERROR(check_provenance_text("source_file", prov.source_file));
  TB_RETURN_IF_ERROR(check_provenance_text("packer", prov.packer));
  std::vector<Entry> entries = pending_entries;
  // Offsets are fixed-width, so the manifest's size does not depend on their values.
  const uint64_t manifest_bytes = encode_manifest(prov, entries).size();
  if (manifest_bytes > kMaxManifestBytes) {
    return Error(TB_INVALID_ARGUMENT, "the manifest would be %llu bytes (at most %llu)",
                 (ull)manifest_bytes, (ull)kMaxManifestBytes);
  }
  uint64_t at = align_up(kHeaderBytes + manifest_bytes);
  uint64_t end = kHeaderBytes + manifest_bytes;
  for (Entry& e : entries) {
    for (Entry::Payload& p : e.payloads) {
      p.offset = at;
      end = at + p.bytes;
      at = align_up(end);
    }
  }
  Plan plan;
  plan.file_bytes = end;
  plan.prefix.assign(kHeaderBytes, 0);
  uint8_t* h = plan.prefix.data();
  std::memcpy(h + kOffMagic, kMagic, sizeof(kMagic));
  store_u32(h + kOffVersion, kFormatVersion);
  store_u32(h + kOffHeaderBytes, kHeaderBytes);
  store_u64(h + kOffFileBytes, plan.file_bytes);
  store_u64(h + kOffManifestOff, kHeaderBytes);
  store_u64(h + kOffManifestBytes, manifest_bytes);
  store_u32(h + kOffEntryCount, static_cast<uint32_t>(entries.size()));
  const std::vector<uint8_t> manifest = encode_manifest(prov, entries);
  plan.prefix.insert(plan.prefix.end(), manifest.begin(), manifest.end());
  XXH64_state_t* st = XXH64_createState();
  if (!st) return Error(TB_RESOURCE_EXHAUSTED, "cannot allocate a hash state");
  XXH64_reset(st, 0);
  XXH64_update(st, plan.prefix.data(), kOffChecksum);
  XXH64_update(st, plan.prefix.data() + kHeaderBytes, manifest_bytes);
  store_u64(plan.prefix.data() + kOffChecksum, XXH64_digest(st));
  XXH64_freeState(st);
  return plan;
}

}  // namespace

Result<std::vector<uint8_t>> Writer::serialize(const Provenance& provenance) const {
  std::vector<Entry> entries;
  entries.reserve(pending_.size());
  for (const Pending& p : pending_) entries.push_back(p.entry);
  auto plan = make_plan(provenance, entries);
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
  auto plan = make_plan(provenance, entries);
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
