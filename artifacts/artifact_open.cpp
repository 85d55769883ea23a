// Opening a strip cache: map the file (kMap) or copy it into memory (kCopy), hand the header and
// manifest to the parser (artifact_parse.h), and keep the open file to notice a size change later.
// Reads of a mapping go through read_guard.h, so a file that shrinks under it gives DATA_LOSS,
// not SIGBUS.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "artifacts/artifact.h"
#include "artifacts/artifact_parse.h"
#include "artifacts/file_image.h"
#include "artifacts/format.h"
#include "artifacts/huge_pages.h"
#include "artifacts/manifest_cursor.h"
#include "artifacts/read_guard.h"

namespace twinbit::artifact {

namespace {

using ull = unsigned long long;

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

// kCopy: reads the whole file into anonymous memory on 2 MiB pages where the system gives them
// (huge_pages.h: the CPU kernels stream the weights in place), then makes it read-only.
Status read_whole_file(Held& h, const std::string& path, uint64_t size) {
  void* mem = map_huge(size);
  h.mem = mem ? mem : MAP_FAILED;
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

}  // namespace twinbit::artifact
