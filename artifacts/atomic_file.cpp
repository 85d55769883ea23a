#include "artifacts/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace twinbit::artifact {

Result<AtomicFile> AtomicFile::create(const std::string& path) {
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return Error(TB_UNAVAILABLE, "cannot create a temporary file beside %s (step: create): %s",
                 path.c_str(), std::strerror(errno));
  }
  AtomicFile f(path, tmp, fd);
  if (::fchmod(fd, 0644) != 0) {
    return Error(TB_UNAVAILABLE, "%s (step: chmod): %s", tmp.c_str(), std::strerror(errno));
  }
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(o.fd_) {
  o.fd_ = -1;
}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
  fd_ = -1;
}

Status AtomicFile::write(const void* data, uint64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd_, p, bytes > (uint64_t{1} << 30) ? (size_t{1} << 30) : bytes);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      abandon();
      return Error(TB_UNAVAILABLE, "writing %s: %s", tmp_.c_str(), std::strerror(err));
    }
    p += w;
    bytes -= static_cast<uint64_t>(w);
  }
  return Status();
}

Status AtomicFile::commit() {
  if (fd_ < 0) return Error(TB_FAILED_PRECONDITION, "%s: the file was already committed or abandoned", path_.c_str());
  if (::fsync(fd_) != 0) {
    const int err = errno;
    abandon();
    return Error(TB_UNAVAILABLE, "%s (step: fsync): %s", tmp_.c_str(), std::strerror(err));
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return Error(TB_UNAVAILABLE, "%s (step: close): %s", tmp_.c_str(), std::strerror(err));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return Error(TB_UNAVAILABLE, "cannot rename %s to %s (step: rename): %s", tmp_.c_str(),
                 path_.c_str(), std::strerror(err));
  }
  // The rename is durable only once the folder itself is on disk.
  const size_t slash = path_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    const int err = errno;
    if (dfd >= 0) ::close(dfd);
    return Error(TB_UNAVAILABLE, "%s was written but its folder %s could not be synced (step: "
                 "fsync folder): %s", path_.c_str(), dir.c_str(), std::strerror(err));
  }
  ::close(dfd);
  return Status();
}

Status write_file_atomic(const std::string& path, const void* data, uint64_t bytes) {
  auto f = AtomicFile::create(path);
  if (!f.ok()) return f.status();
  TB_RETURN_IF_ERROR(f->write(data, bytes));
  return f->commit();
}

}  // namespace twinbit::artifact
