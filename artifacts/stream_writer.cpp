// StreamWriter (stream_writer.h): the layout is fixed at begin(), payloads are written as their
// entries come, the header and manifest last, over the bytes reserved for them.
#include "artifacts/stream_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "artifacts/artifact_layout.h"
#include "artifacts/atomic_file.h"
#include "artifacts/format.h"
#include "core/strip_layout.h"

namespace twinbit::artifact {

namespace {

// An unnamed temporary file: gone when closed or when the process dies.
Result<int> open_spool() {
  const char* dir = std::getenv("TMPDIR");
  std::string folder = dir && *dir ? dir : "/tmp";
  int fd = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string name = folder + "/.twinbit-spool-XXXXXX";  // no O_TMPFILE: unlink at once
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    return Error(TB_UNAVAILABLE, "creating a temporary file in %s for the payloads of a stream "
                 "output: %s", folder.c_str(), std::strerror(errno));
  }
  ::unlink(name.c_str());
  return fd;
}

Status write_all(int fd, const uint8_t* p, uint64_t bytes, const char* what) {
  while (bytes > 0) {
    const ssize_t w = ::write(fd, p, bytes > (uint64_t{1} << 30) ? (size_t{1} << 30) : bytes);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Error(TB_UNAVAILABLE, "writing %s: %s", what, std::strerror(errno));
    }
    p += w;
    bytes -= static_cast<uint64_t>(w);
  }
  return Status();
}

}  // namespace

Entry declare_strips(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                     std::vector<FusedRange> ranges, std::vector<std::string> source_tensors) {
  Entry e;
  e.name = name;
  e.kind = TB_WEIGHTS_STRIPS;
  e.prec = prec;
  e.n = n;
  e.k = k;
  e.ranges = std::move(ranges);
  e.source_tensors = std::move(source_tensors);
  return e;
}

Entry declare_matrix(const std::string& name, int64_t rows, int64_t cols,
                     std::vector<std::string> source_tensors) {
  Entry e;
  e.name = name;
  e.kind = TB_WEIGHTS_F32;
  e.n = rows;
  e.k = cols;
  e.source_tensors = std::move(source_tensors);
  return e;
}

Result<std::unique_ptr<StreamWriter>> StreamWriter::begin(OutputFile& out,
                                                          const Provenance& provenance,
                                                          std::vector<Entry> entries) {
  if (entries.size() > kMaxEntries) {
    return Error(TB_INVALID_ARGUMENT, "an artifact holds at most %u entries (%zu declared)",
                 kMaxEntries, entries.size());
  }
  std::unordered_set<std::string> names;
  for (Entry& e : entries) {
    TB_RETURN_IF_ERROR(layout::check_shape(e));
    if (!names.insert(e.name).second) {
      return Error(TB_INVALID_ARGUMENT, "entry name '%s' is already used (names must be unique)",
                   e.name.c_str());
    }
  }
  auto plan = layout::make_plan(provenance, entries);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<StreamWriter> w(new StreamWriter(out));
  w->provenance_ = provenance;
  w->entries_ = std::move(entries);
  w->prefix_bytes_ = plan->prefix.size();
  if (out.kind() == OutputFile::Kind::stream) {
    auto spool = open_spool();
    if (!spool.ok()) return spool.status();
    w->spool_fd_ = spool.value();
    w->at_ = w->prefix_bytes_;  // the spool holds the file from here on
  } else {
    // Reserved: overwritten by finish() once the checksums are known.
    const std::vector<uint8_t> zeros(w->prefix_bytes_, 0);
    TB_RETURN_IF_ERROR(w->put(zeros.data(), zeros.size()));
  }
  return w;
}

StreamWriter::~StreamWriter() {
  if (spool_fd_ >= 0) ::close(spool_fd_);
}

Status StreamWriter::spend(Status s) {
  if (!s.ok()) spent_ = true;
  return s;
}

Status StreamWriter::put(const void* data, uint64_t bytes) {
  if (spool_fd_ >= 0) {
    TB_RETURN_IF_ERROR(write_all(spool_fd_, static_cast<const uint8_t*>(data), bytes,
                                 "the payload spool of a stream output"));
  } else {
    TB_RETURN_IF_ERROR(out_.write(data, bytes));
  }
  at_ += bytes;
  return Status();
}

Status StreamWriter::put_payload(const uint8_t* data, uint64_t bytes) {
  static const uint8_t kZeros[kPayloadAlign] = {};
  Entry::Payload& p = entries_[next_].payloads[payload_];
  if (layout::align_up(at_) != p.offset || bytes != p.bytes) {  // the layout is begin()'s
    return Error(TB_INTERNAL, "entry '%s': payload %zu would land at %llu (%llu bytes), the "
                 "layout says %llu (%llu bytes)", entries_[next_].name.c_str(), payload_,
                 (unsigned long long)layout::align_up(at_), (unsigned long long)bytes,
                 (unsigned long long)p.offset, (unsigned long long)p.bytes);
  }
  TB_RETURN_IF_ERROR(put(kZeros, p.offset - at_));
  TB_RETURN_IF_ERROR(put(data, bytes));
  p.xxh64 = XXH64(data, bytes, 0);
  ++payload_;
  return Status();
}

Status StreamWriter::expect_next(const std::string& name, tb_weights_kind kind) {
  if (spent_) {
    return Error(TB_FAILED_PRECONDITION, "the artifact writer failed earlier (entry '%s' not "
                 "written)", name.c_str());
  }
  if (next_ >= entries_.size()) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' was not declared (all %zu declared entries "
                 "were added)", name.c_str(), entries_.size());
  }
  const Entry& e = entries_[next_];
  if (e.name != name || e.kind != kind) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' (%s) added where '%s' (%s) was declared "
                 "(entries are added in declared order)", name.c_str(),
                 kind == TB_WEIGHTS_STRIPS ? "strips" : "f32 matrix", e.name.c_str(),
                 e.kind == TB_WEIGHTS_STRIPS ? "strips" : "f32 matrix");
  }
  payload_ = 0;
  return Status();
}

Status StreamWriter::add_strips(const std::string& name, std::span<const uint8_t> codes,
                                std::span<const uint16_t> scales) {
  TB_RETURN_IF_ERROR(spend(expect_next(name, TB_WEIGHTS_STRIPS)));
  const Entry& e = entries_[next_];
  TB_RETURN_IF_ERROR(spend(layout::check_strip_sizes(name, e.prec, e.n, e.k, codes.size(),
                                                     scales.size() * 2)));
  const std::vector<uint8_t> scale_bytes = layout::scale_bytes(scales);
  TB_RETURN_IF_ERROR(spend(layout::check_strip_padding(name, e.prec, e.n, e.k, codes.data(),
                                                       scale_bytes.data())));
  TB_RETURN_IF_ERROR(spend(put_payload(codes.data(), codes.size())));
  TB_RETURN_IF_ERROR(spend(put_payload(scale_bytes.data(), scale_bytes.size())));
  ++next_;
  return Status();
}

Status StreamWriter::add_strips_streamed(const std::string& name, int64_t batch,
                                         const StripMaker& make) {
  TB_RETURN_IF_ERROR(spend(expect_next(name, TB_WEIGHTS_STRIPS)));
  const Entry& e = entries_[next_];
  const StripLayout layout{e.prec, e.n, e.k};
  const int64_t strips = layout.strips(), code_bytes = layout.strip_code_bytes();
  const int64_t strip_scales = layout.strip_scales();
  batch = std::max<int64_t>(1, std::min(batch, strips));
  std::vector<uint16_t> scales(static_cast<size_t>(strips * strip_scales), 0);
  std::vector<uint8_t> codes(static_cast<size_t>(batch * code_bytes));
  Entry::Payload& p = entries_[next_].payloads[kStripCodes];
  if (layout::align_up(at_) != p.offset) {
    return spend(Error(TB_INTERNAL, "entry '%s': codes would land at %llu, the layout says %llu",
                       name.c_str(), (unsigned long long)layout::align_up(at_),
                       (unsigned long long)p.offset));
  }
  static const uint8_t kZeros[kPayloadAlign] = {};
  TB_RETURN_IF_ERROR(spend(put(kZeros, p.offset - at_)));
  XXH64_state_t* hash = XXH64_createState();
  if (!hash) return spend(Error(TB_RESOURCE_EXHAUSTED, "cannot allocate a hash state"));
  XXH64_reset(hash, 0);
  Status st;
  for (int64_t s0 = 0; s0 < strips && st.ok(); s0 += batch) {
    const int64_t count = std::min(batch, strips - s0);
    std::fill(codes.begin(), codes.begin() + count * code_bytes, uint8_t{0});
    st = make(s0, count, codes.data(), scales.data() + s0 * strip_scales);
    for (int64_t i = 0; i < count && st.ok(); ++i) {  // a strip is a set of <= 32 columns
      const int64_t s = s0 + i, n_s = std::min<int64_t>(32, e.n - 32 * s);
      const std::vector<uint8_t> sb = layout::scale_bytes(
          std::span<const uint16_t>(scales.data() + s * strip_scales, strip_scales));
      st = layout::check_strip_padding(Format("%s (strip %lld)", name.c_str(), (long long)s),
                                       e.prec, n_s, e.k, codes.data() + i * code_bytes, sb.data());
    }
    if (st.ok()) st = put(codes.data(), static_cast<uint64_t>(count * code_bytes));
    if (st.ok()) XXH64_update(hash, codes.data(), static_cast<size_t>(count * code_bytes));
  }
  p.xxh64 = XXH64_digest(hash);
  XXH64_freeState(hash);
  TB_RETURN_IF_ERROR(spend(st));
  payload_ = 1;
  codes = {};
  const std::vector<uint8_t> scale_bytes = layout::scale_bytes(scales);
  TB_RETURN_IF_ERROR(spend(put_payload(scale_bytes.data(), scale_bytes.size())));
  ++next_;
  return Status();
}

Status StreamWriter::add_matrix(const std::string& name, std::span<const float> data) {
  TB_RETURN_IF_ERROR(spend(expect_next(name, TB_WEIGHTS_F32)));
  const Entry& e = entries_[next_];
  const uint64_t count = static_cast<uint64_t>(e.n) * static_cast<uint64_t>(e.k);
  if (data.size() != count) {
    return spend(Error(TB_INVALID_ARGUMENT, "entry '%s': matrix data holds %zu floats (expected "
                       "%lld x %lld = %llu)", name.c_str(), data.size(), (long long)e.n,
                       (long long)e.k, (unsigned long long)count));
  }
  const std::vector<uint8_t> bytes = layout::matrix_bytes(data);
  TB_RETURN_IF_ERROR(spend(put_payload(bytes.data(), bytes.size())));
  ++next_;
  return Status();
}

Status StreamWriter::finish() {
  if (spent_) return Error(TB_FAILED_PRECONDITION, "the artifact writer failed earlier");
  if (next_ != entries_.size()) {
    return spend(Error(TB_FAILED_PRECONDITION, "%zu of %zu declared entries were added (next: "
                       "'%s')", next_, entries_.size(), entries_[next_].name.c_str()));
  }
  spent_ = true;  // whatever happens below, the writer is done
  auto plan = layout::make_plan(provenance_, entries_);
  if (!plan.ok()) return plan.status();
  if (plan->prefix.size() != prefix_bytes_ || plan->file_bytes != at_) {
    return Error(TB_INTERNAL, "the artifact layout changed while writing (manifest %zu bytes, "
                 "was %llu; file %llu bytes, wrote %llu)", plan->prefix.size(),
                 (unsigned long long)prefix_bytes_, (unsigned long long)plan->file_bytes,
                 (unsigned long long)at_);
  }
  if (spool_fd_ < 0) {
    TB_RETURN_IF_ERROR(out_.write_at(0, plan->prefix.data(), plan->prefix.size()));
    return out_.commit();
  }
  TB_RETURN_IF_ERROR(out_.write(plan->prefix.data(), plan->prefix.size()));
  if (::lseek(spool_fd_, 0, SEEK_SET) != 0) {
    return Error(TB_UNAVAILABLE, "rewinding the payload spool: %s", std::strerror(errno));
  }
  std::vector<uint8_t> buf(size_t{1} << 20);
  for (;;) {
    const ssize_t r = ::read(spool_fd_, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Error(TB_UNAVAILABLE, "reading the payload spool: %s", std::strerror(errno));
    if (r == 0) break;
    TB_RETURN_IF_ERROR(out_.write(buf.data(), static_cast<uint64_t>(r)));
  }
  return out_.commit();
}

}  // namespace twinbit::artifact
