#include "artifacts/float_rows_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "artifacts/atomic_file.h"
#include "artifacts/npy.h"

namespace twinbit::artifact {
namespace {

// A .npy header longer than this is not one NumPy writes for a float32 array; refusing it bounds
// what a hostile file can make us read beyond its payload.
constexpr uint64_t kMaxNpyHeaderBytes = 65536 + 12;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Result<std::vector<uint8_t>> read_whole(const std::string& path, uint64_t max_bytes,
                                        const std::string& too_big) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(TB_UNAVAILABLE, "cannot open %s: %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const int stat_errno = errno;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(TB_UNAVAILABLE, "cannot read %s: %s", path.c_str(),
                 stat_ok ? "not a regular file" : std::strerror(stat_errno));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return Error(TB_INVALID_ARGUMENT, "%s is %llu bytes: %s", path.c_str(), (unsigned long long)size,
                 too_big.c_str());
  }
  std::vector<uint8_t> bytes(size);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(fd, bytes.data() + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int e = errno;
      ::close(fd);
      return Error(TB_UNAVAILABLE, "cannot read %s at byte %llu: %s", path.c_str(),
                   (unsigned long long)done, got == 0 ? "the file shrank while being read" : std::strerror(e));
    }
    done += static_cast<uint64_t>(got);
  }
  ::close(fd);
  return bytes;
}

}  // namespace

Result<FileFormat> parse_file_format(const std::string& text) {
  if (text == "auto") return FileFormat::automatic;
  if (text == "npy") return FileFormat::npy;
  if (text == "f32") return FileFormat::f32;
  return Error(TB_INVALID_ARGUMENT, "file format '%s' is unknown (expected auto, npy or f32)", text.c_str());
}

FileFormat resolve_file_format(FileFormat format, const std::string& path) {
  if (format != FileFormat::automatic) return format;
  return ends_with(path, ".npy") ? FileFormat::npy : FileFormat::f32;
}

const char* file_format_name(FileFormat format) {
  switch (format) {
    case FileFormat::automatic: return "auto";
    case FileFormat::npy: return "npy";
    case FileFormat::f32: return "f32";
  }
  return "?";
}

Result<FloatRows> read_float_rows(const std::string& path, FileFormat format, int64_t cols,
                                  int64_t max_rows) {
  if (cols < 1 || max_rows < 1) {
    return Error(TB_INVALID_ARGUMENT, "read_float_rows: cols %lld and max_rows %lld must be >= 1",
                 (long long)cols, (long long)max_rows);
  }
  format = resolve_file_format(format, path);
  const uint64_t max_payload = static_cast<uint64_t>(max_rows) * static_cast<uint64_t>(cols) * 4;
  const std::string too_big = Format("more than %lld rows of %lld float32 values", (long long)max_rows,
                                     (long long)cols);
  auto bytes = read_whole(path, max_payload + (format == FileFormat::npy ? kMaxNpyHeaderBytes : 0), too_big);
  if (!bytes.ok()) return bytes.status();
  const std::vector<uint8_t>& b = bytes.value();
  FloatRows out;
  out.cols = cols;
  if (format == FileFormat::f32) {
    if (b.size() >= 6 && std::memcmp(b.data(), npy::kNpyMagic, 6) == 0) {
      return Error(TB_INVALID_ARGUMENT, "%s starts with the .npy magic but is read as raw float32: "
                   "name it .npy or pass the npy format", path.c_str());
    }
    const uint64_t row_bytes = static_cast<uint64_t>(cols) * 4;
    if (b.empty() || b.size() % row_bytes != 0) {
      return Error(b.empty() ? TB_INVALID_ARGUMENT : TB_DATA_LOSS,
                   "%s is %zu bytes of raw float32: not a whole number of rows of K = %lld (%llu bytes "
                   "each)", path.c_str(), b.size(), (long long)cols, (unsigned long long)row_bytes);
    }
    out.rows = static_cast<int64_t>(b.size() / row_bytes);
    out.values.resize(b.size() / 4);
    std::memcpy(out.values.data(), b.data(), b.size());
    return out;
  }
  auto a = npy::parse(b, path);
  if (!a.ok()) return a.status();
  const std::vector<int64_t>& shape = a->shape;
  if (shape.empty() || shape.size() > 2) {
    return Error(TB_INVALID_ARGUMENT, "%s has shape %s; expected (M, %lld) or (%lld,)", path.c_str(),
                 npy::shape_text(shape).c_str(), (long long)cols, (long long)cols);
  }
  if (shape.back() != cols) {
    return Error(TB_INVALID_ARGUMENT, "%s has shape %s: rows of %lld values, but the projection's K "
                 "is %lld", path.c_str(), npy::shape_text(shape).c_str(), (long long)shape.back(),
                 (long long)cols);
  }
  out.rows = shape.size() == 2 ? shape[0] : 1;
  if (out.rows < 1) {
    return Error(TB_INVALID_ARGUMENT, "%s has shape %s: no rows", path.c_str(), npy::shape_text(shape).c_str());
  }
  if (out.rows > max_rows) {
    return Error(TB_INVALID_ARGUMENT, "%s has shape %s: %s", path.c_str(),
                 npy::shape_text(shape).c_str(), too_big.c_str());
  }
  out.values.resize(static_cast<size_t>(out.rows * cols));
  std::memcpy(out.values.data(), a->payload.data(), a->payload.size());
  return out;
}

Status write_float_rows(OutputFile& out, FileFormat format, int64_t rows, int64_t cols,
                        const float* values) {
  if (rows < 1 || cols < 1 || !values) {
    return Error(TB_INVALID_ARGUMENT, "write_float_rows: %lld x %lld values at %p", (long long)rows,
                 (long long)cols, static_cast<const void*>(values));
  }
  const uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * 4;
  if (resolve_file_format(format, out.path()) == FileFormat::npy) {
    const std::string head = npy::header({rows, cols});
    TB_RETURN_IF_ERROR(out.write(head.data(), head.size()));
  }
  TB_RETURN_IF_ERROR(out.write(values, bytes));
  return out.commit();
}

Status write_float_rows(const std::string& path, FileFormat format, int64_t rows, int64_t cols,
                        const float* values) {
  auto out = OutputFile::open(path);
  if (!out.ok()) return out.status();
  return write_float_rows(out.value(), format, rows, cols, values);
}

}  // namespace twinbit::artifact
