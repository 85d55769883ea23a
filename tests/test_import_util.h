// Helpers of the import tests: the committed fixtures, the values they hold, and hand-made
// safetensors bytes for hostile headers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace testimport {

inline std::string fixture(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / "fixtures" / "import" / name).string();
}

// The value make_safetensors_fixtures.py stores at element i of tensor `name`.
inline float expected_value(const std::string& name, int64_t i) {
  int64_t s = 0;
  for (unsigned char c : name) s += c;
  s %= 251;
  return static_cast<float>((i * 37 + s) % 253 - 126) / 64.0f;
}

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
// Exact conversions of the fixtures' values (multiples of 1/64 below 2 in magnitude): no rounding
// is involved, which the callers check (the dropped mantissa bits are zero).
inline uint16_t bf16_bits(float f) { return static_cast<uint16_t>(f32_bits(f) >> 16); }
inline uint16_t f16_bits(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffff) == 0) return static_cast<uint16_t>(u >> 16);
  const uint32_t sign = (u >> 16) & 0x8000;
  const int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((u >> 13) & 0x3ff));
}

// A safetensors file: the 8-byte size, `header`, then `data_bytes` bytes (of value 0x5a).
inline std::vector<uint8_t> st_bytes(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0x5a);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  return out;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace testimport
