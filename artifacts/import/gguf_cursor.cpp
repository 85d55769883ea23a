// GGUF header fields, read with every length bounded by the bytes left (gguf_cursor.h).
#include "artifacts/import/gguf_cursor.h"

#include <cinttypes>
#include <cstring>

#include "artifacts/import/gguf_file.h"

namespace twinbit::import {

namespace {

using ull = unsigned long long;

constexpr const char* kTypeNames[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
constexpr uint32_t kTypeCount = sizeof(kTypeNames) / sizeof(kTypeNames[0]);

// Bytes of a fixed-size value type; 0 for string and array.
uint64_t fixed_bytes(uint32_t type) {
  switch (type) {
    case kGgufU8: case kGgufI8: case kGgufBool: return 1;
    case kGgufU16: case kGgufI16: return 2;
    case kGgufU32: case kGgufI32: case kGgufF32: return 4;
    case kGgufU64: case kGgufI64: case kGgufF64: return 8;
    default: return 0;
  }
}

// The smallest encoding of a value of `type`: a string is at least its length, an array its
// element type and count.
uint64_t min_bytes(uint32_t type) {
  if (type == kGgufString) return 8;
  if (type == kGgufArray) return 12;
  return fixed_bytes(type);
}

uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

std::string scalar_text(uint32_t type, uint64_t bits) {
  switch (type) {
    case kGgufU8: case kGgufU16: case kGgufU32: case kGgufU64: return Format("%llu", (ull)bits);
    case kGgufI8: return Format("%d", static_cast<int8_t>(bits));
    case kGgufI16: return Format("%d", static_cast<int16_t>(bits));
    case kGgufI32: return Format("%d", static_cast<int32_t>(bits));
    case kGgufI64: return Format("%lld", static_cast<long long>(bits));
    case kGgufBool: return bits ? "true" : "false";
    case kGgufF32: return Format("%.9g", __builtin_bit_cast(float, static_cast<uint32_t>(bits)));
    default: return Format("%.17g", __builtin_bit_cast(double, bits));
  }
}

}  // namespace

Status GgufCursor::need(uint64_t bytes, const char* field) {
  if (bytes > file_left()) {
    return Error(TB_DATA_LOSS, "%s: %s%sthe file ends inside %s (needs %llu bytes at offset %llu, "
                 "%llu left)", what_.c_str(), context_.c_str(), context_.empty() ? "" : ": ",
                 field, (ull)bytes, (ull)pos_, (ull)file_left());
  }
  if (bytes > have_ - pos_) {
    wants_more_ = true;
    return Error(TB_DATA_LOSS, "%s: the header runs past the %llu bytes read", what_.c_str(),
                 (ull)have_);
  }
  return Status();
}

Status GgufCursor::u32(uint32_t* out, const char* field) {
  TB_RETURN_IF_ERROR(need(4, field));
  *out = static_cast<uint32_t>(load_le(peek(), 4));
  pos_ += 4;
  return Status();
}

Status GgufCursor::u64(uint64_t* out, const char* field) {
  TB_RETURN_IF_ERROR(need(8, field));
  *out = load_le(peek(), 8);
  pos_ += 8;
  return Status();
}

Status GgufCursor::str(std::string* out, uint64_t max_bytes, const char* field) {
  uint64_t len = 0;
  TB_RETURN_IF_ERROR(u64(&len, field));
  if (len > max_bytes) {
    return invalid(Format("%s length is %llu bytes (expected at most %llu)", field, (ull)len,
                          (ull)max_bytes).c_str());
  }
  TB_RETURN_IF_ERROR(need(len, field));
  if (out != nullptr) out->assign(reinterpret_cast<const char*>(peek()), len);
  pos_ += len;
  return Status();
}

Status GgufCursor::invalid(const char* problem) const {
  return Error(TB_DATA_LOSS, "%s: %s%s%s", what_.c_str(), context_.c_str(),
               context_.empty() ? "" : " ", problem);
}

Status GgufCursor::value(uint32_t type, int depth, std::string* text) {
  if (type >= kTypeCount) {
    return invalid(Format("value type %u is not a GGUF type (expected 0 .. %u)", type,
                          kTypeCount - 1).c_str());
  }
  if (type == kGgufArray) return array(depth, text);
  if (type == kGgufString) return str(text, UINT64_MAX, "string value");
  const uint64_t bytes = fixed_bytes(type);
  TB_RETURN_IF_ERROR(need(bytes, "value"));
  const uint64_t bits = load_le(peek(), static_cast<int>(bytes));
  if (type == kGgufBool && bits > 1) {
    return invalid(Format("bool value is %llu (expected 0 or 1)", (ull)bits).c_str());
  }
  if (text != nullptr) *text = scalar_text(type, bits);
  pos_ += bytes;
  return Status();
}

Status GgufCursor::array(int depth, std::string* text) {
  if (depth >= kGgufMaxArrayDepth) {
    return invalid(Format("arrays nest more than %d deep", kGgufMaxArrayDepth).c_str());
  }
  uint32_t type = 0;
  uint64_t count = 0;
  TB_RETURN_IF_ERROR(u32(&type, "array element type"));
  if (type >= kTypeCount) {
    return invalid(Format("array element type %u is not a GGUF type (expected 0 .. %u)", type,
                          kTypeCount - 1).c_str());
  }
  TB_RETURN_IF_ERROR(u64(&count, "array count"));
  if (count > file_left() / min_bytes(type)) {
    return invalid(Format("array of %llu %s cannot fit in the %llu bytes left", (ull)count,
                          kTypeNames[type], (ull)file_left()).c_str());
  }
  if (fixed_bytes(type) != 0 && type != kGgufBool) {
    TB_RETURN_IF_ERROR(need(count * fixed_bytes(type), "array elements"));
    pos_ += count * fixed_bytes(type);
  } else {
    for (uint64_t i = 0; i < count; ++i) TB_RETURN_IF_ERROR(value(type, depth + 1, nullptr));
  }
  if (text != nullptr) *text = Format("[%llu x %s]", (ull)count, kTypeNames[type]);
  return Status();
}

}  // namespace twinbit::import
