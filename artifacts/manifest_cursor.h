// The manifest's byte-level reading: little-endian loads and a bounds-checked cursor. Every
// read names the field it is for and is compared with the bytes that remain before anything is
// copied, so a short or hostile manifest gives DATA_LOSS naming the field and the file offset,
// never a read past the buffer. Not thread-safe (a cursor is one parse's local state).
#pragma once

#include <cstdint>
#include <string>

#include <twinbit/status.hpp>

namespace twinbit::artifact {

// Little-endian loads of the format's fields (format.h: every integer is little-endian).
inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline uint64_t load_u64(const uint8_t* p) { return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32; }

// A bounds-checked sequential reader over the manifest: `p` holds `size` bytes that start at
// `file_offset` in the file (for the messages). p must outlive the cursor.
class Cursor {
 public:
  Cursor(const uint8_t* p, uint64_t size, uint64_t file_offset)
      : p_(p), size_(size), file_offset_(file_offset) {}
  uint64_t remaining() const { return size_ - pos_; }
  uint64_t position() const { return pos_; }

  Status need(uint64_t bytes, const std::string& field) const {
    if (bytes > remaining()) {
      return Error(TB_DATA_LOSS, "manifest ends inside %s (needs %llu bytes at file offset %llu, "
                   "%llu left)", field.c_str(), static_cast<unsigned long long>(bytes),
                   static_cast<unsigned long long>(file_offset_ + pos_),
                   static_cast<unsigned long long>(remaining()));
    }
    return Status();
  }
  Status u32(uint32_t* out, const std::string& field) {
    TB_RETURN_IF_ERROR(need(4, field));
    *out = load_u32(p_ + pos_);
    pos_ += 4;
    return Status();
  }
  Status u64(uint64_t* out, const std::string& field) {
    TB_RETURN_IF_ERROR(need(8, field));
    *out = load_u64(p_ + pos_);
    pos_ += 8;
    return Status();
  }
  Status i64(int64_t* out, const std::string& field) {
    uint64_t v = 0;
    TB_RETURN_IF_ERROR(u64(&v, field));
    *out = static_cast<int64_t>(v);
    return Status();
  }
  // A length-prefixed string of at most max_bytes.
  Status str(std::string* out, uint32_t max_bytes, const std::string& field) {
    uint32_t len = 0;
    TB_RETURN_IF_ERROR(u32(&len, field + " length"));
    if (len > max_bytes) {
      return Error(TB_DATA_LOSS, "%s length is %u bytes (expected at most %u)", field.c_str(),
                   len, max_bytes);
    }
    TB_RETURN_IF_ERROR(need(len, field));
    out->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return Status();
  }

 private:
  const uint8_t* p_;
  uint64_t size_;
  uint64_t file_offset_;
  uint64_t pos_ = 0;
};

}  // namespace twinbit::artifact
