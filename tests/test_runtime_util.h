// Shared pieces of the runtime tests: one small synthetic artifact per test process, and the
// scalar reference of a whole projection to compare every placement with.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/synthetic.h"
#include "backends/cpu/cpu_isa.h"
#include "core/numerics.h"
#include "core/reference.h"
#include "core/runtime/runtime.h"
#include "test_artifact_util.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {

// The synthetic model on a shape small enough for the scalar reference, big enough that the
// threshold splits it: lm_head (256 -> 1000, ragged last strip) and ffn_gate_up (256 -> 1024)
// reach 2*M*N*K >= 1e7 at M = 32, and nothing does at M = 1.
inline const std::string& runtime_test_artifact() {
  static testart::TempDir dir;
  static const std::string path = [] {
    synthetic::Options o;
    o.seed = 7;
    o.shape.hidden = 256;
    o.shape.intermediate = 512;
    o.shape.heads = 4;
    o.shape.kv_heads = 2;
    o.shape.head_dim = 64;
    o.shape.vocab = 1000;
    o.shape.gdn_value_heads = 4;
    o.shape.gdn_key_heads = 2;
    o.shape.gdn_dim = 32;
    o.shape.gemv_cols = 40;
    const std::string p = dir.path + "/runtime.tbc";
    const Status s = synthetic::write_model(p, o);
    if (!s.ok()) throw std::runtime_error(s.to_string());
    return p;
  }();
  return path;
}

// The reference output y [m][n] of a whole entry for activations x [m][k].
inline std::vector<float> reference_gemm(const artifact::Artifact& art, const std::string& name,
                                         int64_t m, tb_act_mode mode, const std::vector<float>& x) {
  const artifact::Entry* e = art.find(name);
  const tb_strips w = art.view(*e).strips;
  std::vector<float> y(static_cast<size_t>(m * w.n));
  if (mode == TB_ACT_F32) {
    ref::gemm_f32(w, m, x.data(), w.k, y.data(), w.n);
  } else {
    const int64_t kp = pad32(w.k);
    std::vector<int8_t> xq(static_cast<size_t>(m * kp));
    std::vector<float> xd(static_cast<size_t>(m * kp / 32));
    ref::quantize_activations(m, w.k, x.data(), w.k, xq.data(), kp, xd.data(), kp / 32);
    ref::gemm_i8(w, m, xq.data(), kp, xd.data(), kp / 32, y.data(), w.n);
  }
  return y;
}

// The best instruction-set tag this CPU runs, as a cpu spec; "cpu,threads=2" when that is sse2
// (so the spec differs from "cpu,isa=sse2").
inline std::string best_cpu_spec() {
  const cpu::Isa best = cpu::runnable_isas().front();
  if (best == cpu::Isa::kSse2) return "cpu,threads=2";
  return std::string("cpu,isa=") + cpu::isa_name(best);
}

// Runs the entry through the runtime and checks the bits against the reference of the whole.
inline void check_runtime_bits(runtime::Runtime& rt, const std::string& entry, int64_t m, tb_act_mode mode,
                               uint64_t seed) {
  const artifact::Entry* e = rt.artifact().find(entry);
  REQUIRE(e != nullptr);
  const std::vector<float> x = random_activations(m * e->k, seed);
  const std::vector<float> want = reference_gemm(rt.artifact(), entry, m, mode, x);
  std::vector<float> got(want.size(), -1.0f);
  const Status s = rt.gemm(entry, m, mode, x.data(), e->k, got.data(), e->n);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  INFO(entry, " m=", m, " mode=", mode == TB_ACT_F32 ? "f32" : "i8");
  CHECK(first_difference(want.data(), got.data(), want.size()) == -1);
}

}  // namespace twinbit::test
