// Reading a strip cache: map (or copy) the file, validate everything in the header and manifest
// (format.h lists the checks), hand out views. Nothing read from the file is used before it has
// been bounded: every length is compared with the bytes that remain before it is used. Reads of a
// mapping go through read_guard.h, so a file that shrinks under it gives DATA_LOSS, not SIGBUS.
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
#include "artifacts/file_image.h"
#include "artifacts/format.h"
#include "artifacts/read_guard.h"
#include "artifacts/strip_padding.h"
#include "artifacts/text_rule.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"

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

Status check_text_field(const std::string& field, const std::string& text) {
  if (const TextProblem p = check_text(text, kMaxTextBytes)) {
    return Error(TB_DATA_LOSS, "%s is not valid text: %s at byte %llu (expected UTF-8 without "
                 "control characters)", field.c_str(), p.what, (ull)p.offset);
  }
  return Status();
}

uint64_t align_up(uint64_t v) { return (v + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign; }

const char* payload_name(const Entry& e, size_t p) {
  return e.kind == TB_WEIGHTS_F32 ? "data" : p == kStripCodes ? "codes" : "scales";
}

// Position of e in entries, or entries.size() when e is not one of them (an Entry copied out of
// the artifact, or one from another artifact).
size_t index_of(const std::vector<Entry>& entries, const Entry& e) {
  const auto first = reinterpret_cast<uintptr_t>(entries.data());
  const auto at = reinterpret_cast<uintptr_t>(&e);
  if (entries.empty() || at < first || (at - first) % sizeof(Entry) != 0) return entries.size();
  return std::min<size_t>((at - first) / sizeof(Entry), entries.size());
}

}  // namespace

class Reader {
 public:
  // Validates the header and manifest. `prefix` holds the file's first bytes: at least the header
  // and, when the header's manifest_bytes is valid, the manifest; `file_bytes` is the file's size.
  static Result<std::unique_ptr<Artifact>> parse(std::span<const uint8_t> prefix,
                                                 uint64_t file_bytes, const std::string& what);
  // parse() of the API: a whole image in memory, borrowed.
  static Result<std::unique_ptr<Artifact>> parse_borrowed(std::span<const uint8_t> bytes,
                                                          const std::string& what);

 private:
  static Status header(std::span<const uint8_t> prefix, uint64_t size, const std::string& what,
                       uint32_t* version, uint64_t* manifest_bytes, uint32_t* entry_count);
  static Status entry(Cursor& c, uint32_t index, uint64_t file_bytes, Entry* e);
};

Status Reader::header(std::span<const uint8_t> prefix, uint64_t size, const std::string& what,
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

namespace {

// A file descriptor and a mapping (of the file, or anonymous) released on every early return.
struct Held {
  int fd = -1;
  void* mem = MAP_FAILED;
  uint64_t bytes = 0;
  ~Held() {
    if (mem != MAP_FAILED) ::munmap(mem, bytes);
    if (fd >= 0) ::close(fd);
  }
};

Status shrank_under_mapping(const std::string& path, const char* during) {
  return Error(TB_DATA_LOSS, "%s: the file shrank under its mapping while %s (another process "
               "truncated or is rewriting it)", path.c_str(), during);
}

// kCopy: reads the whole file into anonymous memory, then makes it read-only.
Status read_whole_file(Held& h, const std::string& path, uint64_t size) {
  h.mem = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h.mem == MAP_FAILED) {
    return Error(TB_RESOURCE_EXHAUSTED, "cannot allocate %llu bytes to read %s into: %s",
                 (ull)size, path.c_str(), std::strerror(errno));
  }
  h.bytes = size;
  auto* out = static_cast<uint8_t*>(h.mem);
  for (uint64_t done = 0; done < size;) {
    const ssize_t r = ::pread(h.fd, out + done, std::min<uint64_t>(size - done, 1u << 30),
                              static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return Error(TB_UNAVAILABLE, "cannot read %s at offset %llu: %s", path.c_str(), (ull)done,
                   std::strerror(errno));
    }
    if (r == 0) {
      return Error(TB_DATA_LOSS, "%s shrank while it was being read (%llu bytes read of the %llu "
                   "it had when opened)", path.c_str(), (ull)done, (ull)size);
    }
    done += static_cast<uint64_t>(r);
  }
  struct stat st {};
  if (::fstat(h.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) != size) {
    return Error(TB_DATA_LOSS, "%s changed size while it was being read (%llu bytes when opened, "
                 "%llu after)", path.c_str(), (ull)size, (ull)st.st_size);
  }
  ::mprotect(h.mem, size, PROT_READ);  // views are const; a stray write should fault loudly
  ::close(h.fd);
  h.fd = -1;
  return Status();
}

// kMap: the header, then the manifest when the header's size for it is plausible (parse refuses
// the header otherwise), copied out of the mapping under the guard.
Result<std::vector<uint8_t>> read_prefix(const uint8_t* map, uint64_t size, const std::string& path) {
  std::vector<uint8_t> prefix(kHeaderBytes);
  if (!guarded_copy(prefix.data(), map, kHeaderBytes)) {
    return shrank_under_mapping(path, "its header was read");
  }
  const uint64_t mbytes = load_u64(prefix.data() + kOffManifestBytes);
  if (mbytes <= kMaxManifestBytes && mbytes <= size - kHeaderBytes) {
    prefix.resize(kHeaderBytes + mbytes);
    if (!guarded_copy(prefix.data() + kHeaderBytes, map + kHeaderBytes, mbytes)) {
      return shrank_under_mapping(path, "its manifest was read");
    }
  }
  return prefix;
}

}  // namespace

Result<std::unique_ptr<Artifact>> Artifact::open(const std::string& path,
                                                 const OpenOptions& options) {
  Held h;
  h.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (h.fd < 0) {
    return Error(errno == ENOENT ? TB_INVALID_ARGUMENT : TB_UNAVAILABLE, "cannot open %s: %s",
                 path.c_str(), std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(h.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    return Error(TB_INVALID_ARGUMENT, "%s is not a readable regular file%s%s", path.c_str(),
                 err ? ": " : "", err ? std::strerror(err) : "");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes) {
    return Error(TB_DATA_LOSS, "%s: file is %llu bytes, smaller than the %u-byte header",
                 path.c_str(), (ull)size, kHeaderBytes);
  }
  std::unique_ptr<Artifact> a;
  if (options.read == ReadMode::kCopy) {
    TB_RETURN_IF_ERROR(read_whole_file(h, path, size));
    auto parsed = Reader::parse({static_cast<const uint8_t*>(h.mem), size}, size, path);
    if (!parsed.ok()) return parsed.status();
    a = std::move(parsed).value();
  } else {
    h.mem = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, h.fd, 0);
    if (h.mem == MAP_FAILED) {
      return Error(TB_RESOURCE_EXHAUSTED, "cannot map %s (%llu bytes): %s", path.c_str(),
                   (ull)size, std::strerror(errno));
    }
    h.bytes = size;
    auto prefix = read_prefix(static_cast<const uint8_t*>(h.mem), size, path);
    if (!prefix.ok()) return prefix.status();
    auto parsed = Reader::parse(prefix.value(), size, path);
    if (!parsed.ok()) return parsed.status();
    a = std::move(parsed).value();
  }
  a->mode_ = options.read;
  a->image_ = FileImage::adopt_mapping(static_cast<const uint8_t*>(h.mem), size, h.fd);
  a->base_ = a->image_->data();
  a->fd_ = a->image_->fd();  // -1 in kCopy mode: read_whole_file closed it
  h.mem = MAP_FAILED;
  h.fd = -1;
  a->path_ = path;
  return a;
}

Artifact::~Artifact() = default;  // the image goes with its last user (file_image.h)

Status Artifact::check_unchanged() const {
  if (fd_ < 0) return Status();
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    return Error(TB_UNAVAILABLE, "%s: cannot stat the open file: %s", path_.c_str(),
                 std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) != size_) {
    return Error(TB_DATA_LOSS, "%s: the file %s under its mapping (%llu bytes when opened, %llu "
                 "now): another process truncated or rewrote it; open it again, or open it in the "
                 "copy read mode", path_.c_str(),
                 static_cast<uint64_t>(st.st_size) < size_ ? "shrank" : "grew", (ull)size_,
                 (ull)st.st_size);
  }
  return Status();
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
    // The payload sizes were checked against the shape when the entry was parsed.
    v.strips = StripLayout{e.prec, e.n, e.k}.view(
        base_ + e.payloads[kStripCodes].offset,
        reinterpret_cast<const uint16_t*>(base_ + e.payloads[kStripScales].offset));
  } else {
    v.matrix.rows = e.n;
    v.matrix.cols = e.k;
    v.matrix.data = reinterpret_cast<const float*>(base_ + e.payloads[kMatrixData].offset);
  }
  return v;
}

namespace {

// Everything verify() reads, computed in one pass that may run under the read guard: plain data
// in, plain data out (read_guard.h: no allocation, nothing to unwind).
struct Scan {
  const uint8_t* base;
  const Entry* e;
  uint64_t gap_begin[2];  // per payload: where the gap before it starts
  uint64_t hash[2];
  uint64_t bad_gap_byte[2];  // file offset of the first nonzero gap byte, or UINT64_MAX
  uint8_t gap_found[2];      // and its value
  PaddingProblem padding;
};

void scan_entry(void* arg) {
  auto* s = static_cast<Scan*>(arg);
  const Entry& e = *s->e;
  for (size_t p = 0; p < e.payloads.size(); ++p) {
    const Entry::Payload& pl = e.payloads[p];
    s->bad_gap_byte[p] = UINT64_MAX;
    for (uint64_t at = s->gap_begin[p]; at < pl.offset; ++at) {
      if (s->base[at] != 0) {
        s->bad_gap_byte[p] = at;
        s->gap_found[p] = s->base[at];
        break;
      }
    }
    s->hash[p] = XXH64(s->base + pl.offset, pl.bytes, 0);
  }
  if (e.kind == TB_WEIGHTS_STRIPS) {
    s->padding = find_bad_padding(e.prec, e.n, e.k, s->base + e.payloads[kStripCodes].offset,
                                  s->base + e.payloads[kStripScales].offset);
  }
}

}  // namespace

Status Artifact::verify(const Entry& e) const {
  const size_t index = index_of(entries_, e);
  if (index >= entries_.size()) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' does not belong to %s", e.name.c_str(),
                 path_.c_str());
  }
  TB_RETURN_IF_ERROR(check_unchanged());
  Scan scan{};
  scan.base = base_;
  scan.e = &e;
  uint64_t end = index == 0 ? manifest_end_ : entries_[index - 1].payloads.back().offset +
                                                  entries_[index - 1].payloads.back().bytes;
  for (size_t p = 0; p < e.payloads.size(); ++p) {
    scan.gap_begin[p] = end;
    end = e.payloads[p].offset + e.payloads[p].bytes;
  }
  bool faulted = false;
  if (fd_ >= 0) {  // a mapping: the file may shrink under it
    faulted = !guarded_run(base_, size_, scan_entry, &scan);
  } else {         // owned or borrowed memory
    scan_entry(&scan);
  }
  if (faulted) {
    return Error(TB_DATA_LOSS, "%s: entry '%s': the file shrank under its mapping while its "
                 "payloads were read (another process truncated or is rewriting it)",
                 path_.c_str(), e.name.c_str());
  }
  for (size_t p = 0; p < e.payloads.size(); ++p) {
    const Entry::Payload& pl = e.payloads[p];
    if (scan.hash[p] != pl.xxh64) {
      return Error(TB_DATA_LOSS, "%s: entry '%s' %s payload checksum mismatch (stored 0x%016llx, "
                   "computed 0x%016llx): the file is corrupt", path_.c_str(), e.name.c_str(),
                   payload_name(e, p), (ull)pl.xxh64, (ull)scan.hash[p]);
    }
    if (scan.bad_gap_byte[p] != UINT64_MAX) {
      return Error(TB_DATA_LOSS, "%s: entry '%s': byte %llu of the gap before its %s payload is "
                   "0x%02x (expected 0: gaps hold zeros)", path_.c_str(), e.name.c_str(),
                   (ull)scan.bad_gap_byte[p], payload_name(e, p), scan.gap_found[p]);
    }
  }
  if (const PaddingProblem& pp = scan.padding) {
    return Error(TB_DATA_LOSS, "%s: entry '%s' %s byte %llu is padding (column %lld%s) and holds "
                 "0x%02x (expected %s)", path_.c_str(), e.name.c_str(), pp.payload,
                 (ull)pp.offset, (ll)pp.column, pp.k < 0 ? "" : Format(", k %lld", (ll)pp.k).c_str(),
                 pp.found, pp.k < 0 ? "scale 0" : precision_traits(e.prec).padding_text);
  }
  verified_[index].store(true, std::memory_order_release);
  return Status();
}

Result<Weights> Artifact::weights(const Entry& e) const {
  auto v = view_verified(e);
  if (!v.ok()) return v.status();
  return Weights{v.value(), image_};
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
