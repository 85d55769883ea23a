// The bytes of an opened artifact - a read-only mapping of the file, or an anonymous copy of it -
// owned by a reference-counted object, so that whatever views the bytes can keep them alive.
//
// Artifact (artifact.h) holds one; Artifact::weights hands it out as the `keep_alive` of a view,
// which Backend::bind (core/backend.hpp) stores in the binding: the mapping is unmapped only
// when the Artifact object and every binding made from its views are gone.
#pragma once

#include <cstdint>
#include <memory>

namespace twinbit::artifact {

class FileImage {
 public:
  // Takes ownership of `bytes` bytes at `data`, a region from mmap (released with munmap), and
  // of `fd` (closed; -1 for none: a copy that needs no file behind it).
  static std::shared_ptr<const FileImage> adopt_mapping(const uint8_t* data, uint64_t bytes, int fd);
  // Bytes owned by the caller (parse()'s image): nothing is released; the caller keeps them
  // alive while any view of them is used.
  static std::shared_ptr<const FileImage> borrow(const uint8_t* data, uint64_t bytes);

  FileImage(const FileImage&) = delete;
  FileImage& operator=(const FileImage&) = delete;
  ~FileImage();

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return bytes_; }
  // The open file behind a mapping (for the size re-check), or -1.
  int fd() const { return fd_; }

 private:
  FileImage(const uint8_t* data, uint64_t bytes, int fd, bool owned)
      : data_(data), bytes_(bytes), fd_(fd), owned_(owned) {}
  const uint8_t* data_;
  uint64_t bytes_;
  int fd_;
  bool owned_;
};

}  // namespace twinbit::artifact
