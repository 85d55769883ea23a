// Reading a strip cache: map, validate everything in the header and manifest (format.h lists the
// checks), hand out views into the mapping. Nothing read from the file is used before it has been
// bounded: every length is compared with the bytes that remain before it is used.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "core/numerics.h"
#include "core/op_checks.h"

namespace twinbit::artifact {

namespace {

using ull = unsigned long long;
using ll = long long;

uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint64_t load_u64(const uint8_t* p) { return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32; }

// A bounds-checked sequential reader over the manifest. Every read names the field it is for,
// so a short manifest says which field ran past its end.
class Cursor {
 public:
  Cursor(const uint8_t* p, uint64_t size, uint64_t file_offset)
      : p_(p), size_(size), file_offset_(file_offset) {}
  uint64_t remaining() const { return size_ - pos_; }
  uint64_t position() const { return pos_; }

  Status need(uint64_t bytes, const std::string& field) const {
    if (bytes > remaining()) {
      return Error(TB_DATA_LOSS, "manifest ends inside %s (needs %llu bytes at file offset %llu, "
                   "%llu left)", field.c_str(), (ull)bytes, (ull)(file_offset_ + pos_),
                   (ull)remaining());
    }
    return Status();
  }
  Status u32(uint32_t* out, const std::string& field) {
    TB_RETURN_IF_ERROR(need(4, field));
    *out = load_u32(p_ + pos_);
    pos_ += 4;
    return Status();
  }
  Status u64(uint64_t* out, const std::string& field) {
    TB_RETURN_IF_ERROR(need(8, field));
    *out = load_u64(p_ + pos_);
    pos_ += 8;
    return Status();
  }
  Status i64(int64_t* out, const std::string& field) {
    uint64_t v = 0;
    TB_RETURN_IF_ERROR(u64(&v, field));
    *out = static_cast<int64_t>(v);
    return Status();
  }
  // A length-prefixed string of at most max_bytes.
  Status str(std::string* out, uint32_t max_bytes, const std::string& field) {
    uint32_t len = 0;
    TB_RETURN_IF_ERROR(u32(&len, field + " length"));
    if (len > max_bytes) {
      return Error(TB_DATA_LOSS, "%s length is %u bytes (expected at most %u)", field.c_str(),
                   len, max_bytes);
    }
    TB_RETURN_IF_ERROR(need(len, field));
    out->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return Status();
  }

 private:
  const uint8_t* p_;
  uint64_t size_;
  uint64_t file_offset_;
  uint64_t pos_ = 0;
};

Status check_dim(const std::string& field, int64_t v) {
  if (v < 1 || v > kMaxDim) {
    return Error(TB_DATA_LOSS, "%s = %lld is out of range (expected 1 .. %lld)", field.c_str(),
                 (ll)v, (ll)kMaxDim);
  }
  return Status();
}

// Position of e in entries, or entries.size() when e is not one of them (an Entry copied out of
// the artifact, or one from another artifact).
size_t index_of(const std::vector<Entry>& entries, const Entry& e) {
  const auto first = reinterpret_cast<uintptr_t>(entries.data());
  const auto at = reinterpret_cast<uintptr_t>(&e);
  if (entries.empty() || at < first || (at - first) % sizeof(Entry) != 0) return entries.size();
  return std::min<size_t>((at - first) / sizeof(Entry), entries.size());
}

struct Placed {
  uint64_t offset, bytes;
  std::string what;
};

}  // namespace

class Reader {
 public:
  static Result<std::unique_ptr<Artifact>> parse(std::span<const uint8_t> bytes,
                                                 const std::string& what);

 private:
  static Status header(std::span<const uint8_t> bytes, const std::string& what,
                       uint32_t* version, uint64_t* manifest_bytes, uint32_t* entry_count);
  static Status entry(Cursor& c, uint32_t index, uint64_t file_bytes, Entry* e);
};

Status Reader::header(std::span<const uint8_t> bytes, const std::string& what, uint32_t* version,
                      uint64_t* manifest_bytes, uint32_t* entry_count) {
  const uint8_t* h = bytes.data();
  const uint64_t size = bytes.size();
  if (size < kHeaderBytes) {
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

Status Reader::entry(Cursor& c, uint32_t index, uint64_t file_bytes, Entry* e) {
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
  if (strips ? (prec != TB_PREC_Q8 && prec != TB_PREC_Q4) : prec != 0) {
    return Error(TB_DATA_LOSS, "%s prec = %u (expected %s)", where.c_str(), prec,
                 strips ? "0 = q8 or 1 = q4" : "0 for an f32 matrix");
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
    TB_RETURN_IF_ERROR(c.str(&e->source_tensors[s], kMaxTextBytes,
                             Format("%s source tensor %u", where.c_str(), s)));
    if (!valid_text(e->source_tensors[s])) {
      return Error(TB_DATA_LOSS, "%s source tensor %u holds a control byte", where.c_str(), s);
    }
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

Result<std::unique_ptr<Artifact>> Reader::parse(std::span<const uint8_t> bytes,
                                                const std::string& what) {
  uint32_t version = 0, entry_count = 0;
  uint64_t manifest_bytes = 0;
  TB_RETURN_IF_ERROR(header(bytes, what, &version, &manifest_bytes, &entry_count));

  std::unique_ptr<Artifact> a(new Artifact());
  a->base_ = bytes.data();
  a->size_ = bytes.size();
  a->version_ = version;
  a->path_ = what;
  Cursor c(bytes.data() + kHeaderBytes, manifest_bytes, kHeaderBytes);
  auto fail = [&](const Status& s) { return Status(s.code(), what + ": " + s.message()); };
  Status s = c.str(&a->provenance_.source_file, kMaxTextBytes, "provenance source_file");
  if (s.ok() && !valid_text(a->provenance_.source_file)) {
    s = Error(TB_DATA_LOSS, "provenance source_file holds a control byte");
  }
  if (s.ok()) s = c.str(&a->provenance_.packer, kMaxTextBytes, "provenance packer");
  if (s.ok() && !valid_text(a->provenance_.packer)) {
    s = Error(TB_DATA_LOSS, "provenance packer holds a control byte");
  }
  if (!s.ok()) return fail(s);

  // Each entry takes at least 60 manifest bytes, so entry_count is also bounded by the manifest
  // size before anything is reserved for it.
  if (entry_count > c.remaining() / 60) {
    return fail(Error(TB_DATA_LOSS, "entry_count = %u cannot fit in the %llu manifest bytes left",
                      entry_count, (ull)c.remaining()));
  }
  a->entries_.resize(entry_count);
  std::unordered_set<std::string> names;
  std::vector<Placed> placed;
  for (uint32_t i = 0; i < entry_count; ++i) {
    Entry& e = a->entries_[i];
    TB_RETURN_IF_ERROR(fail(entry(c, i, bytes.size(), &e)));
    if (!names.insert(e.name).second) {
      return fail(Error(TB_DATA_LOSS, "entry %u name '%s' is a duplicate (names must be unique)",
                        i, e.name.c_str()));
    }
    for (size_t p = 0; p < e.payloads.size(); ++p) {
      placed.push_back({e.payloads[p].offset, e.payloads[p].bytes,
                        e.name + (e.kind == TB_WEIGHTS_F32 ? " data" : p == 0 ? " codes" : " scales")});
    }
  }
  if (c.remaining() != 0) {
    return fail(Error(TB_DATA_LOSS, "manifest has %llu trailing bytes after the last entry",
                      (ull)c.remaining()));
  }
  const uint64_t manifest_end = kHeaderBytes + manifest_bytes;
  std::sort(placed.begin(), placed.end(),
            [](const Placed& x, const Placed& y) { return x.offset < y.offset; });
  uint64_t floor = manifest_end;
  const char* floor_what = "the manifest";
  std::string prev;
  for (const Placed& p : placed) {
    if (p.offset < floor) {
      return fail(Error(TB_DATA_LOSS, "payload %s at offset %llu overlaps %s (which ends at %llu)",
                        p.what.c_str(), (ull)p.offset, floor_what, (ull)floor));
    }
    floor = p.offset + p.bytes;  // no overflow: offset + bytes <= file size was checked
    prev = p.what;
    floor_what = prev.c_str();
  }
  a->verified_.reset(new std::atomic<bool>[entry_count == 0 ? 1 : entry_count]);
  for (uint32_t i = 0; i < entry_count; ++i) a->verified_[i].store(false);
  return a;
}

Result<std::unique_ptr<Artifact>> parse(std::span<const uint8_t> bytes, const std::string& what) {
  return Reader::parse(bytes, what);
}

Result<std::unique_ptr<Artifact>> Artifact::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(errno == ENOENT ? TB_INVALID_ARGUMENT : TB_UNAVAILABLE, "cannot open %s: %s",
                 path.c_str(), std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    return Error(TB_INVALID_ARGUMENT, "%s is not a readable regular file%s%s", path.c_str(),
                 err ? ": " : "", err ? std::strerror(err) : "");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes) {
    ::close(fd);
    return Error(TB_DATA_LOSS, "%s: file is %llu bytes, smaller than the %u-byte header",
                 path.c_str(), (ull)size, kHeaderBytes);
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (map == MAP_FAILED) {
    return Error(TB_RESOURCE_EXHAUSTED, "cannot map %s (%llu bytes): %s", path.c_str(), (ull)size,
                 std::strerror(map_err));
  }
  auto parsed = Reader::parse({static_cast<const uint8_t*>(map), size}, path);
  if (!parsed.ok()) {
    ::munmap(map, size);
    return parsed.status();
  }
  std::unique_ptr<Artifact> a = std::move(parsed).value();
  a->mapped_ = true;
  a->path_ = path;
  return a;
}

Artifact::~Artifact() {
  if (mapped_ && base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

const Entry* Artifact::find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

tb_weights_view Artifact::view(const Entry& e) const {
  tb_weights_view v{};
  v.kind = e.kind;
  if (e.kind == TB_WEIGHTS_STRIPS) {
    v.strips.prec = e.prec;
    v.strips.n = e.n;
    v.strips.k = e.k;
    v.strips.np = pad32(e.n);
    v.strips.kp = pad32(e.k);
    v.strips.codes = base_ + e.payloads[kStripCodes].offset;
    v.strips.codes_bytes = e.payloads[kStripCodes].bytes;
    v.strips.scales = reinterpret_cast<const uint16_t*>(base_ + e.payloads[kStripScales].offset);
    v.strips.scales_bytes = e.payloads[kStripScales].bytes;
  } else {
    v.matrix.rows = e.n;
    v.matrix.cols = e.k;
    v.matrix.data = reinterpret_cast<const float*>(base_ + e.payloads[kMatrixData].offset);
  }
  return v;
}

Status Artifact::verify(const Entry& e) const {
  const size_t index = index_of(entries_, e);
  if (index >= entries_.size()) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' does not belong to %s", e.name.c_str(),
                 path_.c_str());
  }
  for (size_t p = 0; p < e.payloads.size(); ++p) {
    const Entry::Payload& pl = e.payloads[p];
    const uint64_t h = XXH64(base_ + pl.offset, pl.bytes, 0);
    if (h != pl.xxh64) {
      const char* pname = e.kind == TB_WEIGHTS_F32 ? "data" : p == kStripCodes ? "codes" : "scales";
      return Error(TB_DATA_LOSS, "%s: entry '%s' %s payload checksum mismatch (stored 0x%016llx, "
                   "computed 0x%016llx): the file is corrupt", path_.c_str(), e.name.c_str(),
                   pname, (ull)pl.xxh64, (ull)h);
    }
  }
  verified_[index].store(true, std::memory_order_release);
  return Status();
}

Result<tb_weights_view> Artifact::view_verified(const Entry& e) const {
  const size_t index = index_of(entries_, e);
  if (index >= entries_.size()) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' does not belong to %s", e.name.c_str(),
                 path_.c_str());
  }
  if (!verified_[index].load(std::memory_order_acquire)) TB_RETURN_IF_ERROR(verify(e));
  return view(e);
}

}  // namespace twinbit::artifact
