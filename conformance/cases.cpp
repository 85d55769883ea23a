// The case list: the fixed sweep and the random part.
//
// Thinning the sweep. The full cross product M x N x K x prec x mode is 2520 gemm cases, most of
// them slow on a scalar reference. Bugs live in edges of one or two dimensions (a tail in N, a
// K that is not a multiple of 32, M = 33 across a 32-row tile), so the sweep covers every PAIR
// of values instead of every triple: for (M[i], N[j]) the K is K[(i + j + p) % 5] where p indexes
// (prec, mode). Every (M, N) pair then runs at four different K, and every (M, K) and (N, K) pair
// occurs for each (prec, mode) - 504 cases instead of 2520.
// The exhaustive sweep is that cross product itself (and the K % 32 != 0 one), for the slow runs.
//
// The model sweep: the target model's projection shapes (Qwen3-VL-2B: K 2048 with N 1024, 2048,
// 4096, 6144, 12288 and the 151936-row vocabulary, K 6144 with N 2048) at decode (M = 1) and a
// prefill batch (M = 32). A backend tuned for exactly these shapes takes paths the edge sweep never
// reaches. The full sweep has every shape x M x (prec, mode); the quick sweep one (prec, mode) per
// shape and M, rotated (13 cases: not the vocabulary at M = 32). Large ones are checked on sampled columns (SuiteOptions::reference_budget).
#include <array>
#include <set>

#include "conformance/conformance.h"
#include "conformance/inputs.h"
#include "core/op_checks.h"

namespace twinbit::conformance {

namespace {
std::string shape_name(const Case& c) {
  switch (c.kind) {
    case CaseKind::gemm:
    case CaseKind::batch_invariance:
      return Format("%s_%s_%s_M%lld_N%lld_K%lld", c.kind == CaseKind::gemm ? "gemm" : "batch",
                    prec_name(c.prec), act_mode_name(c.mode), (long long)c.m, (long long)c.n, (long long)c.k);
    case CaseKind::gemv_f32:
    case CaseKind::gemv_f32_pair:
      return Format("%s_N%lld_K%lld", c.kind == CaseKind::gemv_f32 ? "gemv_f32" : "gemv_f32_pair",
                    (long long)c.n, (long long)c.k);
    case CaseKind::gdn_delta:
      return Format("gdn_delta_VH%lld_KH%lld_KD%lld_VD%lld", (long long)c.vh, (long long)c.kh,
                    (long long)c.kd, (long long)c.vd);
    case CaseKind::quantize_i8:
      return Format("quantize_i8_M%lld_K%lld", (long long)c.m, (long long)c.k);
  }
  return "unknown";
}
}  // namespace

std::string Case::name() const {
  return shape_name(*this) + (inputs == InputProfile::subnormal ? "_subnormal" : "");
}

Case gemm_case(tb_prec prec, tb_act_mode mode, int64_t m, int64_t n, int64_t k) {
  Case c;
  c.kind = CaseKind::gemm;
  c.prec = prec;
  c.mode = mode;
  c.m = m;
  c.n = n;
  c.k = k;
  return c;
}

Case batch_case(tb_prec prec, tb_act_mode mode, int64_t m, int64_t n, int64_t k) {
  Case c = gemm_case(prec, mode, m, n, k);
  c.kind = CaseKind::batch_invariance;
  return c;
}

Case gemv_case(bool pair, int64_t rows, int64_t cols) {
  Case c;
  c.kind = pair ? CaseKind::gemv_f32_pair : CaseKind::gemv_f32;
  c.n = rows;
  c.k = cols;
  return c;
}

Case gdn_case(int64_t vh, int64_t kh, int64_t kd, int64_t vd) {
  Case c;
  c.kind = CaseKind::gdn_delta;
  c.vh = vh;
  c.kh = kh;
  c.kd = kd;
  c.vd = vd;
  return c;
}

Case quantize_case(int64_t m, int64_t k) {
  Case c;
  c.kind = CaseKind::quantize_i8;
  c.m = m;
  c.k = k;
  return c;
}

Case with_inputs(Case c, InputProfile inputs) {
  c.inputs = inputs;
  return c;
}

namespace {

constexpr tb_prec kPrecs[2] = {TB_PREC_Q8, TB_PREC_Q4};
constexpr tb_act_mode kModes[2] = {TB_ACT_F32, TB_ACT_I8};

class CaseList {
 public:
  bool add(Case c) {
    if (!names_.insert(c.name()).second) return false;
    cases_.push_back(c);
    return true;
  }
  std::vector<Case> take() { return std::move(cases_); }

 private:
  std::set<std::string> names_;
  std::vector<Case> cases_;
};

// gemm over (prec, mode) x M x N, K rotated so that pairs are covered (see the file comment).
void add_rotated(CaseList& out, const std::vector<int64_t>& ms, const std::vector<int64_t>& ns,
                 const std::vector<int64_t>& ks, bool batch) {
  for (int p = 0; p < 4; ++p) {
    for (size_t i = 0; i < ms.size(); ++i) {
      for (size_t j = 0; j < ns.size(); ++j) {
        const int64_t k = ks[(i + j + static_cast<size_t>(p)) % ks.size()];
        const tb_prec prec = kPrecs[p / 2];
        const tb_act_mode mode = kModes[p % 2];
        out.add(batch ? batch_case(prec, mode, ms[i], ns[j], k) : gemm_case(prec, mode, ms[i], ns[j], k));
      }
    }
  }
}

constexpr std::array<std::array<int64_t, 2>, 7> kModelShapes = {{
    {1024, 2048}, {2048, 2048}, {4096, 2048}, {6144, 2048}, {12288, 2048}, {151936, 2048},
    {2048, 6144}}};  // {N, K}

void add_model_sweep(CaseList& out, bool quick) {
  for (size_t s = 0; s < kModelShapes.size(); ++s) {
    const auto [n, k] = kModelShapes[s];
    for (int64_t mi = 0; mi < 2; ++mi) {
      const int64_t m = mi == 0 ? 1 : 32;
      // The quick form leaves out the prefill of the vocabulary: drawing its 311 M weight codes
      // costs seconds per CI instance, and its decode case already runs the plan of that N.
      if (quick && n > 100000 && m > 1) continue;
      // Quick: (prec, mode) rotates with the shape, offset by M, so that each M meets both modes
      // (a backend that takes only i8 still runs decode and prefill shapes).
      const size_t pick = (s + 3 * static_cast<size_t>(mi)) % 4;
      for (size_t p = 0; p < 4; ++p) {
        if (quick && p != pick) continue;
        out.add(gemm_case(kPrecs[p / 2], kModes[p % 2], m, n, k));
      }
    }
  }
}

// The subnormal family (InputProfile::subnormal): gemm in F32 mode over M x N with K rotated (one
// group, a ragged tail, the model's width), gemv_f32 / gemv_f32_pair and gdn_delta. In I8 mode the
// gemm takes quantised codes; its subnormal scales are the standard inputs' tiny groups already.
void add_subnormal_family(CaseList& out) {
  const std::vector<int64_t> ms = {1, 3, 33}, ns = {1, 33, 257}, ks = {32, 100, 2048};
  for (int p = 0; p < 2; ++p) {
    for (size_t i = 0; i < ms.size(); ++i) {
      for (size_t j = 0; j < ns.size(); ++j) {
        const int64_t k = ks[(i + j + static_cast<size_t>(p)) % ks.size()];
        out.add(with_inputs(gemm_case(kPrecs[p], TB_ACT_F32, ms[i], ns[j], k), InputProfile::subnormal));
      }
    }
  }
  for (int64_t rows : {1, 33, 257}) {
    for (int64_t cols : {33, 2048}) {
      out.add(with_inputs(gemv_case(false, rows, cols), InputProfile::subnormal));
      out.add(with_inputs(gemv_case(true, rows, cols), InputProfile::subnormal));
    }
  }
  for (auto [vh, kh, kd, vd] : std::initializer_list<std::array<int64_t, 4>>{
           {16, 16, 128, 128}, {3, 3, 17, 33}, {2, 1, 3, 5}}) {
    out.add(with_inputs(gdn_case(vh, kh, kd, vd), InputProfile::subnormal));
  }
}

void add_full_sweep(CaseList& out, bool model_shapes) {
  // The backend issues' sweep: M around the row tiles, N around the 32-column strips and a
  // non-divisible large N, K from one group to the largest Qwen3-VL-2B projection input.
  add_rotated(out, {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 32, 33, 64},
              {1, 3, 31, 32, 33, 255, 256, 257, 1000}, {32, 64, 96, 2048, 6144}, false);
  // K % 32 != 0: the last group is partly padding (+0 activations, code 0 weights).
  add_rotated(out, {1, 3, 33}, {1, 31, 33, 257}, {1, 17, 31, 33, 63, 100, 1000, 2047, 2049}, false);
  // Split plans with uneven slices (ngroups not a multiple of nsplit; B = ceil(Np/1024) > 1).
  for (int p = 0; p < 4; ++p) {
    const tb_prec prec = kPrecs[p / 2];
    const tb_act_mode mode = kModes[p % 2];
    out.add(gemm_case(prec, mode, 1, 1100, 9000));   // B 2, 282 groups in 70 slices (cap)
    out.add(gemm_case(prec, mode, 3, 5000, 6176));   // B 5, 193 groups in 48 slices (cap)
    out.add(gemm_case(prec, mode, 4, 33, 17040));    // B 1, 533 groups in 133 slices (cap)
    out.add(gemm_case(prec, mode, 2, 11300, 6144));  // B 12, 192 groups in 43 slices (ceil(512/B))
  }
  if (model_shapes) add_model_sweep(out, false);
  add_rotated(out, {2, 9, 33, 64, 70}, {3, 33, 257, 1000}, {32, 96, 100, 2048}, true);
  for (int64_t rows : {1, 3, 31, 32, 33, 257}) {
    for (int64_t cols : {1, 31, 32, 33, 100, 2048}) {
      out.add(gemv_case(false, rows, cols));
      out.add(gemv_case(true, rows, cols));
    }
  }
  // Qwen3-VL-2B's linear attention: 16 key heads, 16 or 32 value heads, kd = vd = 128.
  for (auto [vh, kh, kd, vd] : std::initializer_list<std::array<int64_t, 4>>{
           {16, 16, 128, 128}, {32, 16, 128, 128}, {1, 1, 1, 1}, {2, 1, 3, 5}, {4, 2, 64, 32},
           {3, 3, 17, 33}, {8, 4, 128, 64}, {1, 1, 32, 128}, {2, 2, 128, 1}}) {
    out.add(gdn_case(vh, kh, kd, vd));
  }
  // The I8 activation quantiser: one group, ragged K, the model's widths, rows around the tiles.
  for (int64_t m : {1, 3, 33, 64}) {
    for (int64_t k : {1, 17, 32, 33, 100, 2048, 2049, 6144}) out.add(quantize_case(m, k));
  }
  add_subnormal_family(out);
}

// Every (M, N, K) of the backend issues' sweep for every (prec, mode), and of the K % 32 != 0 sweep
// (no thinning), then everything of the full sweep: the "slow" instances of each backend run it.
void add_exhaustive_sweep(CaseList& out, bool model_shapes) {
  const std::vector<int64_t> ms = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 32, 33, 64};
  auto add_product = [&](const std::vector<int64_t>& ns, const std::vector<int64_t>& ks) {
    for (int p = 0; p < 4; ++p) {
      for (int64_t k : ks) {
        for (int64_t n : ns) {
          for (int64_t m : ms) out.add(gemm_case(kPrecs[p / 2], kModes[p % 2], m, n, k));
        }
      }
    }
  };
  add_product({1, 3, 31, 32, 33, 255, 256, 257, 1000}, {32, 64, 96, 2048, 6144});
  add_product({1, 31, 33, 257}, {1, 17, 31, 33, 63, 100, 1000, 2047, 2049});
  add_full_sweep(out, model_shapes);  // names already present are skipped
}

void add_quick_sweep(CaseList& out, bool model_shapes) {
  add_rotated(out, {1, 3, 33}, {1, 33, 257}, {32, 100, 96}, false);
  for (int p = 0; p < 4; ++p) out.add(batch_case(kPrecs[p / 2], kModes[p % 2], 9, 33, 96));
  out.add(gemv_case(false, 33, 100));
  out.add(gemv_case(false, 1, 2048));
  out.add(gemv_case(true, 31, 33));
  out.add(gemv_case(true, 257, 1));
  out.add(gdn_case(2, 1, 128, 128));
  out.add(gdn_case(3, 3, 17, 33));
  out.add(quantize_case(1, 100));
  out.add(quantize_case(3, 2049));
  // Four of the subnormal family: without them a backend that flushes subnormals in F32 mode
  // passes the quick sweep.
  out.add(with_inputs(gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96), InputProfile::subnormal));
  out.add(with_inputs(gemm_case(TB_PREC_Q4, TB_ACT_F32, 1, 257, 100), InputProfile::subnormal));
  out.add(with_inputs(gemv_case(false, 33, 100), InputProfile::subnormal));
  out.add(with_inputs(gdn_case(3, 3, 17, 33), InputProfile::subnormal));
  if (model_shapes) add_model_sweep(out, true);
}

// One random case; the shapes lean towards the awkward ones. Generator 1 drew K % 32 != 0 for about
// 80% of the gemm cases, so a backend that refuses ragged K (the NPU layout's) ran a fifth of them;
// generator 2 first flips a coin and on heads draws a whole number of groups, so at least half of
// the random gemm cases run on such a backend.
Case random_case(Rng& r, int generator) {
  const int64_t op = r.range(0, 99);
  if (op < 8) {
    const int64_t kh = r.range(1, 4);
    return gdn_case(kh * r.range(1, 4), kh, r.range(1, 160), r.range(1, 160));
  }
  if (op < 14) return gemv_case(false, r.range(1, 600), r.range(1, 3000));
  if (op < 20) return gemv_case(true, r.range(1, 600), r.range(1, 3000));
  const tb_prec prec = kPrecs[r.range(0, 1)];
  const tb_act_mode mode = kModes[r.range(0, 1)];
  const int64_t m = r.chance(600) ? r.range(1, 9) : r.range(10, 70);
  int64_t n;
  const int64_t pick_n = r.range(0, 9);
  if (pick_n < 7) {
    do { n = r.range(1, 1100); } while (n % 32 == 0);  // a tail strip
  } else if (pick_n < 9) {
    n = 32 * r.range(1, 32);
  } else {
    n = r.range(1025, 5000);
  }
  int64_t k;
  const int64_t pick_k = r.range(0, 9);
  if (generator >= 2 && r.chance(500)) {
    k = 32 * (r.chance(900) ? r.range(1, 96) : r.range(257, 375));  // up to 3072, or past 8192
  } else if (pick_k < 2) {
    k = r.range(1, 32);  // one group
  } else if (pick_k < 5) {
    do { k = r.range(33, 3000); } while (k % 32 == 0);
  } else if (pick_k < 7) {
    k = 32 * r.range(2, 128);
  } else if (pick_k < 9) {
    k = r.range(33, 200);
  } else {
    k = r.range(8193, 12000);  // more than 8192: several native blocks on the NPU layout
  }
  // Keep one case under ~1.5e8 multiply-adds: a slow backend must still finish in seconds.
  int64_t mm = m;
  while (mm > 1 && mm * n * k > 150'000'000) mm = (mm + 1) / 2;
  if (op < 28) return batch_case(prec, mode, mm < 2 ? 2 : mm, n, k);
  return gemm_case(prec, mode, mm, n, k);
}

}  // namespace

std::vector<Case> generate_cases(const CaseOptions& o) {
  CaseList out;
  if (o.sweep == Sweep::full) add_full_sweep(out, o.model_shapes);
  if (o.sweep == Sweep::quick) add_quick_sweep(out, o.model_shapes);
  if (o.sweep == Sweep::exhaustive) add_exhaustive_sweep(out, o.model_shapes);
  Rng r(case_seed(o.seed, "random-shapes"));
  for (int i = 0, tries = 0; i < o.random_cases && tries < 100 * (o.random_cases + 1); ++tries) {
    Case c = random_case(r, o.generator);
    c.random = true;
    if (out.add(c)) ++i;
  }
  return out.take();
}

}  // namespace twinbit::conformance
