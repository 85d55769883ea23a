// Handing out an opened strip cache's entries: lookup, views, and the payload verification done
// once per entry before a backend binds it (checksums, zero gaps, strip padding). Reads of a
// mapping run under read_guard.h, so a file that shrinks under it gives DATA_LOSS, not SIGBUS.
#include <xxhash.h>

#include <algorithm>
#include <cstdint>

#include "artifacts/artifact.h"
#include "artifacts/artifact_parse.h"
#include "artifacts/format.h"
#include "artifacts/read_guard.h"
#include "artifacts/strip_padding.h"
#include "core/numerics.h"
#include "core/strip_layout.h"

namespace twinbit::artifact {

namespace {

using ull = unsigned long long;
using ll = long long;

// Position of e in entries, or entries.size() when e is not one of them (an Entry copied out of
// the artifact, or one from another artifact).
size_t index_of(const std::vector<Entry>& entries, const Entry& e) {
  const auto first = reinterpret_cast<uintptr_t>(entries.data());
  const auto at = reinterpret_cast<uintptr_t>(&e);
  if (entries.empty() || at < first || (at - first) % sizeof(Entry) != 0) return entries.size();
  return std::min<size_t>((at - first) / sizeof(Entry), entries.size());
}

}  // namespace

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
