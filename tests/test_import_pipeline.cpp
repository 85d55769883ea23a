// The import pipeline (artifacts/import/importer.h) over a model held in memory: float tensors are
// quantised to exactly what pack_strips makes of the same floats, Q8_0 blocks are re-tiled to
// exactly what retile_gguf makes of them, a converted type reports the error the artifact really
// has, fused entries stack their parts, and bad jobs or --strict refuse before anything is written.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "artifacts/atomic_file.h"
#include "artifacts/import/importer.h"
#include "artifacts/quantize.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/precision.h"
#include "core/strip_layout.h"
#include "test_artifact_util.h"

using namespace twinbit;
using namespace twinbit::import;

namespace {

// A TensorFile whose tensors live in memory.
class FakeFile : public TensorFile {
 public:
  void add(const std::string& name, SourceType type, const char* type_name,
           std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
    SourceTensor t;
    t.name = name;
    t.type = type;
    t.type_name = type_name;
    t.dims = std::move(dims);
    t.bytes = bytes.size();
    t.offset = data_.size();
    data_.push_back(std::move(bytes));
    tensors_.push_back(std::move(t));
  }
  void add_f32(const std::string& name, int64_t n, int64_t k, const std::vector<float>& w) {
    std::vector<uint8_t> b(w.size() * 4);
    std::memcpy(b.data(), w.data(), b.size());
    add(name, SourceType::f32, "F32", {n, k}, std::move(b));
  }
  const std::vector<std::string>& files() const override { return files_; }
  const std::vector<SourceTensor>& tensors() const override { return tensors_; }
  std::span<const uint8_t> bytes(const SourceTensor& t) const override {
    return data_[t.offset];  // offset: the index of its buffer here
  }
  std::vector<std::pair<std::string, std::string>> metadata() const override { return {}; }
  void release(const SourceTensor& t) const override { released.push_back(t.name); }
  mutable std::vector<std::string> released;  // in the order the pipeline let them go

 private:
  std::vector<std::string> files_{"fake.gguf"};
  std::vector<SourceTensor> tensors_;
  std::vector<std::vector<uint8_t>> data_;
};

std::vector<float> random_floats(int64_t count, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<float> w(static_cast<size_t>(count));
  for (float& v : w) v = static_cast<float>(static_cast<int32_t>(g() >> 40) - (1 << 23)) * 0x1p-26f;
  return w;
}

// GGUF Q8_0 rows of `w` [n][k]: per block of 32, the fp16 d then 32 int8 codes.
std::vector<uint8_t> q8_0_blocks(const std::vector<float>& w, int64_t n, int64_t k) {
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      int8_t codes[32];
      uint16_t d = 0;
      quant::quantize_block_q8_0(w.data() + r * k + b * 32, codes, &d);
      out.push_back(static_cast<uint8_t>(d));
      out.push_back(static_cast<uint8_t>(d >> 8));
      out.insert(out.end(), reinterpret_cast<uint8_t*>(codes), reinterpret_cast<uint8_t*>(codes) + 32);
    }
  }
  return out;
}

// The reference decoding of Q8_0 (d * q) and F32, standing in for dequantize.h here.
Status test_decode(const SourceTensor& t, std::span<const uint8_t> bytes, int64_t row0,
                   int64_t rows, float* out) {
  if (t.type == SourceType::f32) return decode_f32_rows(t, bytes, row0, rows, out);
  REQUIRE(t.type == SourceType::q8_0);
  const int64_t k = t.dims[1];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      const uint8_t* blk = bytes.data() + ((row0 + r) * (k / 32) + b) * 34;
      const float d = fp16_to_float(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
      for (int i = 0; i < 32; ++i) out[r * k + b * 32 + i] = static_cast<float>(static_cast<int8_t>(blk[2 + i])) * d;
    }
  }
  return Status();
}

struct Written {
  Result<ImportSummary> summary = Status(Error(TB_INTERNAL, "not run"));
  std::unique_ptr<artifact::Artifact> art;
};

Written run(const testart::TempDir& dir, const FakeFile& f, const std::vector<ImportJob>& jobs,
            ImportOptions o) {
  Written w;
  auto out = artifact::OutputFile::open(dir.path + "/out.tbsc");
  REQUIRE(out.ok());
  o.source_path = "fake.gguf";
  w.summary = import_model(f, jobs, {{"token_embd.weight", 1234, "embedding"}}, *out, o);
  if (w.summary.ok()) {
    auto a = artifact::Artifact::open(dir.path + "/out.tbsc");
    REQUIRE_MESSAGE(a.ok(), a.status().to_string());
    w.art = std::move(a).value();
    for (const artifact::Entry& e : w.art->entries()) REQUIRE(w.art->verify(e).ok());
  }
  return w;
}

// An entry's payloads as written.
std::pair<std::vector<uint8_t>, std::vector<uint16_t>> payloads(const artifact::Artifact& a,
                                                                const std::string& name) {
  const artifact::Entry* e = a.find(name);
  REQUIRE(e != nullptr);
  const tb_weights_view v = a.view(*e);
  const auto* c = static_cast<const uint8_t*>(v.strips.codes);
  std::vector<uint16_t> s(v.strips.scales_bytes / 2);
  std::memcpy(s.data(), v.strips.scales, v.strips.scales_bytes);
  return {std::vector<uint8_t>(c, c + v.strips.codes_bytes), s};
}

}  // namespace

TEST_SUITE("import") {

TEST_CASE("import_f32_equals_pack_strips_and_fused_entry_stacks_the_parts") {
  const testart::TempDir dir;
  FakeFile f;
  const int64_t k = 70;  // not a multiple of 32: padded k
  const auto q = random_floats(40 * k, 1), kk = random_floats(33 * k, 2), v = random_floats(33 * k, 3);
  f.add_f32("blk.0.attn_q.weight", 40, k, q);
  f.add_f32("blk.0.attn_k.weight", 33, k, kk);
  f.add_f32("blk.0.attn_v.weight", 33, k, v);
  for (const auto& [prec, batch] : {std::pair{TB_PREC_Q8, 64}, std::pair{TB_PREC_Q4, 1}}) {
    ImportOptions o;
    o.prec = prec;
    o.strips_per_batch = batch;
    std::vector<ImportProgress> seen;
    o.progress = [&](const ImportProgress& p) { seen.push_back(p); };
    const std::vector<ImportJob> jobs = {{"blk.0.attn_q", {0}, {}},
                                         {"blk.0.attn_qkv", {0, 1, 2}, {"attn_q", "attn_k", "attn_v"}}};
    Written w = run(dir, f, jobs, o);
    REQUIRE_MESSAGE(w.summary.ok(), w.summary.status().to_string());
    const std::string sfx = std::string(".") + prec_name(prec);
    const quant::PackedStrips pq = quant::pack_strips(q.data(), 40, k, prec);
    const auto [codes, scales] = payloads(*w.art, "blk.0.attn_q" + sfx);
    CHECK(codes == pq.codes);
    CHECK(scales == pq.scales);
    const quant::PackedStrips pk = quant::pack_strips(kk.data(), 33, k, prec);
    const quant::PackedStrips pv = quant::pack_strips(v.data(), 33, k, prec);
    const quant::PackedStrips* parts[] = {&pq, &pk, &pv};
    auto cat = quant::concat_strips(parts);
    REQUIRE(cat.ok());
    const auto [fc, fs] = payloads(*w.art, "blk.0.attn_qkv" + sfx);
    CHECK(fc == cat->codes);
    CHECK(fs == cat->scales);
    const artifact::Entry* fused = w.art->find("blk.0.attn_qkv" + sfx);
    REQUIRE(fused->ranges.size() == 3);
    CHECK(fused->ranges[1].name == "attn_k");
    CHECK(fused->ranges[1].begin == 40);
    CHECK(fused->ranges[1].end == 73);
    CHECK(fused->source_tensors[2] == "blk.0.attn_v.weight");
    CHECK(w.art->provenance().source_file == "fake.gguf");
    // Summary: four tensors quantised, the skipped one kept, sizes and progress.
    REQUIRE(w.summary->tensors.size() == 4);
    CHECK(w.summary->tensors[0].how == ImportedTensor::How::quantised);
    CHECK(w.summary->tensors[0].max_abs > 0);
    CHECK(w.summary->skipped.size() == 1);
    // Source bytes count attn_q once; the progress counts the work, which reads it twice.
    CHECK(w.summary->bytes_in == (40 + 33 + 33) * k * 4);
    CHECK(w.summary->bytes_out == w.art->file_bytes());
    REQUIRE(seen.size() == 3);
    CHECK(seen[1].name == "blk.0.attn_qkv" + sfx);
    CHECK(seen[2].bytes_done == seen[2].bytes_total);
    CHECK(seen[2].bytes_total == (40 + 40 + 33 + 33) * k * 4);
    // Each tensor is released once packed (attn_q twice: once per entry that reads it).
    // (attn_q: after each batch of its own entry, then as a part of the fused one).
    std::vector<std::string> want(batch == 1 ? 2 : 1, "blk.0.attn_q.weight");
    for (const char* t : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"}) {
      want.push_back(t);
    }
    CHECK(f.released == want);
    f.released.clear();
  }
}

TEST_CASE("import_q8_0_at_q8_is_retiled_losslessly") {
  const testart::TempDir dir;
  FakeFile f;
  const int64_t n = 45, k = 96;
  const auto w0 = random_floats(n * k, 4);
  const std::vector<uint8_t> blocks = q8_0_blocks(w0, n, k);
  f.add("blk.0.ffn_down.weight", SourceType::q8_0, "Q8_0", {n, k}, blocks);
  auto want = quant::retile_gguf(blocks, n, k, TB_PREC_Q8);
  REQUIRE(want.ok());
  for (int64_t batch : {1, 64}) {  // strip by strip, or the whole entry in one batch
    ImportOptions o;
    o.strict = true;  // re-tiling is lossless: strict accepts it
    o.strips_per_batch = batch;
    Written w = run(dir, f, {{"blk.0.ffn_down", {0}, {}}}, o);
    REQUIRE_MESSAGE(w.summary.ok(), w.summary.status().to_string());
    const auto [codes, scales] = payloads(*w.art, "blk.0.ffn_down.q8");
    CHECK(codes == want->codes);
    CHECK(scales == want->scales);
  }
  ImportOptions o;
  o.strict = true;
  Written w = run(dir, f, {{"blk.0.ffn_down", {0}, {}}}, o);
  REQUIRE(w.summary.ok());
  const ImportedTensor& t = w.summary->tensors.at(0);
  CHECK(t.how == ImportedTensor::How::retiled);
  CHECK(t.max_abs == 0);
  CHECK(t.type == "Q8_0");
}

TEST_CASE("import_converted_type_reports_the_error_the_artifact_has") {
  const testart::TempDir dir;
  FakeFile f;
  const int64_t n = 37, k = 64;
  const std::vector<uint8_t> blocks = q8_0_blocks(random_floats(n * k, 5), n, k);
  f.add("output.weight", SourceType::q8_0, "Q8_0", {n, k}, blocks);
  ImportOptions o;
  o.prec = TB_PREC_Q4;  // Q8_0 at q4: decoded and re-quantised
  o.decode = test_decode;
  Written w = run(dir, f, {{"lm_head", {0}, {}}}, o);
  REQUIRE_MESSAGE(w.summary.ok(), w.summary.status().to_string());
  const ImportedTensor& t = w.summary->tensors.at(0);
  CHECK(t.how == ImportedTensor::How::converted);
  // The figures recomputed from the artifact as read back against the source's decoded values.
  std::vector<float> src(static_cast<size_t>(n * k));
  REQUIRE(test_decode(f.tensors()[0], blocks, 0, n, src.data()).ok());
  const auto [codes, scales] = payloads(*w.art, "lm_head.q4");
  const StripLayout layout{TB_PREC_Q4, n, k};
  double max_abs = 0, e2 = 0, s2 = 0;
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 0; i < k; ++i) {
      const float d = fp16_to_float(scales[layout.scale_index(c, i / 32)]);
      const double e = static_cast<double>(layout.code(codes.data(), c, i)) * d - src[c * k + i];
      max_abs = std::max(max_abs, std::fabs(e));
      e2 += e * e;
      s2 += static_cast<double>(src[c * k + i]) * src[c * k + i];
    }
  }
  CHECK(t.max_abs == doctest::Approx(max_abs).epsilon(1e-12));
  CHECK(t.rms == doctest::Approx(std::sqrt(e2 / (n * k))).epsilon(1e-12));
  CHECK(t.source_rms == doctest::Approx(std::sqrt(s2 / (n * k))).epsilon(1e-12));
  CHECK(t.max_abs > 0);
  CHECK(t.rms_relative() > 0.01);   // q4 of q8 data loses a few percent
  CHECK(t.rms_relative() < 0.2);

  // --strict refuses it, naming the tensor and type, and writes nothing.
  const testart::TempDir dir2;
  o.strict = true;
  Written s = run(dir2, f, {{"lm_head", {0}, {}}}, o);
  CHECK(s.summary.status().code() == TB_FAILED_PRECONDITION);
  CHECK(s.summary.status().message().find("output.weight") != std::string::npos);
  CHECK(s.summary.status().message().find("Q8_0") != std::string::npos);
  CHECK(testart::list_dir(dir2.path).empty());
}

TEST_CASE("import_bad_jobs_are_refused_before_anything_is_written") {
  const testart::TempDir dir;
  FakeFile f;
  f.add_f32("a.weight", 32, 64, random_floats(32 * 64, 6));
  f.add_f32("b.weight", 32, 96, random_floats(32 * 96, 7));
  f.add("norm.weight", SourceType::f32, "F32", {64}, std::vector<uint8_t>(256));
  f.add("odd.weight", SourceType::other, "IQ2_XS", {32, 256}, std::vector<uint8_t>(10));
  f.add("half.weight", SourceType::f16, "F16", {32, 64}, std::vector<uint8_t>(32 * 64 * 2));
  struct Case {
    std::vector<ImportJob> jobs;
    tb_code code;
    const char* says;
  };
  const Case cases[] = {
      {{}, TB_INVALID_ARGUMENT, "nothing to import"},
      {{{"x", {9}, {}}}, TB_INVALID_ARGUMENT, "out of range"},
      {{{"x", {2}, {}}}, TB_INVALID_ARGUMENT, "norm.weight"},
      {{{"x", {0, 1}, {"a", "b"}}}, TB_INVALID_ARGUMENT, "share K"},
      {{{"x", {0, 0}, {"a"}}}, TB_INVALID_ARGUMENT, "part names"},
      {{{"x", {3}, {}}}, TB_INVALID_ARGUMENT, "IQ2_XS"},
      {{{"x", {}, {}}}, TB_INVALID_ARGUMENT, "no source"},
      {{{"x", {0}, {}}, {"x", {0}, {}}}, TB_INVALID_ARGUMENT, "already used"},
      // The F32-only decoder (dequantize.h's decoder not given) names what it cannot read.
      {{{"x", {4}, {}}}, TB_UNIMPLEMENTED, "F16"},
  };
  for (const Case& c : cases) {
    Written w = run(dir, f, c.jobs, {});
    CHECK(w.summary.status().code() == c.code);
    CHECK_MESSAGE(w.summary.status().message().find(c.says) != std::string::npos,
                  w.summary.status().message());
    CHECK(testart::list_dir(dir.path).empty());
  }
}

}  // TEST_SUITE
