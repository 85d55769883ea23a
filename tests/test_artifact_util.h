// Helpers of the artifact tests: a small artifact with every entry kind, temporary folders, and
// a walker that finds where each manifest field lies (so tests can forge hostile files).
#pragma once

#include <dirent.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "artifacts/quantize.h"

namespace testart {

using namespace twinbit;

inline quant::PackedStrips packed(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& v : w) v = static_cast<float>(static_cast<int32_t>(g() >> 40) - (1 << 23)) * 0x1p-26f;
  return quant::pack_strips(w.data(), n, k, prec);
}

struct Small {
  artifact::Writer writer;
  artifact::Provenance provenance{"model-f32.gguf", "twinbit test"};
  quant::PackedStrips q8, q4;
  std::vector<float> matrix;
};

// Three entries: a fused q8 strip set 40 x 70 (ranges q, k, v; three source tensors), a q4 strip
// set 33 x 32, and a 3 x 5 f32 matrix.
inline Small make_small() {
  Small s;
  s.q8 = packed(TB_PREC_Q8, 40, 70, 1);
  s.q4 = packed(TB_PREC_Q4, 33, 32, 2);
  for (int i = 0; i < 15; ++i) s.matrix.push_back(0.25f * static_cast<float>(i) - 1.0f);
  Status st = s.writer.add_strips("blk.0.attn_qkv", TB_PREC_Q8, 40, 70, s.q8.codes, s.q8.scales,
                                  {{"q", 0, 20}, {"k", 20, 30}, {"v", 30, 40}},
                                  {"blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                   "blk.0.attn_v.weight"});
  if (st.ok()) st = s.writer.add_strips("blk.0.ffn_down", TB_PREC_Q4, 33, 32, s.q4.codes, s.q4.scales);
  if (st.ok()) st = s.writer.add_matrix("ssm_a", 3, 5, s.matrix, {"blk.0.ssm_a"});
  if (!st.ok()) throw std::runtime_error(st.to_string());
  return s;
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "twinbit-test-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(path)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline uint64_t get_u64(const std::vector<uint8_t>& b, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[off + i];
  return v;
}
inline uint32_t get_u32(const std::vector<uint8_t>& b, size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | b[off + i];
  return v;
}
inline void put_u64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

// Recomputes the header checksum, as a forger who knows the format would.
inline void reseal(std::vector<uint8_t>& b) {
  const uint64_t mbytes = get_u64(b, artifact::kOffManifestBytes);
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, b.data(), artifact::kOffChecksum);
  XXH64_update(st, b.data() + artifact::kHeaderBytes, mbytes);
  put_u64(b, artifact::kOffChecksum, XXH64_digest(st));
  XXH64_freeState(st);
}

// File offsets of the fields of each manifest entry of a valid image.
struct EntryFields {
  size_t name_len, name, kind, prec, n, k, np, kp, range_count;
  std::vector<size_t> range_begin;  // offset of each range's i64 begin (end follows)
  std::vector<size_t> payload;      // offset of each payload's u64 offset (bytes, xxh64 follow)
};
inline std::vector<EntryFields> walk(const std::vector<uint8_t>& b) {
  size_t at = artifact::kHeaderBytes;
  auto skip_str = [&] { at += 4 + get_u32(b, at); };
  skip_str();
  skip_str();
  std::vector<EntryFields> out;
  const uint32_t count = get_u32(b, artifact::kOffEntryCount);
  for (uint32_t i = 0; i < count; ++i) {
    EntryFields f{};
    f.name_len = at;
    f.name = at + 4;
    skip_str();
    f.kind = at;
    f.prec = at + 4;
    f.n = at + 8;
    f.k = at + 16;
    f.np = at + 24;
    f.kp = at + 32;
    f.range_count = at + 40;
    at += 44;
    for (uint32_t r = 0, nr = get_u32(b, f.range_count); r < nr; ++r) {
      skip_str();
      f.range_begin.push_back(at);
      at += 16;
    }
    const uint32_t ns = get_u32(b, at);
    at += 4;
    for (uint32_t s = 0; s < ns; ++s) skip_str();
    const uint32_t np = get_u32(b, at);
    at += 4;
    for (uint32_t p = 0; p < np; ++p) {
      f.payload.push_back(at);
      at += 24;
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace testart
