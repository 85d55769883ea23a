// The synthetic model: every float comes from splitmix64 streams keyed by (seed, entry name, row),
// so the file is the same whatever the thread count or the order tasks run in. Rows are generated
// and quantised 32 at a time (one strip) inside the parallel loop: lm_head's 1.2 GB of floats are
// never held at once, and each float row feeds every requested precision while it is in cache.
#include "artifacts/synthetic.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "artifacts/artifact.h"
#include "artifacts/quantize.h"
#include "artifacts/stream_writer.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/tsan_edges.h"

#ifndef TWINBIT_VERSION
#define TWINBIT_VERSION "0.0.0"
#endif

namespace twinbit::synthetic {

namespace {

using ll = long long;

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr float kWeightScale = 0.05f;  // weights ~ uniform in [-0.05, 0.05)
constexpr float kInputScale = 1.0f;    // gated-delta inputs and state

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// FNV-1a: a stable hash of an entry name, to key its stream.
uint64_t name_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t stream_seed(uint64_t seed, const std::string& name) { return mix64(seed ^ name_hash(name)); }
uint64_t row_seed(uint64_t base, int64_t row) {
  return mix64(base + kGolden * static_cast<uint64_t>(row + 1));
}

Status check_options(const Options& o) {
  const ModelShape& s = o.shape;
  const std::pair<const char*, int64_t> dims[] = {
      {"hidden", s.hidden}, {"intermediate", s.intermediate}, {"heads", s.heads},
      {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim}, {"vocab", s.vocab},
      {"gdn_value_heads", s.gdn_value_heads}, {"gdn_key_heads", s.gdn_key_heads},
      {"gdn_dim", s.gdn_dim}, {"gemv_cols", s.gemv_cols}};
  for (const auto& [what, v] : dims) {
    if (v < 1 || v > kMaxDim) {
      return Error(TB_INVALID_ARGUMENT, "model shape %s = %lld is out of range (expected 1 .. %lld)",
                   what, (ll)v, (ll)kMaxDim);
    }
  }
  if (s.heads * s.head_dim > kMaxDim || s.kv_heads * s.head_dim > kMaxDim ||
      s.gdn_value_heads * s.gdn_dim > kMaxDim || 2 * s.intermediate > kMaxDim ||
      (s.heads + 2 * s.kv_heads) * s.head_dim > kMaxDim) {
    return Error(TB_INVALID_ARGUMENT, "model shape: a projection would exceed %lld columns",
                 (ll)kMaxDim);
  }
  if (s.gdn_value_heads % s.gdn_key_heads != 0) {
    return Error(TB_INVALID_ARGUMENT, "gdn_value_heads = %lld is not a multiple of gdn_key_heads "
                 "= %lld", (ll)s.gdn_value_heads, (ll)s.gdn_key_heads);
  }
  if (o.layers < 0 || o.layers > kMaxLayers) {
    return Error(TB_INVALID_ARGUMENT, "layers = %d is out of range (expected 0 for the single-layer "
                 "model, or 1 .. %d)", o.layers, kMaxLayers);
  }
  if (o.precisions.empty()) return Error(TB_INVALID_ARGUMENT, "no precision requested");
  for (size_t i = 0; i < o.precisions.size(); ++i) {
    const tb_prec p = o.precisions[i];
    if (p != TB_PREC_Q8 && p != TB_PREC_Q4) {
      return Error(TB_INVALID_ARGUMENT, "precision %d is unknown (expected 0 = q8, 1 = q4)",
                   static_cast<int>(p));
    }
    if (std::count(o.precisions.begin(), o.precisions.end(), p) != 1) {
      return Error(TB_INVALID_ARGUMENT, "precision %s is requested twice", prec_name(p));
    }
  }
  return Status();
}

// Rows [begin, end) of an entry come from the stream of one name (its base), its row r - begin.
struct RowSource {
  uint64_t base;  // stream_seed(seed, name)
  int64_t begin, end;
};

// Generates an entry of n x k floats, row by row from `sources` (which cover [0, n) in order), and
// quantises it to every precision. Quantisation is per row, so a fused entry's rows are those
// its parts would have on their own.
std::vector<quant::PackedStrips> pack_rows_of(const std::vector<RowSource>& sources, int64_t n,
                                              int64_t k, const std::vector<tb_prec>& precisions) {
  std::vector<quant::PackedStrips> out;
  for (tb_prec p : precisions) out.push_back(quant::make_strips(p, n, k));
  const int64_t nstrips = pad32(n) / 32;
  parallel_for_seen_by_tsan(tbb::blocked_range<int64_t>(0, nstrips), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<float> rows(static_cast<size_t>(32 * k));
    for (int64_t s = r.begin(); s < r.end(); ++s) {
      const int64_t n0 = s * 32, count = std::min<int64_t>(32, n - n0);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t row = n0 + i;
        const RowSource* src = &sources.front();
        for (const RowSource& c : sources) {
          if (row >= c.begin && row < c.end) src = &c;
        }
        fill_uniform(rows.data() + i * k, k, row_seed(src->base, row - src->begin), kWeightScale);
      }
      for (quant::PackedStrips& dst : out) quant::pack_rows(dst, n0, count, rows.data(), k);
    }
  });
  return out;
}

// Generates projection `name` (n x k floats, row by row) and quantises it to every precision.
std::vector<quant::PackedStrips> pack_generated(const std::string& name, int64_t n, int64_t k,
                                                uint64_t seed,
                                                const std::vector<tb_prec>& precisions) {
  return pack_rows_of({{stream_seed(seed, name), 0, n}}, n, k, precisions);
}

// One strip entry of the layered model (synthetic.h LAYERED), without its precision suffix.
struct LayeredEntry {
  std::string name;  // "blk.3.attn_qkv", "lm_head"
  int64_t n = 0, k = 0;
  std::vector<RowSource> sources;             // one per part
  std::vector<artifact::FusedRange> ranges;   // fused entries only
  std::vector<std::string> tensors;           // "synthetic.blk.3.attn_q", ...
};

std::vector<LayeredEntry> layered_entries(const Options& options) {
  std::map<std::string, Projection> shapes;
  for (const Projection& p : projections(options.shape, options.include_lm_head)) shapes.emplace(p.name, p);
  std::vector<std::pair<int, std::string>> order;  // (layer, projection); layer -1: lm_head
  for (int layer = 0; layer < options.layers; ++layer) {
    for (const char* proj : kLayerProjections) order.emplace_back(layer, proj);
  }
  if (options.include_lm_head) order.emplace_back(-1, "lm_head");
  std::vector<LayeredEntry> out;
  for (const auto& [layer, proj] : order) {
    LayeredEntry e;
    e.name = layer_name(layer, proj);
    e.n = shapes.at(proj).n;
    e.k = shapes.at(proj).k;
    std::vector<std::string> parts = fused_parts(proj);
    if (parts.empty()) parts = {proj};
    int64_t at = 0;
    for (const std::string& part : parts) {
      const std::string part_name = layer_name(layer, part);
      const int64_t pn = shapes.at(part).n;
      e.sources.push_back({stream_seed(options.seed, part_name), at, at + pn});
      if (parts.size() > 1) e.ranges.push_back({part_name, at, at + pn});
      e.tensors.push_back("synthetic." + part_name);
      at += pn;
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::string layer_name(int layer, const std::string& projection) {
  return layer < 0 ? projection : "blk." + std::to_string(layer) + "." + projection;
}

std::vector<std::string> fused_parts(const std::string& projection) {
  if (projection == "attn_qkv") return {"attn_q", "attn_k", "attn_v"};
  if (projection == "ffn_gate_up") return {"ffn_gate", "ffn_up"};
  return {};
}

void fill_uniform(float* out, int64_t count, uint64_t seed, float scale) {
  uint64_t state = seed;
  for (int64_t i = 0; i < count; ++i) {
    state += kGolden;
    const uint64_t z = mix64(state);
    const uint32_t sel = static_cast<uint32_t>(z & 0xff);
    // u in [-2^23, 2^23): f = u * 2^-23 is exact and uniform in [-1, 1).
    const int32_t u = static_cast<int32_t>(z >> 40) - (1 << 23);
    const float f = static_cast<float>(u) * 0x1p-23f;
    float v;
    if (sel == 0) {
      v = 0.0f;
    } else if (sel == 1) {
      v = -0.0f;
    } else if (sel == 2) {
      v = f * 0x1p-130f;  // subnormal or tiny: its products with activations are subnormal
    } else {
      v = f * scale;
      if (v >= scale) v = std::nextafter(scale, 0.0f);  // rounding must not reach +scale
    }
    out[i] = v;
  }
}

std::vector<Projection> projections(const ModelShape& s, bool include_lm_head) {
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  std::vector<Projection> p = {
      {"attn_q", s.hidden, q},
      {"attn_k", s.hidden, kv},
      {"attn_v", s.hidden, kv},
      {"attn_o", q, s.hidden},
      {"attn_qkv", s.hidden, q + 2 * kv},
      {"ffn_gate", s.hidden, s.intermediate},
      {"ffn_up", s.hidden, s.intermediate},
      {"ffn_gate_up", s.hidden, 2 * s.intermediate},
      {"ffn_down", s.intermediate, s.hidden},
  };
  if (include_lm_head) p.push_back({"lm_head", s.hidden, s.vocab});
  return p;
}

Status write_model(const std::string& path, const Options& options) {
  TB_RETURN_IF_ERROR(check_options(options));
  auto out = artifact::OutputFile::open(path);
  if (!out.ok()) return out.status();
  return write_model(out.value(), options);
}

Status write_model(artifact::OutputFile& out, const Options& options) {
  TB_RETURN_IF_ERROR(check_options(options));
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  std::string precs;
  for (tb_prec p : options.precisions) precs += std::string(precs.empty() ? "" : ", ") + prec_name(p);

  const ModelShape& s = options.shape;
  struct Mat {
    const char* name;
    int64_t rows, cols;
    float scale;
  };
  const Mat mats[] = {
      {"ssm_beta", s.gdn_value_heads, s.gemv_cols, kWeightScale},
      {"ssm_a", s.gdn_value_heads, s.gemv_cols, kWeightScale},
      {"gdn.state", s.gdn_value_heads * s.gdn_dim, s.gdn_dim, kInputScale},
      {"gdn.q", s.gdn_key_heads, s.gdn_dim, kInputScale},
      {"gdn.k", s.gdn_key_heads, s.gdn_dim, kInputScale},
      {"gdn.v", s.gdn_value_heads, s.gdn_dim, kInputScale},
      {"gdn.g", 1, s.gdn_value_heads, kInputScale},
      {"gdn.beta", 1, s.gdn_value_heads, kInputScale},
  };

  // Every entry is declared first (the streaming writer lays the file out from them), then
  // written as it is generated: one projection's strip sets are in memory at a time, plus the
  // parts of the fused entries until those are built.
  // The layered model instead declares and generates its per-layer entries (layered_entries).
  const std::vector<LayeredEntry> layered = options.layers > 0 ? layered_entries(options) : std::vector<LayeredEntry>{};
  const std::vector<Projection> projs =
      options.layers > 0 ? std::vector<Projection>{} : projections(options.shape, options.include_lm_head);
  std::map<std::string, int64_t> outputs;  // projection -> N
  for (const Projection& proj : projs) outputs[proj.name] = proj.n;
  std::vector<artifact::Entry> declared;
  for (const LayeredEntry& e : layered) {
    for (tb_prec p : options.precisions) {
      declared.push_back(artifact::declare_strips(e.name + "." + prec_name(p), p, e.n, e.k, e.ranges, e.tensors));
    }
  }
  for (const Projection& proj : projs) {
    const std::string name = proj.name;
    const std::vector<std::string> fused = fused_parts(name);
    std::vector<artifact::FusedRange> ranges;
    int64_t at = 0;
    for (const std::string& part : fused) {
      ranges.push_back({part, at, at + outputs.at(part)});
      at += outputs.at(part);
    }
    const std::vector<std::string> sources =
        fused.empty() ? std::vector<std::string>{"synthetic." + name} : fused;
    for (tb_prec p : options.precisions) {
      declared.push_back(artifact::declare_strips(name + "." + prec_name(p), p, proj.n, proj.k,
                                                  ranges, sources));
    }
  }
  for (const Mat& m : mats) {
    declared.push_back(artifact::declare_matrix(m.name, m.rows, m.cols,
                                                {std::string("synthetic.") + m.name}));
  }
  artifact::Provenance prov;
  prov.source_file = Format("synthetic:seed=%llu", static_cast<unsigned long long>(options.seed));
  prov.packer = "twinbit " TWINBIT_VERSION;
  auto writer = artifact::StreamWriter::begin(out, prov, std::move(declared));
  if (!writer.ok()) return writer.status();
  artifact::StreamWriter& w = *writer.value();

  for (const LayeredEntry& e : layered) {
    say(Format("packing %s (%lld x %lld) as %s", e.name.c_str(), (ll)e.n, (ll)e.k, precs.c_str()));
    for (const quant::PackedStrips& ps : pack_rows_of(e.sources, e.n, e.k, options.precisions)) {
      TB_RETURN_IF_ERROR(w.add_strips(e.name + "." + prec_name(ps.prec), ps.codes, ps.scales));
    }
  }
  std::map<std::string, std::vector<quant::PackedStrips>> parts;  // kept for the fused entries
  for (size_t pi = 0; pi < projs.size(); ++pi) {
    const Projection& proj = projs[pi];
    const std::string name = proj.name;
    const std::vector<std::string> fused = fused_parts(name);
    std::vector<quant::PackedStrips> packed;
    if (fused.empty()) {
      say(Format("packing %s (%lld x %lld) as %s", proj.name, (ll)proj.n, (ll)proj.k,
                 precs.c_str()));
      packed = pack_generated(name, proj.n, proj.k, options.seed, options.precisions);
    } else {
      say(Format("fusing %s (%lld x %lld) from its parts", proj.name, (ll)proj.n, (ll)proj.k));
      for (size_t i = 0; i < options.precisions.size(); ++i) {
        std::vector<const quant::PackedStrips*> ptrs;
        for (const std::string& part : fused) ptrs.push_back(&parts.at(part)[i]);
        auto cat = quant::concat_strips(ptrs);
        if (!cat.ok()) return cat.status();
        packed.push_back(std::move(cat).value());
      }
      for (const std::string& part : fused) parts.erase(part);
    }
    bool keep = false;
    for (const char* f : {"attn_qkv", "ffn_gate_up"}) {
      for (const std::string& part : fused_parts(f)) keep = keep || part == name;
    }
    for (const quant::PackedStrips& ps : packed) {
      TB_RETURN_IF_ERROR(w.add_strips(name + "." + prec_name(ps.prec), ps.codes, ps.scales));
    }
    if (keep) parts[name] = std::move(packed);
  }
  parts.clear();

  say("generating the f32 matrices (ssm_*, gdn.*)");
  for (const Mat& m : mats) {
    std::vector<float> data(static_cast<size_t>(m.rows * m.cols));
    const uint64_t base = stream_seed(options.seed, m.name);
    for (int64_t r = 0; r < m.rows; ++r) {
      fill_uniform(data.data() + r * m.cols, m.cols, row_seed(base, r), m.scale);
    }
    TB_RETURN_IF_ERROR(w.add_matrix(m.name, data));
  }
  say("writing the manifest of " + out.path());
  return w.finish();
}

}  // namespace twinbit::synthetic
