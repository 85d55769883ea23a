// The import pipeline (importer.h): check every job before writing anything, declare the entries,
// then make them one at a time - re-tile, or decode and quantise strip by strip while measuring
// the error - and stream each to the artifact.
#include "artifacts/import/importer.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "artifacts/quantize.h"
#include "artifacts/stream_writer.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/precision.h"
#include "core/strip_layout.h"

#ifndef TWINBIT_VERSION
#define TWINBIT_VERSION "0.0.0"
#endif

namespace twinbit::import {

namespace {

using ll = long long;

bool retiles(SourceType type, tb_prec prec) {
  return (type == SourceType::q8_0 && prec == TB_PREC_Q8) ||
         (type == SourceType::q4_0 && prec == TB_PREC_Q4);
}

bool is_float(SourceType type) {
  return type == SourceType::f32 || type == SourceType::f16 || type == SourceType::bf16;
}

// One job's checks, against the file, before anything is written.
Status check_job(const TensorFile& model, const ImportJob& job, const ImportOptions& o) {
  const std::vector<SourceTensor>& all = model.tensors();
  if (job.tensors.empty()) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' has no source tensor", job.entry.c_str());
  }
  if (job.tensors.size() > 1 && job.parts.size() != job.tensors.size()) {
    return Error(TB_INVALID_ARGUMENT, "fused entry '%s' has %zu tensors and %zu part names",
                 job.entry.c_str(), job.tensors.size(), job.parts.size());
  }
  int64_t k = -1;
  for (size_t i : job.tensors) {
    if (i >= all.size()) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': tensor index %zu is out of range (the file "
                   "has %zu tensors)", job.entry.c_str(), i, all.size());
    }
    const SourceTensor& t = all[i];
    if (t.dims.size() != 2 || t.dims[0] < 1 || t.dims[1] < 1) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': tensor '%s' has %zu dims (expected 2: N "
                   "outputs x K inputs)", job.entry.c_str(), t.name.c_str(), t.dims.size());
    }
    if (k >= 0 && t.dims[1] != k) {
      return Error(TB_INVALID_ARGUMENT, "fused entry '%s': tensor '%s' has K = %lld, the first "
                   "part K = %lld (parts must share K)", job.entry.c_str(), t.name.c_str(),
                   (ll)t.dims[1], (ll)k);
    }
    k = t.dims[1];
    if (t.type == SourceType::other) {
      return Error(TB_INVALID_ARGUMENT, "entry '%s': tensor '%s' is of type %s, which twinbit "
                   "cannot import", job.entry.c_str(), t.name.c_str(), t.type_name.c_str());
    }
    if (o.strict && !retiles(t.type, o.prec)) {
      return Error(TB_FAILED_PRECONDITION, "--strict: tensor '%s' (%s) would be %s to %s, not "
                   "re-tiled losslessly (only Q8_0 at q8 and Q4_0 at q4 are)", t.name.c_str(),
                   t.type_name.c_str(), is_float(t.type) ? "quantised" : "converted",
                   prec_name(o.prec));
    }
  }
  return Status();
}

// What one tensor's strips cost, per strip, summed in order at the end so that the figures do
// not depend on the thread count.
struct StripErrors {
  std::vector<double> max_abs, err_sq, src_sq;
  explicit StripErrors(int64_t strips) : max_abs(strips, 0), err_sq(strips, 0), src_sq(strips, 0) {}
  void sum_into(ImportedTensor& rep) const {
    double e2 = 0, s2 = 0;
    for (size_t s = 0; s < max_abs.size(); ++s) {
      rep.max_abs = std::max(rep.max_abs, max_abs[s]);
      e2 += err_sq[s];
      s2 += src_sq[s];
    }
    const double count = static_cast<double>(rep.n) * static_cast<double>(rep.k);
    rep.rms = std::sqrt(e2 / count);
    rep.source_rms = std::sqrt(s2 / count);
  }
};

// Makes strips [s0, s0 + count) of tensor t ({N, K}) at `prec` into codes / scales (laid out as
// in the payload: strip after strip), in parallel: re-tiled from the strip's 32 rows of blocks, or
// decoded and quantised with the error of each value measured into `errors`.
Status make_strips(const SourceTensor& t, std::span<const uint8_t> bytes, tb_prec prec,
                   const RowDecoder& decode, int64_t s0, int64_t count, uint8_t* codes,
                   uint16_t* scales, StripErrors& errors) {
  const int64_t n = t.dims[0], k = t.dims[1];
  const StripLayout whole{prec, n, k};
  const int64_t code_bytes = whole.strip_code_bytes(), strip_scales = whole.strip_scales();
  const bool retile = retiles(t.type, prec);
  const uint64_t row_bytes = t.bytes / static_cast<uint64_t>(n);
  if (retile && bytes.size() != t.bytes) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': %zu bytes in the file, %llu expected",
                 t.name.c_str(), bytes.size(), static_cast<unsigned long long>(t.bytes));
  }
  std::vector<Status> failed(static_cast<size_t>(count));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<float> rows;
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const int64_t s = s0 + i, n0 = s * 32, rows_here = std::min<int64_t>(32, n - n0);
      quant::PackedStrips strip;
      if (retile) {
        auto packed = quant::retile_gguf(bytes.subspan(n0 * row_bytes, rows_here * row_bytes),
                                         rows_here, k, prec);
        if (!packed.ok()) {
          failed[i] = Error(packed.status().code(), "tensor '%s': %s", t.name.c_str(),
                            packed.status().message().c_str());
          continue;
        }
        strip = std::move(packed).value();
      } else {
        rows.resize(static_cast<size_t>(32 * k));
        if (Status st = decode(t, bytes, n0, rows_here, rows.data()); !st.ok()) {
          failed[i] = st;
          continue;
        }
        strip = quant::make_strips(prec, rows_here, k);
        quant::pack_rows(strip, 0, rows_here, rows.data(), k);
        const StripLayout layout{prec, rows_here, k};
        const PrecisionTraits& traits = precision_traits(prec);
        for (int64_t c = 0; c < rows_here; ++c) {
          for (int64_t kk = 0; kk < k; ++kk) {
            const float d = fp16_to_float(strip.scales[layout.scale_index(c, kk / 32)]);
            const float got = traits.dequantize(layout.code(strip.codes.data(), c, kk), d);
            const double src = rows[c * k + kk];
            const double e = static_cast<double>(got) - src;
            errors.max_abs[s] = std::max(errors.max_abs[s], std::fabs(e));
            errors.err_sq[s] += e * e;
            errors.src_sq[s] += src * src;
          }
        }
      }
      // A strip set of <= 32 columns is one strip of the whole tensor's layout, byte for byte.
      std::memcpy(codes + i * code_bytes, strip.codes.data(), static_cast<size_t>(code_bytes));
      std::memcpy(scales + i * strip_scales, strip.scales.data(),
                  static_cast<size_t>(strip_scales) * sizeof(uint16_t));
    }
  });
  for (const Status& st : failed) {
    if (!st.ok()) return st;
  }
  return Status();
}

}  // namespace

const char* how_name(ImportedTensor::How how) {
  switch (how) {
    case ImportedTensor::How::retiled: return "retiled";
    case ImportedTensor::How::quantised: return "quantised";
    case ImportedTensor::How::converted: return "converted";
  }
  return "?";
}

Status decode_f32_rows(const SourceTensor& t, std::span<const uint8_t> bytes, int64_t row0,
                       int64_t rows, float* out) {
  if (t.type != SourceType::f32) {
    return Error(TB_UNIMPLEMENTED, "tensor '%s': decoding %s rows needs the full decoder "
                 "(dequantize.h); this one reads F32 only", t.name.c_str(), t.type_name.c_str());
  }
  const int64_t n = t.dims.empty() ? 0 : t.dims[0], k = t.dims.size() == 2 ? t.dims[1] : 0;
  if (row0 < 0 || rows < 0 || row0 + rows > n ||
      bytes.size() != static_cast<uint64_t>(n) * static_cast<uint64_t>(k) * 4) {
    return Error(TB_INVALID_ARGUMENT, "tensor '%s': rows [%lld, %lld) of %lld, %zu bytes",
                 t.name.c_str(), (ll)row0, (ll)(row0 + rows), (ll)n, bytes.size());
  }
  std::memcpy(out, bytes.data() + static_cast<uint64_t>(row0) * k * 4,
              static_cast<size_t>(rows * k) * 4);  // little-endian hosts
  return Status();
}

Result<ImportSummary> import_model(const TensorFile& model, const std::vector<ImportJob>& jobs,
                                   std::vector<SkipNote> skipped, artifact::OutputFile& out,
                                   const ImportOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.prec != TB_PREC_Q8 && o.prec != TB_PREC_Q4) {
    return Error(TB_INVALID_ARGUMENT, "precision %d is unknown (expected q8 or q4)",
                 static_cast<int>(o.prec));
  }
  if (jobs.empty()) {
    return Error(TB_INVALID_ARGUMENT, "nothing to import from %s: none of its %zu tensors maps to "
                 "a projection entry", o.source_path.c_str(), model.tensors().size());
  }
  const RowDecoder decode = o.decode ? o.decode : RowDecoder(decode_f32_rows);
  const std::vector<SourceTensor>& all = model.tensors();
  const std::string suffix = std::string(".") + prec_name(o.prec);

  // Everything checked and declared before the first byte of work.
  std::vector<artifact::Entry> declared;
  uint64_t bytes_total = 0;   // the work: a tensor in a fused entry and alone is read twice
  uint64_t bytes_unique = 0;  // the source: each tensor counted once
  std::vector<bool> counted(all.size(), false);
  for (const ImportJob& job : jobs) {
    TB_RETURN_IF_ERROR(check_job(model, job, o));
    int64_t n = 0;
    std::vector<artifact::FusedRange> ranges;
    std::vector<std::string> sources;
    for (size_t p = 0; p < job.tensors.size(); ++p) {
      const SourceTensor& t = all[job.tensors[p]];
      if (job.tensors.size() > 1) ranges.push_back({job.parts[p], n, n + t.dims[0]});
      n += t.dims[0];
      sources.push_back(t.name);
      bytes_total += t.bytes;
      if (!counted[job.tensors[p]]) bytes_unique += t.bytes;
      counted[job.tensors[p]] = true;
    }
    declared.push_back(artifact::declare_strips(job.entry + suffix, o.prec, n,
                                                all[job.tensors[0]].dims[1], std::move(ranges),
                                                std::move(sources)));
  }
  artifact::Provenance prov{o.source_path, "twinbit " TWINBIT_VERSION};
  auto writer = artifact::StreamWriter::begin(out, prov, declared);
  if (!writer.ok()) return writer.status();

  ImportSummary summary;
  summary.skipped = std::move(skipped);
  ImportProgress progress;
  progress.entries = jobs.size();
  progress.bytes_total = bytes_total;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ImportJob& job = jobs[j];
    const std::string name = job.entry + suffix;
    progress.entry = j;
    progress.name = name;
    if (o.progress) o.progress(progress);
    auto report = [&](const SourceTensor& t) {
      ImportedTensor rep;
      rep.entry = name;
      rep.tensor = t.name;
      rep.type = t.type_name;
      rep.how = retiles(t.type, o.prec) ? ImportedTensor::How::retiled
                : is_float(t.type)      ? ImportedTensor::How::quantised
                                        : ImportedTensor::How::converted;
      rep.n = t.dims[0];
      rep.k = t.dims[1];
      rep.bytes_in = t.bytes;
      return rep;
    };
    if (job.tensors.size() == 1) {
      // Streamed a batch of strips at a time: an lm_head is never whole in memory.
      const SourceTensor& t = all[job.tensors[0]];
      const std::span<const uint8_t> bytes = model.bytes(t);
      ImportedTensor rep = report(t);
      StripErrors errors(pad32(rep.n) / 32);
      TB_RETURN_IF_ERROR((*writer)->add_strips_streamed(
          name, o.strips_per_batch,
          [&](int64_t s0, int64_t count, uint8_t* codes, uint16_t* scales) {
            const Status st = make_strips(t, bytes, o.prec, decode, s0, count, codes, scales, errors);
            model.release(t);  // its pages may go: the memory bound holds for models of any size
            return st;
          }));
      errors.sum_into(rep);
      summary.tensors.push_back(std::move(rep));
      progress.bytes_done += t.bytes;
      continue;
    }
    // Fused: each part whole (a layer's projections), then stacked.
    std::vector<quant::PackedStrips> parts;
    for (size_t i : job.tensors) {
      const SourceTensor& t = all[i];
      ImportedTensor rep = report(t);
      quant::PackedStrips part = quant::make_strips(o.prec, rep.n, rep.k);
      const StripLayout layout{o.prec, rep.n, rep.k};
      StripErrors errors(layout.strips());
      TB_RETURN_IF_ERROR(make_strips(t, model.bytes(t), o.prec, decode, 0, layout.strips(),
                                     part.codes.data(), part.scales.data(), errors));
      model.release(t);
      errors.sum_into(rep);
      parts.push_back(std::move(part));
      summary.tensors.push_back(std::move(rep));
      progress.bytes_done += t.bytes;
    }
    std::vector<const quant::PackedStrips*> ptrs;
    for (const quant::PackedStrips& p : parts) ptrs.push_back(&p);
    auto cat = quant::concat_strips(ptrs);
    if (!cat.ok()) return cat.status();
    parts.clear();
    TB_RETURN_IF_ERROR((*writer)->add_strips(name, cat->codes, cat->scales));
  }
  TB_RETURN_IF_ERROR((*writer)->finish());
  progress.entry = jobs.size();
  progress.name.clear();
  if (o.progress) o.progress(progress);
  summary.entries = jobs.size();
  summary.bytes_in = bytes_unique;
  summary.bytes_out = out.bytes_written();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace twinbit::import
