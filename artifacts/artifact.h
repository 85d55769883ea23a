// The strip cache: writing and reading twinbit's weight artifact.
//
// The byte layout is specified field by field in artifacts/format.h (and docs/FORMAT.md); this
// header is the API.
//
// Reading: Artifact::open validates the header and the whole manifest against the file size
// before returning (nothing in the file is trusted: every count, offset and size is checked;
// sizes implied by shapes are computed, never read). Payload bytes - checksums (xxh64), the zero
// gaps before them, strip padding - are checked by verify() and, once per entry, by
// view_verified(), the path a backend binds through. An Artifact is immutable after open and may
// be shared by threads; views stay valid while it lives, or while the keep_alive of weights()
// is held (a binding holds it: core/backend.hpp).
//
// Read modes (OpenOptions::read), and what each protects against a file that another process
// truncates or rewrites while it is open:
//   kMap (default): the file is mapped read-only; views point into the mapping, so opening costs
//     only the header and manifest and pages are read when used. twinbit's own reads of the
//     mapping - open, verify/view_verified, a backend's bind copying weights into device memory
//     (read_guard.h) - re-check the file size and turn a fault into DATA_LOSS naming the file.
//     Reads twinbit cannot guard - a CPU kernel streaming a view zero-copy, or any caller reading
//     a view - still die of SIGBUS if the file shrank, and see new bytes if it was rewritten in
//     place after verify.
//   kCopy: the whole file is read into memory this object owns (2 MiB-aligned, so payloads keep
//     their 4096-byte alignment, and on transparent huge pages where the system gives them:
//     huge_pages.h, the CPU kernels stream weights faster there) and closed; views point there.
//     Costs the file's size in memory and a full read at open; after open nothing done to the
//     file can affect this object.
//
// Writing: Writer collects entries in memory (by copy, or adopting owned buffers) and write()
// produces the file atomically: a temporary file in the same folder, fsync, rename, fsync of the
// folder. A failure removes the temporary file and leaves the target path untouched. Entries and
// provenance are checked against the format's rules (names, text as UTF-8, strip padding) when
// added or written; a violation is INVALID_ARGUMENT naming the field.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit::artifact {

class OutputFile;  // atomic_file.h
class FileImage;   // file_image.h

// An entry's weights with what owns their memory: pass both to Backend::bind, and the binding
// keeps the file image alive after this Artifact object is gone.
struct Weights {
  tb_weights_view view;
  std::shared_ptr<const void> keep_alive;
};

// A named output column range of a fused strip set: columns [begin, end) are projection `name`.
struct FusedRange {
  std::string name;
  int64_t begin = 0;
  int64_t end = 0;
};

struct Provenance {
  std::string source_file;   // "synthetic:seed=42" or the GGUF path it was converted from
  std::string packer;        // "twinbit 0.1.0"
};

// One manifest entry as read (or about to be written).
struct Entry {
  std::string name;                  // unique within the file: "blk.0.attn_q", "lm_head"
  tb_weights_kind kind = TB_WEIGHTS_STRIPS;
  tb_prec prec = TB_PREC_Q8;         // strips only
  int64_t n = 0, k = 0;              // strips: N outputs x K inputs; f32 matrix: rows x cols
  std::vector<FusedRange> ranges;    // strips: empty unless fused
  std::vector<std::string> source_tensors;
  // Payloads: strips have codes (0) and scales (1); an f32 matrix has data (0) only.
  struct Payload {
    uint64_t offset = 0;  // from the start of the file, multiple of kPayloadAlign
    uint64_t bytes = 0;
    uint64_t xxh64 = 0;
  };
  std::vector<Payload> payloads;
};

enum class ReadMode {
  kMap,   // map the file; payloads are read from the mapping when used
  kCopy,  // read the whole file into owned memory at open ("no mmap")
};

struct OpenOptions {
  ReadMode read = ReadMode::kMap;
};

class Artifact {
 public:
  // Errors: INVALID_ARGUMENT (no such file, not a regular file), UNAVAILABLE (cannot open or
  // read it), RESOURCE_EXHAUSTED (cannot map or allocate), DATA_LOSS (not a valid artifact, or
  // it shrank while being opened), each naming the path.
  static Result<std::unique_ptr<Artifact>> open(const std::string& path,
                                                const OpenOptions& options = {});
  ~Artifact();
  Artifact(const Artifact&) = delete;
  Artifact& operator=(const Artifact&) = delete;

  const std::string& path() const { return path_; }
  ReadMode read_mode() const { return mode_; }
  uint32_t format_version() const { return version_; }
  uint64_t file_bytes() const { return size_; }
  const Provenance& provenance() const { return provenance_; }
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(const std::string& name) const;  // null if absent

  // The entry's weights as backends take them, pointing into the mapping or the owned copy; not
  // verified.
  tb_weights_view view(const Entry& e) const;
  // Verifies the entry (once; later calls are free), then returns the view.
  Result<tb_weights_view> view_verified(const Entry& e) const;
  // view_verified() with the file image that owns the bytes (kMap: the mapping and the open
  // file; kCopy: the owned copy; parse(): the caller's bytes, borrowed, which the caller keeps).
  Result<Weights> weights(const Entry& e) const;
  // The owner of every view's bytes (what weights() hands out as keep_alive).
  std::shared_ptr<const void> keep_alive() const { return image_; }
  // Verifies one entry: its payload checksums, the zero gap before each payload, and (strips) the
  // padding columns and padding k. DATA_LOSS names the entry, the payload and the offset; in
  // kMap mode also when the file changed size since open or a read of the mapping faulted.
  Status verify(const Entry& e) const;

 private:
  Artifact() = default;
  Status check_unchanged() const;  // kMap: the file still has the size it was mapped at
  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t manifest_end_ = 0;  // where the first gap starts
  uint32_t version_ = 0;
  ReadMode mode_ = ReadMode::kMap;
  Provenance provenance_;
  std::vector<Entry> entries_;
  // What base_ points into: the mapping of the file or the anonymous copy of it, or bytes
  // borrowed from parse()'s caller; shared with every binding made through weights().
  std::shared_ptr<const FileImage> image_;
  int fd_ = -1;  // kMap: the open file (owned by image_), kept for the size re-check
  // Per entry: set once verify() passed. Atomic so concurrent view_verified() calls are safe; two
  // threads may both verify the same entry the first time, which is harmless.
  mutable std::unique_ptr<std::atomic<bool>[]> verified_;
  friend class Reader;
};

// Parses and validates an artifact image in memory (what open() does once the header and
// manifest are read). Exposed for the fuzzer and the bad-input tests. The returned Artifact
// borrows `bytes` (read_mode() is kCopy: no file stands behind it).
Result<std::unique_ptr<Artifact>> parse(std::span<const uint8_t> bytes, const std::string& what);

class Writer {
 public:
  // A strip set in the canonical layout (FORMAT.md): codes and scales are copied.
  Status add_strips(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                    std::span<const uint8_t> codes, std::span<const uint16_t> scales,
                    std::vector<FusedRange> ranges = {},
                    std::vector<std::string> source_tensors = {});
  // The same, taking ownership of the buffers instead of copying them (lm_head's codes are
  // hundreds of MB). The buffers are consumed even when the call fails.
  Status adopt_strips(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                      std::vector<uint8_t>&& codes, std::vector<uint16_t>&& scales,
                      std::vector<FusedRange> ranges = {},
                      std::vector<std::string> source_tensors = {});
  // A row-major float matrix [rows][cols]: data is copied.
  Status add_matrix(const std::string& name, int64_t rows, int64_t cols,
                    std::span<const float> data, std::vector<std::string> source_tensors = {});
  // Writes atomically (temporary file, fsync, rename). Errors name the path and the step.
  Status write(const std::string& path, const Provenance& provenance) const;
  // The same into an output opened before the work (atomic_file.h: what a path may be).
  Status write(OutputFile& file, const Provenance& provenance) const;
  // The file image (for tests and fuzzers); write() is this plus the atomic file dance.
  Result<std::vector<uint8_t>> serialize(const Provenance& provenance) const;

 private:
  struct Pending {
    Entry entry;
    std::vector<std::vector<uint8_t>> payloads;
  };
  Status add_pending(Entry entry, std::vector<std::vector<uint8_t>> payloads);
  std::vector<Pending> pending_;
};

}  // namespace twinbit::artifact
