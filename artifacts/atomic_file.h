// AtomicFile: writes a file so that a reader sees either the old file or the complete new one,
// never a half-written one - a temporary file in the same folder, fsync, rename, fsync of the
// folder. A crash or an error at any step leaves the target untouched and removes the temporary.
//
// Not thread-safe; one writer per object. Errors are UNAVAILABLE naming the path and the step.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.hpp"

namespace twinbit::artifact {

class AtomicFile {
 public:
  // Creates the temporary file beside `path` (mode 0644).
  static Result<AtomicFile> create(const std::string& path);

  AtomicFile(AtomicFile&& o) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();  // not committed: the temporary is closed and removed

  Status write(const void* data, uint64_t bytes);
  // fsync, close, rename over the target, fsync the folder. After it, the object is spent.
  Status commit();

 private:
  AtomicFile(std::string path, std::string tmp, int fd)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  void abandon();
  std::string path_, tmp_;
  int fd_ = -1;
};

// The whole dance for one buffer.
Status write_file_atomic(const std::string& path, const void* data, uint64_t bytes);

}  // namespace twinbit::artifact
