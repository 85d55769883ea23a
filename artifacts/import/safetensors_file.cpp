// Opening safetensors files (safetensors_file.h): mapping them read-only, reading each header
// through the SIGBUS guard, and joining a shard folder's files with its index.
#include "artifacts/import/safetensors_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "artifacts/read_guard.h"

namespace twinbit::import {
namespace {

using ull = unsigned long long;

// A read-only mapping of one whole file, unmapped and closed on destruction.
class Mapping {
 public:
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (data_ && size_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  static Result<std::unique_ptr<Mapping>> open(const std::string& path) {
    auto m = std::make_unique<Mapping>();
    m->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m->fd_ < 0) {
      return Error(errno == ENOENT ? TB_INVALID_ARGUMENT : TB_UNAVAILABLE, "cannot open %s: %s",
                   path.c_str(), std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(m->fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      return Error(TB_INVALID_ARGUMENT, "%s is not a readable regular file", path.c_str());
    }
    m->size_ = static_cast<uint64_t>(st.st_size);
    if (m->size_ == 0) return m;  // mmap refuses 0 bytes; the parser reports the short file
    void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, m->fd_, 0);
    if (p == MAP_FAILED) {
      m->size_ = 0;
      return Error(TB_UNAVAILABLE, "cannot map %s: %s", path.c_str(), std::strerror(errno));
    }
    m->data_ = static_cast<const uint8_t*>(p);
    return m;
  }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
};

class SafetensorsFile final : public TensorFile {
 public:
  const std::vector<std::string>& files() const override { return files_; }
  const std::vector<SourceTensor>& tensors() const override { return tensors_; }
  std::span<const uint8_t> bytes(const SourceTensor& t) const override {
    if (t.file >= maps_.size()) return {};
    const Mapping& m = *maps_[t.file];
    if (t.offset > m.size() || t.bytes > m.size() - t.offset) return {};
    return {m.data() + t.offset, static_cast<size_t>(t.bytes)};
  }
  std::vector<std::pair<std::string, std::string>> metadata() const override { return metadata_; }
  // Drops the shard mapping's pages that lie wholly inside t's bytes (a neighbour's bytes on a
  // shared page stay); the mapping is read-only and private, so a later read faults them back in
  // from the file, unchanged. A pass over shards larger than memory keeps a bounded resident set.
  void release(const SourceTensor& t) const override {
    const auto span = bytes(t);
    if (span.empty()) return;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(span.data());
    const uintptr_t first = (begin + page - 1) / page * page;
    const uintptr_t last = (begin + span.size()) / page * page;
    if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }

  // Maps `path` as shard number files_.size() and parses its header.
  Result<SafetensorsHeader> add(const std::string& path) {
    auto m = Mapping::open(path);
    if (!m.ok()) return m.status();
    const Mapping& map = **m;
    // The size prefix and the header are copied out under the SIGBUS guard: a file truncated
    // since it was mapped then reads as DATA_LOSS instead of killing the process.
    uint64_t want = std::min<uint64_t>(map.size(), 8);
    std::vector<uint8_t> prefix(want);
    if (want && !artifact::guarded_copy(prefix.data(), map.data(), want)) return truncated(path);
    if (want == 8) {
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
      if (n <= kSafetensorsMaxHeaderBytes && n <= map.size() - 8) {
        prefix.resize(8 + n);
        if (!artifact::guarded_copy(prefix.data() + 8, map.data() + 8, n)) return truncated(path);
      }
    }
    auto h = parse_safetensors(prefix, map.size(), path, files_.size());
    if (!h.ok()) return h.status();
    files_.push_back(path);
    maps_.push_back(std::move(*m));
    return h;
  }

  std::vector<std::string> files_;
  std::vector<std::unique_ptr<Mapping>> maps_;
  std::vector<SourceTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;

 private:
  static Status truncated(const std::string& path) {
    return Error(TB_DATA_LOSS, "%s: the file shrank while its header was read", path.c_str());
  }
};

void add_metadata(std::vector<std::pair<std::string, std::string>>& to,
                  const std::vector<std::pair<std::string, std::string>>& from) {
  for (const auto& kv : from) {
    if (std::find(to.begin(), to.end(), kv) == to.end()) to.push_back(kv);
  }
}

Result<std::unique_ptr<TensorFile>> open_single(const std::string& path) {
  auto f = std::make_unique<SafetensorsFile>();
  auto h = f->add(path);
  if (!h.ok()) return h.status();
  f->tensors_ = std::move(h->tensors);
  f->metadata_ = std::move(h->metadata);
  return std::unique_ptr<TensorFile>(std::move(f));
}

Result<std::unique_ptr<TensorFile>> open_index(const std::string& index_path) {
  std::string text;
  {
    auto m = Mapping::open(index_path);
    if (!m.ok()) return m.status();
    if ((*m)->size() > kSafetensorsMaxIndexBytes) {
      return Error(TB_INVALID_ARGUMENT, "%s is %llu bytes, more than an index may be (%llu)",
                   index_path.c_str(), (ull)(*m)->size(), (ull)kSafetensorsMaxIndexBytes);
    }
    text.resize((*m)->size());
    if (!text.empty() && !artifact::guarded_copy(text.data(), (*m)->data(), text.size())) {
      return Error(TB_DATA_LOSS, "%s: the file shrank while it was read", index_path.c_str());
    }
  }
  auto index = parse_safetensors_index(text, index_path);
  if (!index.ok()) return index.status();
  if (index->weight_map.empty()) {
    return Error(TB_INVALID_ARGUMENT, "%s: weight_map names no tensor", index_path.c_str());
  }
  const size_t slash = index_path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : index_path.substr(0, slash + 1);
  auto f = std::make_unique<SafetensorsFile>();
  f->metadata_ = index->metadata;
  std::map<std::string, size_t> shard_of;  // tensor -> shard, from every shard's header
  for (size_t s = 0; s < index->shards.size(); ++s) {
    const std::string path = folder + index->shards[s];
    auto h = f->add(path);
    if (!h.ok()) {
      if (h.status().message().rfind("cannot open", 0) == 0) {
        return Error(h.status().code(), "%s names shard %s: %s", index_path.c_str(),
                     index->shards[s].c_str(), h.status().message().c_str());
      }
      return h.status();
    }
    for (SourceTensor& t : h->tensors) {
      auto [it, added] = shard_of.emplace(t.name, s);
      if (!added) {
        return Error(TB_INVALID_ARGUMENT, "tensor '%s' is in two shards: %s and %s", t.name.c_str(),
                     index->shards[it->second].c_str(), index->shards[s].c_str());
      }
      f->tensors_.push_back(std::move(t));
    }
    add_metadata(f->metadata_, h->metadata);
  }
  // The index and the shards must agree, both ways.
  std::map<std::string, size_t> named(index->weight_map.begin(), index->weight_map.end());
  for (const auto& [tensor, s] : index->weight_map) {
    auto it = shard_of.find(tensor);
    if (it == shard_of.end() || it->second != s) {
      return Error(TB_INVALID_ARGUMENT, "%s: weight_map puts tensor '%s' in %s, which does not hold it",
                   index_path.c_str(), tensor.c_str(), index->shards[s].c_str());
    }
  }
  for (const auto& [tensor, s] : shard_of) {
    if (!named.count(tensor)) {
      return Error(TB_INVALID_ARGUMENT, "%s holds tensor '%s', which %s's weight_map does not name",
                   index->shards[s].c_str(), tensor.c_str(), index_path.c_str());
    }
  }
  return std::unique_ptr<TensorFile>(std::move(f));
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}
bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

Result<std::unique_ptr<TensorFile>> open_safetensors(const std::string& path) {
  if (is_dir(path)) {
    const std::string base = ends_with(path, "/") ? path : path + "/";
    if (exists(base + "model.safetensors.index.json")) return open_index(base + "model.safetensors.index.json");
    if (exists(base + "model.safetensors")) return open_single(base + "model.safetensors");
    return Error(TB_INVALID_ARGUMENT, "%s holds neither model.safetensors.index.json nor "
                 "model.safetensors", path.c_str());
  }
  if (ends_with(path, ".json")) return open_index(path);
  return open_single(path);
}

}  // namespace twinbit::import
