// Helpers of the GGUF import tests: the committed fixtures (tests/fixtures/import/, written by
// make_gguf_fixtures.py with the gguf Python package) and a byte-level GGUF builder for hostile
// files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace twinbit::testing {

inline std::filesystem::path import_fixture(const std::string& name) {
  return std::filesystem::path(__FILE__).parent_path() / "fixtures" / "import" / name;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Appends GGUF fields little-endian, as the format lays them out (artifacts/import/gguf_file.h).
struct GgufBytes {
  std::vector<uint8_t> b;
  GgufBytes& u8(uint8_t v) { b.push_back(v); return *this; }
  GgufBytes& u32(uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> 8 * i)); return *this; }
  GgufBytes& u64(uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> 8 * i)); return *this; }
  GgufBytes& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  GgufBytes& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(tensors).u64(kvs);
  }
  GgufBytes& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  // A tensor info: ne innermost first, as GGUF stores them.
  GgufBytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                    uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
  // Zero bytes up to a multiple of `align`, then `data` more zero bytes.
  GgufBytes& pad_and_data(uint64_t align, uint64_t data) {
    while (b.size() % align != 0) b.push_back(0);
    b.resize(b.size() + data, 0);
    return *this;
  }
};

}  // namespace twinbit::testing
