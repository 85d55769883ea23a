// A synthetic model with the projection shapes of Qwen3-VL-2B's language model, deterministic
// from a seed: what `twinbit demo`, the tests and the benchmarks run on when no real model is
// at hand.
//
// Entries (each projection in q8 and q4; name = "<projection>.<prec>"):
//   attn_q  2048 -> 2048    attn_k 2048 -> 1024    attn_v 2048 -> 1024   attn_o 2048 -> 2048
//   attn_qkv 2048 -> 4096 (fused: ranges attn_q, attn_k, attn_v; same codes as the parts)
//   ffn_gate 2048 -> 6144   ffn_up 2048 -> 6144    ffn_gate_up 2048 -> 12288 (fused)
//   ffn_down 6144 -> 2048   lm_head 2048 -> 151936
// plus f32 matrices for gemv_f32: "ssm_beta" and "ssm_a" (48 x 5120), and the gated-delta
// state and inputs (48 value heads, 16 key heads, kd = vd = 128): "gdn.state" [48*128][128],
// "gdn.q", "gdn.k" [16][128], "gdn.v" [48][128], "gdn.g", "gdn.beta" [1][48].
//
// LAYERED (Options::layers = N >= 1): the entries a model step runs, named per layer as the
// importers name a real model's tensors, then lm_head and the same f32 matrices:
//   blk.L.attn_qkv.<prec>     fused: ranges blk.L.attn_q, blk.L.attn_k, blk.L.attn_v
//   blk.L.attn_o.<prec>
//   blk.L.ffn_gate_up.<prec>  fused: ranges blk.L.ffn_gate, blk.L.ffn_up
//   blk.L.ffn_down.<prec>     for L = 0 .. N-1, in that order; then lm_head.<prec>
// No unfused q/k/v/gate/up entries: a step runs the fused ones. Each part's rows come from the
// stream of its own name (blk.L.attn_q, ...), so every layer's weights differ and a fused entry
// holds exactly the rows its parts would have on their own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit::synthetic {

struct Projection {
  const char* name;
  int64_t k, n;  // K inputs, N outputs
};

struct ModelShape {
  int64_t hidden = 2048, intermediate = 6144, heads = 16, kv_heads = 8, head_dim = 128;
  int64_t vocab = 151936;
  int64_t gdn_value_heads = 48, gdn_key_heads = 16, gdn_dim = 128, gemv_cols = 5120;
};

struct Options {
  uint64_t seed = 42;
  ModelShape shape;
  bool include_lm_head = true;
  std::vector<tb_prec> precisions = {TB_PREC_Q8, TB_PREC_Q4};
  // 0: the single-layer model named as above (what the demo and its caches use); 1 .. kMaxLayers:
  // the layered model.
  int layers = 0;
  // Called with a short line ("packing lm_head.q8 (151936 x 2048)") as work proceeds; may be empty.
  std::function<void(const std::string&)> progress;
};

constexpr int kMaxLayers = 512;

// The projections of one layer of a step, in step order (the fused ones), and their parts.
inline constexpr const char* kLayerProjections[] = {"attn_qkv", "attn_o", "ffn_gate_up", "ffn_down"};
// "blk.3.attn_qkv" (layer >= 0) or "attn_qkv" (layer < 0: the single-layer model's names).
std::string layer_name(int layer, const std::string& projection);
// Which projections a fused one concatenates, in column order ({} if not fused).
std::vector<std::string> fused_parts(const std::string& projection);

// The unfused and fused projections of the shape, in the order above.
std::vector<Projection> projections(const ModelShape& shape, bool include_lm_head);

// Generates and writes the artifact atomically.
Status write_model(const std::string& path, const Options& options);
// The same into an output opened (checked) before the minutes of generation.
Status write_model(artifact::OutputFile& out, const Options& options);

// Deterministic pseudo-random numbers (splitmix64): uniform floats in [-scale, scale) with a
// sprinkling of exact zeros, negative zeros and tiny (subnormal-product) values, so inputs
// exercise signed zeros and rounding. Same seed, same values, on every machine.
void fill_uniform(float* out, int64_t count, uint64_t seed, float scale);

}  // namespace twinbit::synthetic
