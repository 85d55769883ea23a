// StreamWriter: writes a strip cache with memory bounded by one entry, for artifacts larger than
// what should be held at once (an imported model: GBs). Artifact::Writer (artifact.h) keeps every
// payload until write(); this writer sends each entry's payloads to the output as the entry is
// added and keeps only the manifest.
//
// The format puts the manifest before the payloads (format.h), and the first payload starts at
// the first multiple of kPayloadAlign after it, so the manifest's size must be known before any
// payload is written. It is: offsets, sizes and checksums are fixed-width fields, so the size
// depends only on what every entry is (name, kind, precision, shape, fused ranges, source
// tensors). Hence the two steps: begin() takes the declaration of every entry (Entry with its
// payloads ignored), lays the file out and reserves the header and manifest; each add_*() writes
// the next declared entry's payloads (the checksums computed on the way); finish() writes the
// header and manifest, now complete, over the reserved bytes and commits the output. The file is
// byte for byte what Writer writes for the same entries; the on-disk format is unchanged.
//
// Atomicity is the OutputFile's (atomic_file.h): nothing appears at the target before finish()
// commits. An error (a failed check, a failed write) leaves the writer spent and the output
// uncommitted: destroying the OutputFile removes the temporary; a kill or SIGINT leaves no file
// at the target either (the temporary is unnamed, or named and removed by the next write into
// that folder).
//
// Outputs that cannot seek back (stdout, a FIFO, a device): the payloads go to an unnamed
// temporary file (in $TMPDIR, else /tmp) and are copied to the output after the header and
// manifest, so memory stays bounded there too; disk space for one copy of the payloads is needed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include <twinbit/status.hpp>

namespace twinbit::artifact {

// Declarations for begin(): what an entry will be, without its bytes.
Entry declare_strips(const std::string& name, tb_prec prec, int64_t n, int64_t k,
                     std::vector<FusedRange> ranges = {},
                     std::vector<std::string> source_tensors = {});
Entry declare_matrix(const std::string& name, int64_t rows, int64_t cols,
                     std::vector<std::string> source_tensors = {});

class StreamWriter {
 public:
  // Checks every declared entry (the rules Writer applies: names valid and unique, shapes,
  // ranges, sources, provenance text) and reserves the header and manifest in `out`, which must
  // outlive the writer. Errors: INVALID_ARGUMENT naming the entry and field; UNAVAILABLE from
  // the output.
  static Result<std::unique_ptr<StreamWriter>> begin(OutputFile& out, const Provenance& provenance,
                                                     std::vector<Entry> entries);
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // The next declared entry's payloads, written before the call returns (the caller may free
  // them then). `name` must be the next declared entry's and the sizes its shape's; strip
  // padding is checked as Writer checks it. Any error spends the writer.
  Status add_strips(const std::string& name, std::span<const uint8_t> codes,
                    std::span<const uint16_t> scales);
  Status add_matrix(const std::string& name, std::span<const float> data);
  // The next declared strip set, made strip by strip (32 output columns each) for entries too
  // large to hold whole (an lm_head): `make(s0, count, codes, scales)` fills strips
  // [s0, s0 + count) - their codes as they lie in the payload (count * strip code bytes) and their
  // scales (count * strip scales) - and may work on them in parallel. Strips are asked for in
  // order, `batch` at a time; only one batch of codes and the entry's scales (a sixteenth of the
  // q8 codes) are held. Padding is checked per strip; the bytes are add_strips'.
  using StripMaker = std::function<Status(int64_t s0, int64_t count, uint8_t* codes,
                                          uint16_t* scales)>;
  Status add_strips_streamed(const std::string& name, int64_t batch, const StripMaker& make);
  // Once every declared entry was added: writes the header and manifest and commits the output.
  Status finish();

  size_t entries_added() const { return next_; }
  const std::vector<Entry>& entries() const { return entries_; }  // checksums as far as added

 private:
  StreamWriter(OutputFile& out) : out_(out) {}
  Status expect_next(const std::string& name, tb_weights_kind kind);
  Status put_payload(const uint8_t* data, uint64_t bytes);  // the gap before it, then the bytes
  Status put(const void* data, uint64_t bytes);             // to the output or the spool
  Status spend(Status s);                                   // marks the writer failed

  OutputFile& out_;
  Provenance provenance_;
  std::vector<Entry> entries_;
  size_t next_ = 0;
  size_t payload_ = 0;          // payloads written, over all entries
  uint64_t prefix_bytes_ = 0;   // header + manifest
  uint64_t at_ = 0;             // file offset of the next byte
  int spool_fd_ = -1;           // outputs that cannot seek: the payloads until finish()
  bool spent_ = false;
};

}  // namespace twinbit::artifact
