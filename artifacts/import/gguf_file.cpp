// The GGUF reader: every count, length, type, dim and offset is bounded by the bytes that could
// hold it before it is used (gguf_file.h lists the checks). The header is parsed from a copy of
// the file's first bytes; when it is longer than the copy, the copy grows (up to the header
// limit) and the parse starts again, so a file that is mostly tensor data is never read whole.
#include "artifacts/import/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <unordered_set>

#include "artifacts/file_image.h"
#include "artifacts/import/gguf_cursor.h"
#include "artifacts/import/gguf_types.h"
#include "artifacts/read_guard.h"
#include "artifacts/text_rule.h"

namespace twinbit::import {

namespace {

using ull = unsigned long long;

constexpr uint64_t kFirstPrefixBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxKeyBytes = uint64_t{1} << 16;
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 62;
// The smallest encodings of a KV (key of 1 byte, u8 value) and a tensor info (name of 1 byte,
// one dim): a count that cannot fit in the bytes left is refused before anything is sized by it.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

class GgufFile final : public TensorFile {
 public:
  GgufFile(std::string what, std::shared_ptr<const artifact::FileImage> image, ParsedGguf parsed,
           bool mapped)
      : files_{std::move(what)}, image_(std::move(image)), parsed_(std::move(parsed)),
        mapped_(mapped) {}
  const std::vector<std::string>& files() const override { return files_; }
  const std::vector<SourceTensor>& tensors() const override { return parsed_.tensors; }
  std::span<const uint8_t> bytes(const SourceTensor& t) const override {
    if (t.file != 0 || t.offset > image_->size() || t.bytes > image_->size() - t.offset) return {};
    return {image_->data() + t.offset, static_cast<size_t>(t.bytes)};
  }
  std::vector<std::pair<std::string, std::string>> metadata() const override {
    return parsed_.metadata;
  }
  // Drops the mapping's pages that lie wholly inside t's bytes (a neighbour's bytes on a shared
  // page stay). The mapping is read-only and private, so a later read faults them back in from
  // the file, unchanged.
  void release(const SourceTensor& t) const override {
    const auto span = bytes(t);
    if (!mapped_ || span.empty()) return;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(span.data());
    const uintptr_t first = (begin + page - 1) / page * page;
    const uintptr_t last = (begin + span.size()) / page * page;
    if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }

 private:
  std::vector<std::string> files_;
  std::shared_ptr<const artifact::FileImage> image_;
  ParsedGguf parsed_;
  bool mapped_;  // a file mapping (open_gguf), not borrowed bytes (parse_gguf)
};

// Keys and tensor names end up in messages, summaries and the artifact's source names: they must
// be printable as they are (the artifact format's text rule, text_rule.h).
Status check_name_text(const GgufCursor& c, const char* field, const std::string& text) {
  if (const artifact::TextProblem p = artifact::check_text(text, UINT32_MAX)) {
    return c.invalid(Format("%s is not valid text: %s at byte %llu (expected UTF-8 without "
                            "control characters)", field, p.what, (ull)p.offset).c_str());
  }
  return Status();
}

// String values may hold anything (a chat template's newlines, a hostile file's terminal escape
// sequences); when one breaks the text rule, its bytes outside printable ASCII are shown as \xNN.
std::string printable(std::string s) {
  if (!artifact::check_text(s, UINT32_MAX)) return s;
  std::string out;
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out += ch;
    } else {
      out += Format("\\x%02x", b);
    }
  }
  return out;
}

Status read_header_fields(GgufCursor& c, uint64_t* tensor_count, uint64_t* kv_count) {
  const uint64_t size = c.file_bytes();
  if (size < 4) {
    return Error(TB_DATA_LOSS, "%s: file is %llu bytes, too short for the GGUF magic",
                 c.what().c_str(), (ull)size);
  }
  const uint8_t* m = c.peek();
  if (std::memcmp(m, "GGUF", 4) != 0) {
    return Error(TB_INVALID_ARGUMENT, "%s: not a GGUF file: magic is %02x %02x %02x %02x "
                 "(expected 'GGUF', 47 47 55 46)", c.what().c_str(), m[0], m[1], m[2], m[3]);
  }
  c.skip(4);
  uint32_t version = 0;
  TB_RETURN_IF_ERROR(c.u32(&version, "version"));
  if (version == 0x02000000 || version == 0x03000000) {
    return Error(TB_INVALID_ARGUMENT, "%s: a big-endian GGUF file (version %u byte-swapped); only "
                 "little-endian GGUF is supported", c.what().c_str(), version >> 24);
  }
  if (version != 2 && version != 3) {
    return Error(TB_INVALID_ARGUMENT, "%s: GGUF version %u is not supported (expected 2 or 3)",
                 c.what().c_str(), version);
  }
  TB_RETURN_IF_ERROR(c.u64(tensor_count, "tensor_count"));
  TB_RETURN_IF_ERROR(c.u64(kv_count, "kv_count"));
  const uint64_t left = std::min(c.file_left(), kGgufMaxHeaderBytes);
  if (*tensor_count > left / kMinTensorInfoBytes) {
    return Error(TB_DATA_LOSS, "%s: tensor_count %llu cannot fit in the header (%llu bytes "
                 "available, a tensor info takes at least %llu)", c.what().c_str(),
                 (ull)*tensor_count, (ull)left, (ull)kMinTensorInfoBytes);
  }
  if (*kv_count > (left - *tensor_count * kMinTensorInfoBytes) / kMinKvBytes) {
    return Error(TB_DATA_LOSS, "%s: kv_count %llu cannot fit in the header (%llu bytes available, "
                 "a KV takes at least %llu)", c.what().c_str(), (ull)*kv_count, (ull)left,
                 (ull)kMinKvBytes);
  }
  return Status();
}

Status read_kvs(GgufCursor& c, uint64_t kv_count, ParsedGguf* out, uint64_t* alignment) {
  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < kv_count; ++i) {
    c.set_context(Format("KV %llu", (ull)i));
    std::string key;
    TB_RETURN_IF_ERROR(c.str(&key, kMaxKeyBytes, "key"));
    if (key.empty()) return c.invalid("key is empty");
    TB_RETURN_IF_ERROR(check_name_text(c, "key", key));
    c.set_context(Format("KV %llu '%s'", (ull)i, key.c_str()));
    if (!keys.insert(key).second) return c.invalid("key appears twice");
    uint32_t type = 0;
    TB_RETURN_IF_ERROR(c.u32(&type, "value type"));
    std::string text;
    TB_RETURN_IF_ERROR(c.value(type, 0, &text));
    if (type == kGgufString) text = printable(std::move(text));
    if (key == "general.alignment") {
      if (type != kGgufU32) {
        return c.invalid(Format("has value type %u (expected 4, u32)", type).c_str());
      }
      const uint64_t a = std::strtoull(text.c_str(), nullptr, 10);
      if (a == 0 || (a & (a - 1)) != 0) {
        return c.invalid(Format("is %llu (expected a nonzero power of two)", (ull)a).c_str());
      }
      *alignment = a;
    }
    out->metadata.emplace_back(std::move(key), std::move(text));
  }
  return Status();
}

// One tensor info; `offset` is left relative to the data section.
Status read_tensor_info(GgufCursor& c, uint64_t index, uint64_t alignment,
                        std::unordered_set<std::string>& names, SourceTensor* t) {
  c.set_context(Format("tensor %llu", (ull)index));
  TB_RETURN_IF_ERROR(c.str(&t->name, kGgufMaxNameBytes, "name"));
  if (t->name.empty()) return c.invalid("name is empty");
  TB_RETURN_IF_ERROR(check_name_text(c, "name", t->name));
  c.set_context(Format("tensor %llu '%s'", (ull)index, t->name.c_str()));
  if (!names.insert(t->name).second) return c.invalid("name appears twice");
  uint32_t n_dims = 0;
  TB_RETURN_IF_ERROR(c.u32(&n_dims, "n_dims"));
  if (n_dims < 1 || n_dims > kGgufMaxDims) {
    return c.invalid(Format("n_dims is %u (expected 1 .. %u)", n_dims, kGgufMaxDims).c_str());
  }
  uint64_t ne[kGgufMaxDims] = {};
  uint64_t elems = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    TB_RETURN_IF_ERROR(c.u64(&ne[d], "ne"));
    if (ne[d] < 1 || ne[d] > uint64_t{INT64_MAX}) {
      return c.invalid(Format("ne[%u] is %llu (expected 1 .. 2^63-1)", d, (ull)ne[d]).c_str());
    }
    if (__builtin_mul_overflow(elems, ne[d], &elems) || elems > kMaxTensorBytes) {
      return c.invalid(Format("element count overflows at ne[%u] = %llu (more than 2^62 elements)",
                              d, (ull)ne[d]).c_str());
    }
  }
  uint32_t type = 0;
  TB_RETURN_IF_ERROR(c.u32(&type, "type"));
  const GgmlType* g = find_ggml_type(type);
  if (g == nullptr) {
    return c.invalid(Format("type %u is not a GGML type this reader knows", type).c_str());
  }
  t->type = g->source;
  t->type_name = g->name;
  if (ne[0] % static_cast<uint64_t>(g->block_elems) != 0) {
    return c.invalid(Format("ne[0] = %llu is not a whole number of %s blocks (%lld elements)",
                            (ull)ne[0], g->name, (long long)g->block_elems).c_str());
  }
  const uint64_t blocks = elems / static_cast<uint64_t>(g->block_elems);
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(g->block_bytes), &t->bytes) ||
      t->bytes > kMaxTensorBytes) {
    return c.invalid(Format("%llu %s blocks are more than 2^62 bytes", (ull)blocks,
                            g->name).c_str());
  }
  for (uint32_t d = 0; d < n_dims; ++d) t->dims.push_back(static_cast<int64_t>(ne[n_dims - 1 - d]));
  TB_RETURN_IF_ERROR(c.u64(&t->offset, "offset"));
  if (t->offset % alignment != 0) {
    return c.invalid(Format("offset %llu is not a multiple of the alignment %llu",
                            (ull)t->offset, (ull)alignment).c_str());
  }
  return Status();
}

// Places every tensor in the file: within it, and no two overlapping.
Status place_tensors(const std::string& what, uint64_t data_offset, uint64_t file_bytes,
                     std::vector<SourceTensor>& tensors) {
  if (tensors.empty()) return Status();
  if (data_offset > file_bytes) {
    return Error(TB_DATA_LOSS, "%s: the data section starts at %llu, past the end of the file "
                 "(%llu bytes)", what.c_str(), (ull)data_offset, (ull)file_bytes);
  }
  const uint64_t data_bytes = file_bytes - data_offset;
  for (size_t i = 0; i < tensors.size(); ++i) {
    SourceTensor& t = tensors[i];
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
      return Error(TB_DATA_LOSS, "%s: tensor %zu '%s': offset %llu + %llu bytes runs past the end "
                   "of the data section (%llu bytes from file offset %llu; file %llu bytes)",
                   what.c_str(), i, t.name.c_str(), (ull)t.offset, (ull)t.bytes,
                   (ull)data_bytes, (ull)data_offset, (ull)file_bytes);
    }
    t.offset += data_offset;
  }
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].offset < tensors[b].offset;
  });
  for (size_t j = 1; j < order.size(); ++j) {
    const SourceTensor& a = tensors[order[j - 1]];
    const SourceTensor& b = tensors[order[j]];
    if (a.offset + a.bytes > b.offset) {
      return Error(TB_DATA_LOSS, "%s: tensor %zu '%s' (file bytes %llu .. %llu) overlaps tensor "
                   "%zu '%s' (from %llu)", what.c_str(), order[j - 1], a.name.c_str(),
                   (ull)a.offset, (ull)(a.offset + a.bytes), order[j], b.name.c_str(),
                   (ull)b.offset);
    }
  }
  return Status();
}

}  // namespace

Status parse_gguf_header(GgufCursor& c, ParsedGguf* out) {
  uint64_t tensor_count = 0, kv_count = 0;
  TB_RETURN_IF_ERROR(read_header_fields(c, &tensor_count, &kv_count));
  uint64_t alignment = kGgufDefaultAlignment;
  TB_RETURN_IF_ERROR(read_kvs(c, kv_count, out, &alignment));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    SourceTensor t;
    TB_RETURN_IF_ERROR(read_tensor_info(c, i, alignment, names, &t));
    out->tensors.push_back(std::move(t));
  }
  const uint64_t header_end = c.position();
  const uint64_t data_offset = (header_end + alignment - 1) / alignment * alignment;
  if (data_offset < header_end) {
    return Error(TB_DATA_LOSS, "%s: the data section offset overflows (header ends at %llu, "
                 "alignment %llu)", c.what().c_str(), (ull)header_end, (ull)alignment);
  }
  return place_tensors(c.what(), data_offset, c.file_bytes(), out->tensors);
}

namespace {

// Parses the header from growing prefixes of `image` (reads guarded when it is a mapping).
Result<ParsedGguf> parse_image(const artifact::FileImage& image, bool guarded,
                               const std::string& what) {
  const uint64_t size = image.size();
  const uint64_t limit = std::min(size, kGgufMaxHeaderBytes);
  uint64_t have = std::min(size, kFirstPrefixBytes);
  std::vector<uint8_t> copy;
  for (;;) {
    const uint8_t* prefix = image.data();
    if (guarded) {
      copy.resize(have);
      if (!artifact::guarded_copy(copy.data(), image.data(), have)) {
        return Error(TB_DATA_LOSS, "%s: the file shrank under its mapping while its header was "
                     "read (another process truncated or is rewriting it)", what.c_str());
      }
      prefix = copy.data();
    }
    GgufCursor c(prefix, have, size, what);
    ParsedGguf parsed;
    Status s = parse_gguf_header(c, &parsed);
    if (s.ok()) return parsed;
    if (!c.wants_more()) return s;
    if (have == limit) {
      return Error(TB_DATA_LOSS, "%s: the GGUF header (KVs and tensor infos) is longer than %llu "
                   "bytes, the most this reader accepts", what.c_str(), (ull)kGgufMaxHeaderBytes);
    }
    have = std::min(limit, have * 4);
  }
}

}  // namespace

Result<std::unique_ptr<TensorFile>> parse_gguf(std::span<const uint8_t> bytes,
                                               const std::string& what) {
  auto image = artifact::FileImage::borrow(bytes.data(), bytes.size());
  auto parsed = parse_image(*image, /*guarded=*/false, what);
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<TensorFile>(
      std::make_unique<GgufFile>(what, std::move(image), std::move(parsed).value(), false));
}

Result<std::unique_ptr<TensorFile>> open_gguf(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(errno == ENOENT ? TB_INVALID_ARGUMENT : TB_UNAVAILABLE, "cannot open %s: %s",
                 path.c_str(), std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(TB_INVALID_ARGUMENT, "%s is not a readable regular file", path.c_str());
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 4) {
    ::close(fd);
    return Error(TB_DATA_LOSS, "%s: file is %llu bytes, too short for the GGUF magic",
                 path.c_str(), (ull)size);
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    return Error(TB_RESOURCE_EXHAUSTED, "cannot map %s (%llu bytes): %s", path.c_str(),
                 (ull)size, std::strerror(err));
  }
  auto image = artifact::FileImage::adopt_mapping(static_cast<const uint8_t*>(map), size, fd);
  auto parsed = parse_image(*image, /*guarded=*/true, path);
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<TensorFile>(
      std::make_unique<GgufFile>(path, std::move(image), std::move(parsed).value(), true));
}

}  // namespace twinbit::import
