#include "artifacts/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <utility>

namespace twinbit::artifact {
namespace {

constexpr char kTempPrefix[] = ".twinbit-tmp-";
constexpr int kMaxLinks = 40;  // the kernel's own limit on a chain of symlinks

std::string folder_of(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}

std::string name_of(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

const std::string* input_that_is(const struct stat& st, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    struct stat s {};
    if (!in.empty() && ::stat(in.c_str(), &s) == 0 && same_file(s, st)) return &in;
  }
  return nullptr;
}

// Whether `folder` is this process's descriptor folder, however it is spelled (/dev/fd,
// /proc/self/fd, /proc/<pid>/fd): a link there is a descriptor to stream to, not a file to replace.
bool is_own_fd_folder(const std::string& folder) {
  char buf[PATH_MAX];
  if (!::realpath(folder.c_str(), buf)) return false;
  return buf == "/proc/" + std::to_string(::getpid()) + "/fd";
}

std::string temp_name(const std::string& for_name) {
  // Held on the heap: read_guard.cpp's initial-exec variable makes all of a library's TLS static,
  // and a 2.5 KB generator in it does not fit the static TLS that a dlopen'ed module (the Python
  // extension) can get ("cannot allocate memory in static TLS block").
  static thread_local std::unique_ptr<std::mt19937_64> rng;
  if (!rng) rng = std::make_unique<std::mt19937_64>(std::random_device{}() ^ (uint64_t(::getpid()) << 32));
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s = kTempPrefix + for_name.substr(0, 100) + "-";
  for (int i = 0; i < 6; ++i) s += kChars[(*rng)() % (sizeof(kChars) - 1)];
  return s;
}

// Where the bytes go: a descriptor of this process (fd >= 0) or the path after every symlink.
struct Resolved {
  std::string path;
  int fd = -1;
};

Result<Resolved> resolve(const std::string& given) {
  if (given == "-") return Resolved{given, STDOUT_FILENO};
  std::string p = given;
  for (int hops = 0;; ++hops) {
    const std::string folder = folder_of(p);
    if (is_own_fd_folder(folder)) {
      const std::string n = name_of(p);
      char* end = nullptr;
      const long fd = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || fd < 0 || fd > INT_MAX || ::fcntl(int(fd), F_GETFD) < 0) {
        return Error(TB_INVALID_ARGUMENT, "%s: '%s' is not an open descriptor of this process",
                     given.c_str(), n.c_str());
      }
      return Resolved{given, int(fd)};
    }
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return Resolved{p, -1};
    if (hops == kMaxLinks) {
      return Error(TB_INVALID_ARGUMENT, "%s: more than %d symlinks to follow", given.c_str(), kMaxLinks);
    }
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof(buf));
    if (n < 0 || n == ssize_t(sizeof(buf))) {
      return Error(TB_INVALID_ARGUMENT, "%s: cannot read the symlink %s: %s", given.c_str(),
                   p.c_str(), n < 0 ? std::strerror(errno) : "target too long");
    }
    const std::string link(buf, size_t(n));
    p = link[0] == '/' ? link : folder + "/" + link;
  }
}

const char* file_type(mode_t m) {
  return S_ISSOCK(m) ? "socket" : S_ISBLK(m) ? "block device" : "special file";
}

}  // namespace

Result<OutputFile> OutputFile::open(const std::string& path, const OutputRules& rules) {
  if (path.empty()) return Error(TB_INVALID_ARGUMENT, "an empty output path");
  auto resolved = resolve(path);
  if (!resolved.ok()) return resolved.status();
  OutputFile f;
  f.path_ = path;
  f.target_ = resolved->path;
  struct stat st {};
  const bool exists = resolved->fd < 0 && ::stat(f.target_.c_str(), &st) == 0;
  if (!exists && resolved->fd < 0 && errno != ENOENT) {
    return Error(TB_INVALID_ARGUMENT, "output %s: %s", path.c_str(), std::strerror(errno));
  }
  if (exists && S_ISDIR(st.st_mode)) {
    return Error(TB_INVALID_ARGUMENT, "output %s is a folder; give a file name", path.c_str());
  }

  if (resolved->fd >= 0 || (exists && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))) {
    f.kind_ = Kind::stream;
    f.target_ = path;
    f.fd_ = resolved->fd >= 0 ? ::fcntl(resolved->fd, F_DUPFD_CLOEXEC, 0)
                              : ::open(resolved->path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (f.fd_ < 0) {
      return Error(TB_INVALID_ARGUMENT, "cannot open output %s for writing: %s", path.c_str(),
                   std::strerror(errno));
    }
    struct stat out {}, std_out {};
    if (::fstat(f.fd_, &out) == 0) {
      if (const std::string* in = input_that_is(out, rules.inputs)) {
        return Error(TB_INVALID_ARGUMENT, "output %s is the input %s: refusing to write over "
                     "what this command reads", path.c_str(), in->c_str());
      }
      f.is_stdout_ = ::fstat(STDOUT_FILENO, &std_out) == 0 && same_file(out, std_out);
    }
    return f;
  }

  if (exists) {
    if (!S_ISREG(st.st_mode)) {
      return Error(TB_INVALID_ARGUMENT, "output %s is a %s; outputs are regular files, FIFOs or "
                   "character devices", path.c_str(), file_type(st.st_mode));
    }
    if (const std::string* in = input_that_is(st, rules.inputs)) {
      return Error(TB_INVALID_ARGUMENT, "output %s is the input %s: refusing to write over what "
                   "this command reads", path.c_str(), in->c_str());
    }
    if ((st.st_mode & 0222) == 0 || (::access(f.target_.c_str(), W_OK) != 0 && errno == EACCES)) {
      return Error(TB_INVALID_ARGUMENT, "output %s is read-only (mode %04o): refusing to replace "
                   "it; make it writable or remove it first", path.c_str(), unsigned(st.st_mode & 07777));
    }
    f.existed_ = true;
    f.mode_ = st.st_mode & 0777;
    f.uid_ = st.st_uid;
    f.gid_ = st.st_gid;
  }
  f.name_ = name_of(f.target_);
  if (f.name_.empty() || f.name_ == "." || f.name_ == "..") {
    return Error(TB_INVALID_ARGUMENT, "output %s names a folder; give a file name", path.c_str());
  }
  f.dir_ = folder_of(f.target_);
  f.dir_fd_ = ::open(f.dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char canon[PATH_MAX];
  if (f.dir_fd_ < 0 || !::realpath(f.dir_.c_str(), canon)) {
    const int err = errno;
    if (err == ENOENT) {
      return Error(TB_INVALID_ARGUMENT, "output %s: there is no folder %s", path.c_str(), f.dir_.c_str());
    }
    if (err == ENOTDIR) {
      return Error(TB_INVALID_ARGUMENT, "output %s: %s is not a folder", path.c_str(), f.dir_.c_str());
    }
    return Error(TB_INVALID_ARGUMENT, "output %s: cannot open its folder %s: %s", path.c_str(),
                 f.dir_.c_str(), std::strerror(err));
  }
  f.dir_ = canon;
  f.target_ = (f.dir_ == "/" ? "/" : f.dir_ + "/") + f.name_;
  remove_stale_temporaries(f.dir_);
  TB_RETURN_IF_ERROR(f.open_temporary(rules));
  return f;
}

Status OutputFile::open_temporary(const OutputRules& rules) {
  auto creation_error = [&](int err) {
    const bool usage = err == EACCES || err == EPERM || err == EROFS;
    return Error(usage ? TB_INVALID_ARGUMENT : TB_UNAVAILABLE, "output %s: cannot create a file "
                 "in the folder %s: %s", path_.c_str(), dir_.c_str(), std::strerror(err));
  };
  if (rules.unnamed_temporary) {
    fd_ = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_EX | LOCK_NB);  // keeps a cleaner off its temporary name during commit
      return Status();
    }
    // No O_TMPFILE on this filesystem (or kernel): the named fallback below.
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return creation_error(errno);
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = temp_name(name_);
    const int fd = ::openat(dir_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return creation_error(errno);
    }
    // A cleaner may have taken the lock and removed the name before our lock: then try again.
    struct stat a {}, b {};
    if (::flock(fd, LOCK_EX) == 0 && ::fstat(fd, &a) == 0 &&
        ::fstatat(dir_fd_, name.c_str(), &b, AT_SYMLINK_NOFOLLOW) == 0 && same_file(a, b)) {
      fd_ = fd;
      tmp_name_ = name;
      return Status();
    }
    ::close(fd);
  }
  return Error(TB_UNAVAILABLE, "output %s: no free temporary name in %s", path_.c_str(), dir_.c_str());
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)), target_(std::move(o.target_)), dir_(std::move(o.dir_)),
      name_(std::move(o.name_)), tmp_name_(std::exchange(o.tmp_name_, {})), kind_(o.kind_),
      fd_(std::exchange(o.fd_, -1)), dir_fd_(std::exchange(o.dir_fd_, -1)), existed_(o.existed_),
      is_stdout_(o.is_stdout_), mode_(o.mode_), uid_(o.uid_), gid_(o.gid_), written_(o.written_) {}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  // Unlink before close: the name goes while our lock still guards it.
  if (!tmp_name_.empty()) ::unlinkat(dir_fd_, tmp_name_.c_str(), 0);
  tmp_name_.clear();
  if (fd_ >= 0) ::close(fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  fd_ = dir_fd_ = -1;
}

Status OutputFile::fail(const char* step, int err) {
  discard();
  return Error(TB_UNAVAILABLE, "%s %s: %s", step, target_.c_str(), std::strerror(err));
}

Status OutputFile::write(const void* data, uint64_t bytes) {
  if (fd_ < 0) return Error(TB_FAILED_PRECONDITION, "%s: the output was already committed or discarded", path_.c_str());
  // Text the program printed earlier must come out before these bytes.
  if (kind_ == Kind::stream) {
    std::fflush(stdout);
    std::fflush(stderr);
  }
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd_, p, bytes > (uint64_t{1} << 30) ? (size_t{1} << 30) : bytes);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a descriptor someone made non-blocking: wait until it drains
        pollfd pfd{fd_, POLLOUT, 0};
        ::poll(&pfd, 1, -1);
        continue;
      }
      return fail("writing", errno);
    }
    p += w;
    bytes -= static_cast<uint64_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  return Status();
}

Status OutputFile::write_at(uint64_t offset, const void* data, uint64_t bytes) {
  if (fd_ < 0) return Error(TB_FAILED_PRECONDITION, "%s: the output was already committed or discarded", path_.c_str());
  if (kind_ == Kind::stream) {
    return Error(TB_FAILED_PRECONDITION, "%s is a stream: bytes already sent cannot be rewritten",
                 path_.c_str());
  }
  if (offset > written_ || bytes > written_ - offset) {
    return Error(TB_FAILED_PRECONDITION, "%s: rewriting bytes [%llu, +%llu) beyond the %llu written",
                 path_.c_str(), (unsigned long long)offset, (unsigned long long)bytes,
                 (unsigned long long)written_);
  }
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t w = ::pwrite(fd_, p, bytes > (uint64_t{1} << 30) ? (size_t{1} << 30) : bytes,
                               static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail("writing", errno);
    }
    p += w;
    offset += static_cast<uint64_t>(w);
    bytes -= static_cast<uint64_t>(w);
  }
  return Status();
}

Status OutputFile::link_and_rename() {
  // linkat cannot replace a file: the unnamed temporary gets a temporary name, renamed after.
  for (int attempt = 0; tmp_name_.empty(); ++attempt) {
    if (attempt == 100) return fail("naming the temporary of", EEXIST);
    const std::string name = temp_name(name_);
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    if (::linkat(AT_FDCWD, self.c_str(), dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      tmp_name_ = name;
      break;
    }
    const int err = errno;
    if (err == EEXIST) continue;
    // Without /proc, AT_EMPTY_PATH (it needs CAP_DAC_READ_SEARCH).
    if (::linkat(fd_, "", dir_fd_, name.c_str(), AT_EMPTY_PATH) == 0) {
      tmp_name_ = name;
      break;
    }
    return fail("linking the temporary of", err);
  }
  if (::renameat(dir_fd_, tmp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    return fail("renaming the temporary onto", errno);
  }
  tmp_name_.clear();
  return Status();
}

Status OutputFile::commit() {
  if (fd_ < 0) return Error(TB_FAILED_PRECONDITION, "%s: the output was already committed or discarded", path_.c_str());
  if (kind_ == Kind::stream) {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) {
      return Error(TB_UNAVAILABLE, "closing %s: %s", target_.c_str(), std::strerror(errno));
    }
    return Status();
  }
  if (existed_ && (uid_ != ::geteuid() || gid_ != ::getegid())) {
    // Keep the owner where this process may (root), else at least the group; else ours.
    if (::fchown(fd_, uid_, gid_) != 0) (void)::fchown(fd_, uid_t(-1), gid_);
  }
  // After the owner: a chown may clear mode bits.
  if (::fchmod(fd_, mode_) != 0) return fail("setting the mode of", errno);
  if (::fsync(fd_) != 0) return fail("syncing", errno);
  TB_RETURN_IF_ERROR(link_and_rename());
  // The rename is durable only once the folder itself is on disk.
  const bool synced = ::fsync(dir_fd_) == 0;
  const int err = errno;
  discard();
  if (!synced) {
    return Error(TB_UNAVAILABLE, "%s was written but its folder %s could not be synced: %s",
                 target_.c_str(), dir_.c_str(), std::strerror(err));
  }
  return Status();
}

int remove_stale_temporaries(const std::string& folder) {
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return 0;
  DIR* d = ::fdopendir(dir_fd);
  if (!d) {
    ::close(dir_fd);
    return 0;
  }
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, kTempPrefix, sizeof(kTempPrefix) - 1) != 0) continue;
    const int fd = ::openat(dir_fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) continue;
    // A live writer holds the lock; the lock of a killed one died with it.
    struct stat a {}, b {};
    if (::fstat(fd, &a) == 0 && S_ISREG(a.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::fstatat(dir_fd, e->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 && same_file(a, b) &&
        ::unlinkat(dir_fd, e->d_name, 0) == 0) {
      ++removed;
    }
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

Status write_output(const std::string& path, const void* data, uint64_t bytes, const OutputRules& rules) {
  auto f = OutputFile::open(path, rules);
  if (!f.ok()) return f.status();
  TB_RETURN_IF_ERROR(f->write(data, bytes));
  return f->commit();
}

}  // namespace twinbit::artifact
