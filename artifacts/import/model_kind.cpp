// model_kind (model_kind.h): a look at the first bytes, or at the folder's index file.
#include "artifacts/import/model_kind.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace twinbit::import {

const char* model_kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::gguf: return "GGUF";
    case ModelKind::safetensors_file: return "safetensors";
    case ModelKind::safetensors_folder: return "safetensors folder";
  }
  return "?";
}

Result<ModelKind> model_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error(TB_INVALID_ARGUMENT, "model %s: %s", path.c_str(), std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    const std::string index = path + "/model.safetensors.index.json";
    if (::access(index.c_str(), R_OK) != 0) {
      return Error(TB_INVALID_ARGUMENT, "model folder %s has no readable "
                   "model.safetensors.index.json (a folder is read as safetensors shards with "
                   "their index)", path.c_str());
    }
    return ModelKind::safetensors_folder;
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(TB_INVALID_ARGUMENT, "model %s is not a regular file or a folder", path.c_str());
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(TB_INVALID_ARGUMENT, "model %s: %s", path.c_str(), std::strerror(errno));
  uint8_t head[9] = {};
  ssize_t got = 0;
  while (got < 9) {
    const ssize_t r = ::read(fd, head + got, sizeof(head) - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += r;
  }
  ::close(fd);
  if (got >= 4 && std::memcmp(head, "GGUF", 4) == 0) return ModelKind::gguf;
  if (got == 9 && head[8] == '{') {
    uint64_t header_len = 0;
    for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(head[i]) << (8 * i);
    if (header_len >= 2 && header_len <= static_cast<uint64_t>(st.st_size) - 8) {
      return ModelKind::safetensors_file;
    }
  }
  char shown[40] = {};
  for (ssize_t i = 0; i < got && i < 8; ++i) {
    std::snprintf(shown + 3 * i, 4, "%02x ", head[i]);
  }
  return Error(TB_INVALID_ARGUMENT, "model %s is neither a GGUF file (magic \"GGUF\") nor a "
               "safetensors file (header length, then '{'): its first bytes are %s(%lld bytes "
               "in all)", path.c_str(), got ? shown : "none ", static_cast<long long>(st.st_size));
}

}  // namespace twinbit::import
