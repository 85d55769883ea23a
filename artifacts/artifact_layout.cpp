// The checks and the layout both artifact writers share (artifact_layout.h).
#include "artifacts/artifact_layout.h"

#include <xxhash.h>

#include <bit>
#include <cstring>
#include <unordered_set>

#include "artifacts/format.h"
#include "artifacts/strip_padding.h"
#include "artifacts/text_rule.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/precision.h"

namespace twinbit::artifact::layout {

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

Status check_provenance_text(const char* field, const std::string& text) {
  if (const TextProblem p = check_text(text, kMaxTextBytes)) {
    return Error(TB_INVALID_ARGUMENT, "provenance %s (%zu bytes) is not valid text: %s at byte "
                 "%llu (expected at most %u bytes of UTF-8 without control characters)", field,
                 text.size(), p.what, (ull)p.offset, kMaxTextBytes);
  }
  return Status();
}

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

}  // namespace

uint64_t align_up(uint64_t v) { return (v + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign; }

Status check_name(const std::string& name) {
  if (!valid_name(name)) {
    return Error(TB_INVALID_ARGUMENT, "entry name '%s' (%zu bytes) is invalid (expected 1 .. %u "
                 "bytes of printable ASCII without spaces)", name.c_str(), name.size(),
                 kMaxNameBytes);
  }
  return Status();
}

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

Status check_provenance(const Provenance& provenance) {
  TB_RETURN_IF_ERROR(check_provenance_text("source_file", provenance.source_file));
  return check_provenance_text("packer", provenance.packer);
}

Status check_shape(Entry& e) {
  TB_RETURN_IF_ERROR(check_name(e.name));
  if (e.kind == TB_WEIGHTS_STRIPS) {
    if (e.prec != TB_PREC_Q8 && e.prec != TB_PREC_Q4) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': precision %d is unknown (expected 0 = q8, "
                   "1 = q4)", e.name.c_str(), static_cast<int>(e.prec));
    }
    TB_RETURN_IF_ERROR(check_dim(e.name, "N", e.n));
    TB_RETURN_IF_ERROR(check_dim(e.name, "K", e.k));
    TB_RETURN_IF_ERROR(check_ranges(e.name, e.n, e.ranges));
    e.payloads.assign(2, {});
    e.payloads[kStripCodes].bytes = strip_codes_bytes(e.prec, e.n, e.k);
    e.payloads[kStripScales].bytes = strip_scales_bytes(e.n, e.k);
  } else if (e.kind == TB_WEIGHTS_F32) {
    TB_RETURN_IF_ERROR(check_dim(e.name, "rows", e.n));
    TB_RETURN_IF_ERROR(check_dim(e.name, "cols", e.k));
    if (!e.ranges.empty()) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': an f32 matrix has no fused ranges (%zu "
                   "given)", e.name.c_str(), e.ranges.size());
    }
    e.prec = TB_PREC_Q8;  // stored as 0
    e.payloads.assign(1, {});
    e.payloads[kMatrixData].bytes = static_cast<uint64_t>(e.n) * static_cast<uint64_t>(e.k) * 4;
  } else {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': weights kind %d is unknown (expected 0 = "
                 "strips, 1 = f32 matrix)", e.name.c_str(), static_cast<int>(e.kind));
  }
  return check_sources(e.name, e.source_tensors);
}

Status check_strip_sizes(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                         uint64_t codes_bytes, uint64_t scales_bytes) {
  const uint64_t want_codes = strip_codes_bytes(prec, n, k);
  const uint64_t want_scales = strip_scales_bytes(n, k);
  if (codes_bytes != want_codes || scales_bytes != want_scales) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': codes %llu bytes, scales %llu bytes (a %s strip "
                 "set of N = %lld, K = %lld needs %llu and %llu)", name.c_str(), (ull)codes_bytes,
                 (ull)scales_bytes, prec_name(prec), (ll)n, (ll)k, (ull)want_codes,
                 (ull)want_scales);
  }
  return Status();
}

Status check_strip_padding(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                           const uint8_t* codes, const uint8_t* scale_bytes) {
  if (const PaddingProblem p = find_bad_padding(prec, n, k, codes, scale_bytes)) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s': %s byte %llu is padding (column %lld%s) and "
                 "holds 0x%02x (expected %s: N = %lld, K = %lld)", name.c_str(), p.payload,
                 (ull)p.offset, (ll)p.column, p.k < 0 ? "" : Format(", k %lld", (ll)p.k).c_str(),
                 p.found, p.k < 0 ? "scale 0" : precision_traits(prec).padding_text,
                 (ll)n, (ll)k);
  }
  return Status();
}

std::vector<uint8_t> scale_bytes(std::span<const uint16_t> scales) {
  std::vector<uint8_t> out(scales.size() * 2);
  for (size_t i = 0; i < scales.size(); ++i) {
    out[2 * i] = static_cast<uint8_t>(scales[i]);
    out[2 * i + 1] = static_cast<uint8_t>(scales[i] >> 8);
  }
  return out;
}

std::vector<uint8_t> matrix_bytes(std::span<const float> data) {
  std::vector<uint8_t> out(data.size() * 4);
  for (size_t i = 0; i < data.size(); ++i) {
    store_u32(out.data() + 4 * i, std::bit_cast<uint32_t>(data[i]));
  }
  return out;
}

Result<Plan> make_plan(const Provenance& prov, std::vector<Entry>& entries) {
  TB_RETURN_IF_ERROR(check_provenance(prov));
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

}  // namespace twinbit::artifact::layout
