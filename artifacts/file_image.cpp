#include "artifacts/file_image.h"

#include <sys/mman.h>
#include <unistd.h>

namespace twinbit::artifact {

std::shared_ptr<const FileImage> FileImage::adopt_mapping(const uint8_t* data, uint64_t bytes,
                                                          int fd) {
  return std::shared_ptr<const FileImage>(new FileImage(data, bytes, fd, true));
}

std::shared_ptr<const FileImage> FileImage::borrow(const uint8_t* data, uint64_t bytes) {
  return std::shared_ptr<const FileImage>(new FileImage(data, bytes, -1, false));
}

FileImage::~FileImage() {
  if (owned_ && bytes_ != 0) ::munmap(const_cast<uint8_t*>(data_), bytes_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace twinbit::artifact
