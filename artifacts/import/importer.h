// The import pipeline: from an opened model file (tensor_source.h) and the list of entries to make
// of it, to a strip-cache artifact written by the streaming writer (stream_writer.h), with a
// summary of what each tensor cost.
//
// Per entry, per source tensor ({N, K}: N outputs, rows of K), by type and target precision:
//   Q8_0 at q8, Q4_0 at q4   re-tiled (quant::retile_gguf): the same codes and scales, lossless;
//   F32 / F16 / BF16         decoded to float rows a strip (32 rows) at a time and quantised with
//                            the llama.cpp-compatible block quantisers (quant::pack_rows);
//   any other decodable type decoded the same way and re-quantised ("converted");
//   `other`                  refused (the name planner lists such tensors as skipped).
// Every path that is not a re-tiling measures its error on the fly: per tensor, the largest
// |artifact value - source value| and the RMS of that difference, with the tensor's own RMS to
// relate it to (the artifact value is the dequantised code: code * fp16 scale). `strict` refuses,
// before anything is written, any tensor that would not be re-tiled, naming it and its type.
//
// A fused entry (jobs with several tensors: attn_qkv, ffn_gate_up) stacks its parts' rows in order
// (quant::concat_strips) and names them as fused ranges. Entries are "<entry>.<prec>"
// ("blk.0.attn_qkv.q8"); the provenance's source_file is the model path.
//
// Memory: the streaming writer keeps only the manifest. An unfused entry is made and written a
// batch of strips at a time (StreamWriter::add_strips_streamed: the batch's codes and the entry's
// scales are held, not the whole strip set - an lm_head is hundreds of MB); a fused entry holds its
// parts and the stacked copy (one layer's projections). Workers hold a 32-row float buffer each.
// The source tensor is released (TensorFile::release) after each batch, so the mapped model's
// pages do not accumulate either.
// Strips are packed in parallel (oneTBB); the bytes do not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include "artifacts/import/tensor_source.h"
#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit::import {

// One artifact entry to make: the source tensors (indices into TensorFile::tensors()) whose rows
// it stacks, and, when there are several, the names of their ranges ("attn_q", "attn_k", ...).
struct ImportJob {
  std::string entry;               // without the precision: "blk.0.attn_qkv", "lm_head"
  std::vector<size_t> tensors;
  std::vector<std::string> parts;  // empty for one tensor; else one name per tensor
};

// A tensor the artifact does not hold, for the summary.
struct SkipNote {
  std::string tensor;
  uint64_t bytes = 0;
  std::string why;
};

// Decodes rows [row0, row0 + rows) of a tensor ({N, K}) into out[rows][K] floats; thread-safe.
// The decoding of every SourceType is dequantize.h's to_float_rows, which has this signature.
using RowDecoder = std::function<Status(const SourceTensor& t, std::span<const uint8_t> bytes,
                                        int64_t row0, int64_t rows, float* out)>;
// The decoder the pipeline uses when ImportOptions::decode is empty: F32 rows as they are; any
// other type is UNIMPLEMENTED naming it (the full decoder is dequantize.h's).
Status decode_f32_rows(const SourceTensor& t, std::span<const uint8_t> bytes, int64_t row0,
                       int64_t rows, float* out);

struct ImportProgress {
  size_t entry = 0, entries = 0;   // the entry being made (0-based) of how many
  std::string name;                // its name
  uint64_t bytes_done = 0, bytes_total = 0;  // source bytes of the entries finished
};

struct ImportOptions {
  tb_prec prec = TB_PREC_Q8;
  bool strict = false;             // refuse anything not re-tiled losslessly
  RowDecoder decode;               // empty: decode_f32_rows
  std::string source_path;         // provenance source_file
  std::function<void(const ImportProgress&)> progress;  // called before each entry and at the end
  int64_t strips_per_batch = 64;   // an unfused entry is made and written this many strips at a time
};

// What one source tensor became.
struct ImportedTensor {
  enum class How { retiled, quantised, converted };
  std::string entry;       // "blk.0.attn_q.q8"
  std::string tensor;      // the source name
  std::string type;        // the source type's name: "Q8_0", "F16", "Q4_K"
  How how = How::retiled;
  int64_t n = 0, k = 0;
  uint64_t bytes_in = 0;
  // Conversion error over the tensor's N x K values (0 when re-tiled): max |artifact - source|,
  // the RMS of (artifact - source) and the RMS of the source.
  double max_abs = 0, rms = 0, source_rms = 0;
  double rms_relative() const { return source_rms > 0 ? rms / source_rms : 0; }
};

struct ImportSummary {
  std::vector<ImportedTensor> tensors;
  std::vector<SkipNote> skipped;
  size_t entries = 0;
  uint64_t bytes_in = 0;   // source bytes of the imported tensors, each counted once
  uint64_t bytes_out = 0;  // the artifact's size
  double seconds = 0;
};

const char* how_name(ImportedTensor::How how);  // "retiled", "quantised", "converted"

// Makes every job's entry and writes the artifact into `out` (committed on success; on failure
// nothing appears at its target). Errors name the entry and tensor: INVALID_ARGUMENT for a job
// that cannot be made (no jobs at all, index out of range, not 2-D, parts of different K, a type that cannot be
// imported, too few part names), FAILED_PRECONDITION for what `strict` refuses, the decoder's and
// the output's errors as they are.
Result<ImportSummary> import_model(const TensorFile& model, const std::vector<ImportJob>& jobs,
                                   std::vector<SkipNote> skipped, artifact::OutputFile& out,
                                   const ImportOptions& options);

}  // namespace twinbit::import
