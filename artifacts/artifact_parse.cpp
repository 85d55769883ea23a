// Parsing a strip cache's header and manifest (artifact_parse.h): each field is compared with
// what format.h allows, and every length with the bytes that remain, before it is used.
#include "artifacts/artifact_parse.h"

#include <xxhash.h>

#include <cstring>
#include <unordered_set>

#include "artifacts/artifact_layout.h"
#include "artifacts/file_image.h"
#include "artifacts/format.h"
#include "artifacts/manifest_cursor.h"
#include "artifacts/text_rule.h"
#include "core/numerics.h"
#include "core/op_checks.h"

namespace twinbit::artifact {

namespace {

using ull = unsigned long long;
using ll = long long;

Status check_dim(const std::string& field, int64_t v) {
  if (v < 1 || v > kMaxDim) {
    return Error(TB_DATA_LOSS, "%s = %lld is out of range (expected 1 .. %lld)", field.c_str(),
                 (ll)v, (ll)kMaxDim);
  }
  return Status();
}

Status check_text_field(const std::string& field, const std::string& text) {
  if (const TextProblem p = check_text(text, kMaxTextBytes)) {
    return Error(TB_DATA_LOSS, "%s is not valid text: %s at byte %llu (expected UTF-8 without "
                 "control characters)", field.c_str(), p.what, (ull)p.offset);
  }
  return Status();
}

using layout::align_up;  // the writer's placement rule, checked here

Status header(std::span<const uint8_t> prefix, uint64_t size, const std::string& what,
              uint32_t* version, uint64_t* manifest_bytes, uint32_t* entry_count) {
  const uint8_t* h = prefix.data();
  if (size < kHeaderBytes || prefix.size() < kHeaderBytes) {
    return Error(TB_DATA_LOSS, "%s: file is %llu bytes, smaller than the %u-byte header",
                 what.c_str(), (ull)size, kHeaderBytes);
  }
  if (std::memcmp(h + kOffMagic, kMagic, sizeof(kMagic)) != 0) {
    char found[8 * 4 + 1] = {};
    for (int i = 0; i < 8; ++i) std::snprintf(found + 3 * i, 4, "%02x ", h[i]);
    return Error(TB_DATA_LOSS, "%s: invalid magic (found bytes %s; expected 'TWINBIT\\0' = "
                 "54 57 49 4e 42 49 54 00): not a twinbit artifact", what.c_str(), found);
  }
  *version = load_u32(h + kOffVersion);
  if (*version == 0 || *version > kFormatVersion) {
    return Error(TB_DATA_LOSS, "%s: file is format version %u, this reader supports 1 up to %u",
                 what.c_str(), *version, kFormatVersion);
  }
  const uint32_t header_bytes = load_u32(h + kOffHeaderBytes);
  if (header_bytes != kHeaderBytes) {
    return Error(TB_DATA_LOSS, "%s: header_bytes = %u (expected %u)", what.c_str(), header_bytes,
                 kHeaderBytes);
  }
  const uint64_t file_bytes = load_u64(h + kOffFileBytes);
  if (file_bytes != size) {
    return Error(TB_DATA_LOSS, "%s: header says the file is %llu bytes, it is %llu (truncated or "
                 "extended)", what.c_str(), (ull)file_bytes, (ull)size);
  }
  const uint64_t manifest_off = load_u64(h + kOffManifestOff);
  if (manifest_off != kHeaderBytes) {
    return Error(TB_DATA_LOSS, "%s: manifest_offset = %llu (expected %u, right after the header)",
                 what.c_str(), (ull)manifest_off, kHeaderBytes);
  }
  *manifest_bytes = load_u64(h + kOffManifestBytes);
  if (*manifest_bytes == 0 || *manifest_bytes > kMaxManifestBytes ||
      *manifest_bytes > size - kHeaderBytes) {
    return Error(TB_DATA_LOSS, "%s: manifest_bytes = %llu (expected 1 .. %llu and within the "
                 "%llu bytes after the header)", what.c_str(), (ull)*manifest_bytes,
                 (ull)kMaxManifestBytes, (ull)(size - kHeaderBytes));
  }
  if (prefix.size() < kHeaderBytes + *manifest_bytes) {  // the caller read less than the file has
    return Error(TB_DATA_LOSS, "%s: only %llu of the %llu header and manifest bytes could be read",
                 what.c_str(), (ull)prefix.size(), (ull)(kHeaderBytes + *manifest_bytes));
  }
  *entry_count = load_u32(h + kOffEntryCount);
  if (*entry_count > kMaxEntries) {
    return Error(TB_DATA_LOSS, "%s: entry_count = %u (expected at most %u)", what.c_str(),
                 *entry_count, kMaxEntries);
  }
  const uint32_t flags = load_u32(h + kOffFlags);
  const uint64_t reserved = load_u64(h + kOffReserved);
  if (flags != 0 || reserved != 0) {
    return Error(TB_DATA_LOSS, "%s: flags = 0x%x, reserved = 0x%llx (expected 0: no flags are "
                 "defined in format version 1)", what.c_str(), flags, (ull)reserved);
  }
  XXH64_state_t* st = XXH64_createState();
  if (!st) return Error(TB_RESOURCE_EXHAUSTED, "%s: cannot allocate a hash state", what.c_str());
  XXH64_reset(st, 0);
  XXH64_update(st, h, kOffChecksum);
  XXH64_update(st, h + kHeaderBytes, *manifest_bytes);
  const uint64_t computed = XXH64_digest(st);
  XXH64_freeState(st);
  const uint64_t stored = load_u64(h + kOffChecksum);
  if (stored != computed) {
    return Error(TB_DATA_LOSS, "%s: header checksum mismatch (stored 0x%016llx, computed "
                 "0x%016llx over the header and manifest): the file is corrupt", what.c_str(),
                 (ull)stored, (ull)computed);
  }
  return Status();
}
Status entry(Cursor& c, uint32_t index, uint64_t file_bytes, Entry* e) {
  std::string field = Format("entry %u name", index);
  TB_RETURN_IF_ERROR(c.str(&e->name, kMaxNameBytes, field));
  if (!valid_name(e->name)) {
    return Error(TB_DATA_LOSS, "entry %u name is empty or holds a byte outside printable ASCII "
                 "0x21..0x7e", index);
  }
  const std::string where = "entry '" + e->name + "'";
  uint32_t kind = 0, prec = 0;
  TB_RETURN_IF_ERROR(c.u32(&kind, where + " kind"));
  TB_RETURN_IF_ERROR(c.u32(&prec, where + " prec"));
  if (kind != TB_WEIGHTS_STRIPS && kind != TB_WEIGHTS_F32) {
    return Error(TB_DATA_LOSS, "%s kind = %u (expected 0 = strips, 1 = f32 matrix)",
                 where.c_str(), kind);
  }
  e->kind = static_cast<tb_weights_kind>(kind);
  const bool strips = e->kind == TB_WEIGHTS_STRIPS;
  if (strips ? (prec >= static_cast<uint32_t>(kPrecisionCount)) : prec != 0) {
    return Error(TB_DATA_LOSS, "%s prec = %u (expected %s)", where.c_str(), prec,
                 strips ? precision_codes() : "0 for an f32 matrix");
  }
  e->prec = static_cast<tb_prec>(prec);
  int64_t np = 0, kp = 0;
  TB_RETURN_IF_ERROR(c.i64(&e->n, where + " n"));
  TB_RETURN_IF_ERROR(c.i64(&e->k, where + " k"));
  TB_RETURN_IF_ERROR(c.i64(&np, where + " np"));
  TB_RETURN_IF_ERROR(c.i64(&kp, where + " kp"));
  TB_RETURN_IF_ERROR(check_dim(where + (strips ? " N" : " rows"), e->n));
  TB_RETURN_IF_ERROR(check_dim(where + (strips ? " K" : " cols"), e->k));
  const int64_t want_np = strips ? pad32(e->n) : e->n, want_kp = strips ? pad32(e->k) : e->k;
  if (np != want_np || kp != want_kp) {
    return Error(TB_DATA_LOSS, "%s padded sizes np = %lld, kp = %lld (expected %lld, %lld for "
                 "n = %lld, k = %lld)", where.c_str(), (ll)np, (ll)kp, (ll)want_np, (ll)want_kp,
                 (ll)e->n, (ll)e->k);
  }

  uint32_t nranges = 0;
  TB_RETURN_IF_ERROR(c.u32(&nranges, where + " range_count"));
  if (nranges > (strips ? kMaxRanges : 0u)) {
    return Error(TB_DATA_LOSS, "%s range_count = %u (expected at most %u)", where.c_str(),
                 nranges, strips ? kMaxRanges : 0u);
  }
  e->ranges.resize(nranges);
  std::unordered_set<std::string> range_names;
  for (uint32_t r = 0; r < nranges; ++r) {
    FusedRange& fr = e->ranges[r];
    TB_RETURN_IF_ERROR(c.str(&fr.name, kMaxNameBytes, Format("%s range %u name", where.c_str(), r)));
    if (!valid_name(fr.name) || !range_names.insert(fr.name).second) {
      return Error(TB_DATA_LOSS, "%s range %u name is empty, not printable ASCII, or repeated",
                   where.c_str(), r);
    }
    TB_RETURN_IF_ERROR(c.i64(&fr.begin, Format("%s range %u begin", where.c_str(), r)));
    TB_RETURN_IF_ERROR(c.i64(&fr.end, Format("%s range %u end", where.c_str(), r)));
    const int64_t floor = r == 0 ? 0 : e->ranges[r - 1].end;
    if (fr.begin < floor || fr.end <= fr.begin || fr.end > e->n) {
      return Error(TB_DATA_LOSS, "%s range '%s' = [%lld, %lld) (expected %lld <= begin < end <= "
                   "N = %lld: ranges ascending and disjoint)", where.c_str(), fr.name.c_str(),
                   (ll)fr.begin, (ll)fr.end, (ll)floor, (ll)e->n);
    }
  }

  uint32_t nsources = 0;
  TB_RETURN_IF_ERROR(c.u32(&nsources, where + " source_count"));
  if (nsources > kMaxSources) {
    return Error(TB_DATA_LOSS, "%s source_count = %u (expected at most %u)", where.c_str(),
                 nsources, kMaxSources);
  }
  e->source_tensors.resize(nsources);
  for (uint32_t s = 0; s < nsources; ++s) {
    const std::string field = Format("%s source tensor %u", where.c_str(), s);
    TB_RETURN_IF_ERROR(c.str(&e->source_tensors[s], kMaxTextBytes, field));
    TB_RETURN_IF_ERROR(check_text_field(field, e->source_tensors[s]));
  }

  uint32_t npayloads = 0;
  const uint32_t want_payloads = strips ? 2 : 1;
  TB_RETURN_IF_ERROR(c.u32(&npayloads, where + " payload_count"));
  if (npayloads != want_payloads) {
    return Error(TB_DATA_LOSS, "%s payload_count = %u (expected %u)", where.c_str(), npayloads,
                 want_payloads);
  }
  e->payloads.resize(npayloads);
  for (uint32_t p = 0; p < npayloads; ++p) {
    const char* pname = strips ? (p == kStripCodes ? "codes" : "scales") : "data";
    Entry::Payload& pl = e->payloads[p];
    const std::string pf = where + " " + pname;
    TB_RETURN_IF_ERROR(c.u64(&pl.offset, pf + " offset"));
    TB_RETURN_IF_ERROR(c.u64(&pl.bytes, pf + " bytes"));
    TB_RETURN_IF_ERROR(c.u64(&pl.xxh64, pf + " xxh64"));
    const uint64_t want = !strips ? static_cast<uint64_t>(e->n) * static_cast<uint64_t>(e->k) * 4
                          : p == kStripCodes ? strip_codes_bytes(e->prec, e->n, e->k)
                                             : strip_scales_bytes(e->n, e->k);
    if (pl.bytes != want) {
      return Error(TB_DATA_LOSS, "%s is %llu bytes (expected %llu for n = %lld, k = %lld)",
                   pf.c_str(), (ull)pl.bytes, (ull)want, (ll)e->n, (ll)e->k);
    }
    if (pl.offset % kPayloadAlign != 0) {
      return Error(TB_DATA_LOSS, "%s offset %llu is not a multiple of %llu", pf.c_str(),
                   (ull)pl.offset, (ull)kPayloadAlign);
    }
    if (pl.offset > file_bytes || pl.bytes > file_bytes - pl.offset) {
      return Error(TB_DATA_LOSS, "%s [%llu, +%llu) runs past the end of the %llu-byte file",
                   pf.c_str(), (ull)pl.offset, (ull)pl.bytes, (ull)file_bytes);
    }
  }
  return Status();
}

}  // namespace

const char* payload_name(const Entry& e, size_t p) {
  return e.kind == TB_WEIGHTS_F32 ? "data" : p == kStripCodes ? "codes" : "scales";
}

Result<std::unique_ptr<Artifact>> Reader::parse(std::span<const uint8_t> prefix,
                                                uint64_t file_bytes, const std::string& what) {
  uint32_t version = 0, entry_count = 0;
  uint64_t manifest_bytes = 0;
  TB_RETURN_IF_ERROR(header(prefix, file_bytes, what, &version, &manifest_bytes, &entry_count));

  std::unique_ptr<Artifact> a(new Artifact());
  a->size_ = file_bytes;
  a->version_ = version;
  a->path_ = what;
  a->manifest_end_ = kHeaderBytes + manifest_bytes;
  Cursor c(prefix.data() + kHeaderBytes, manifest_bytes, kHeaderBytes);
  auto fail = [&](const Status& s) { return Status(s.code(), what + ": " + s.message()); };
  Status s = c.str(&a->provenance_.source_file, kMaxTextBytes, "provenance source_file");
  if (s.ok()) s = check_text_field("provenance source_file", a->provenance_.source_file);
  if (s.ok()) s = c.str(&a->provenance_.packer, kMaxTextBytes, "provenance packer");
  if (s.ok()) s = check_text_field("provenance packer", a->provenance_.packer);
  if (!s.ok()) return fail(s);

  // Each entry takes at least 60 manifest bytes, so entry_count is also bounded by the manifest
  // size before anything is reserved for it.
  if (entry_count > c.remaining() / 60) {
    return fail(Error(TB_DATA_LOSS, "entry_count = %u cannot fit in the %llu manifest bytes left",
                      entry_count, (ull)c.remaining()));
  }
  a->entries_.resize(entry_count);
  std::unordered_set<std::string> names;
  // Placement: in manifest order, each payload at the first aligned offset after what precedes
  // it. `end` is where the previous payload (first: the manifest) ends.
  uint64_t end = a->manifest_end_;
  std::string end_what = "the manifest";
  for (uint32_t i = 0; i < entry_count; ++i) {
    Entry& e = a->entries_[i];
    TB_RETURN_IF_ERROR(fail(entry(c, i, file_bytes, &e)));
    if (!names.insert(e.name).second) {
      return fail(Error(TB_DATA_LOSS, "entry %u name '%s' is a duplicate (names must be unique)",
                        i, e.name.c_str()));
    }
    for (size_t p = 0; p < e.payloads.size(); ++p) {
      const Entry::Payload& pl = e.payloads[p];
      const std::string what_p = "entry '" + e.name + "' " + payload_name(e, p);
      if (pl.offset < end) {
        return fail(Error(TB_DATA_LOSS, "payload %s at offset %llu overlaps %s (which ends at "
                          "%llu)", what_p.c_str(), (ull)pl.offset, end_what.c_str(), (ull)end));
      }
      if (pl.offset != align_up(end)) {
        return fail(Error(TB_DATA_LOSS, "payload %s at offset %llu leaves a gap after %s (expected "
                          "offset %llu: payloads follow in manifest order, each at the next "
                          "multiple of %llu)", what_p.c_str(), (ull)pl.offset, end_what.c_str(),
                          (ull)align_up(end), (ull)kPayloadAlign));
      }
      end = pl.offset + pl.bytes;  // no overflow: offset + bytes <= file size was checked
      end_what = "payload " + what_p;
    }
  }
  if (c.remaining() != 0) {
    return fail(Error(TB_DATA_LOSS, "manifest has %llu trailing bytes after the last entry",
                      (ull)c.remaining()));
  }
  if (end != file_bytes) {
    return fail(Error(TB_DATA_LOSS, "file is %llu bytes but %s ends at %llu: %llu bytes of tail "
                      "(expected none: the file ends with its last payload)", (ull)file_bytes,
                      end_what.c_str(), (ull)end, (ull)(file_bytes - end)));
  }
  a->verified_.reset(new std::atomic<bool>[entry_count == 0 ? 1 : entry_count]);
  for (uint32_t i = 0; i < entry_count; ++i) a->verified_[i].store(false);
  return a;
}

Result<std::unique_ptr<Artifact>> Reader::parse_borrowed(std::span<const uint8_t> bytes,
                                                         const std::string& what) {
  auto parsed = parse(bytes, bytes.size(), what);
  if (parsed.ok()) {
    parsed.value()->image_ = FileImage::borrow(bytes.data(), bytes.size());
    parsed.value()->base_ = bytes.data();
    parsed.value()->mode_ = ReadMode::kCopy;  // memory, not a mapping this object watches
  }
  return parsed;
}

Result<std::unique_ptr<Artifact>> parse(std::span<const uint8_t> bytes, const std::string& what) {
  return Reader::parse_borrowed(bytes, what);
}
}  // namespace twinbit::artifact
