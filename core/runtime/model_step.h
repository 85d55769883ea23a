// The model step: what one decode step (M = 1) or one prefill step (M = 32 tokens) of a model runs
// through the runtime - every projection once, in the model's order - with deterministic inputs
// and one hash of every output, so that two placements of the same step can be compared by a
// single number (docs/RUNTIME.md "run-model").
//
// THE PROJECTIONS of a step, at one precision (artifacts/synthetic.h names them):
//   layered artifact (blk.0.attn_qkv.<prec> present): per layer L = 0, 1, ... while
//     blk.L.attn_qkv.<prec> exists: blk.L.attn_qkv, blk.L.attn_o, blk.L.ffn_gate_up,
//     blk.L.ffn_down; then lm_head.<prec> if the artifact has it.
//   single-layer artifact: attn_qkv, attn_o, ffn_gate_up, ffn_down, then lm_head if present.
// Fused entries (qkv, gate_up) are one call each: the runtime writes all their columns, and their
// FusedRanges only name the parts.
//
// INPUTS are not chained: each projection gets its own finite activations x [M][K], from
// synthetic::fill_uniform keyed by the entry's name and M, the same on every machine. A real
// model's outputs would feed the next layer; here they are only hashed (NaN bits are outside the
// numerics contract, and finite inputs keep every output inside it).
//
// THE HASH of a step is xxh64 (seed 0) over every output y [M][N] (row-major, floats as stored in
// memory, little-endian on every supported host) in step order, as one stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include <twinbit/backend.h>
#include "core/runtime/runtime.h"
#include <twinbit/status.hpp>

namespace twinbit::runtime {

struct StepProjection {
  std::string entry;          // "blk.3.ffn_down.q8"
  int64_t k = 0, n = 0;       // K inputs, N outputs
  uint64_t weight_bytes = 0;  // its payloads (codes and scales): what a step reads of it
};

struct ModelStep {
  tb_prec prec = TB_PREC_Q8;
  int layers = 0;  // blocks found; 0 with the single-layer artifact's names
  std::vector<StepProjection> projections;
  uint64_t weight_bytes() const;
};

// The step of `art` at `prec`. INVALID_ARGUMENT naming the artifact and the missing entry when a
// layer lacks one of its four projections, or when the artifact has neither naming scheme at
// that precision; also when an entry of the step is not a strip set of that precision.
Result<ModelStep> model_step(const artifact::Artifact& art, tb_prec prec);

// x [m][k] of one projection: fill_uniform (scale 1) keyed by the entry name and m.
std::vector<float> step_activations(const std::string& entry, int64_t m, int64_t k);

// The inputs and outputs of one step at M rows: the activations are made once; every run
// overwrites the outputs. Not thread-safe (one step at a time per object).
class StepBuffers {
 public:
  StepBuffers(const ModelStep& step, int64_t m);
  // Host bytes a StepBuffers of this step and M holds (to check before making one).
  static uint64_t bytes(const ModelStep& step, int64_t m);

  int64_t m() const { return m_; }
  const ModelStep& step() const { return *step_; }
  // Sets every output to a NaN pattern, so that a projection that wrote nothing cannot pass with
  // an earlier run's outputs. Call it before run(), outside the time measured.
  void poison();
  // One Runtime::gemm per projection, in step order; the first error stops the step and is
  // returned with the entry named.
  Status run(Runtime& rt, tb_act_mode mode);
  // xxh64 of every output in order (the header's THE HASH).
  uint64_t hash() const;

  const std::vector<float>& input(size_t projection) const { return x_[projection]; }
  const std::vector<float>& output(size_t projection) const { return y_[projection]; }

 private:
  const ModelStep* step_;
  int64_t m_;
  std::vector<std::vector<float>> x_, y_;
};

}  // namespace twinbit::runtime
