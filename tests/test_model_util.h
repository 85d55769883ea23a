// Shared by the layered-model and model-step tests: a synthetic model small enough for the
// scalar reference.
#pragma once

#include "artifacts/synthetic.h"

namespace twinbit::test {

// Small enough for the scalar reference; hidden 64, q 64, kv 32, intermediate 96, vocab 100
// (a ragged last strip).
inline synthetic::Options layered_options(int layers, bool lm_head) {
  synthetic::Options o;
  o.seed = 11;
  o.shape.hidden = 64;
  o.shape.intermediate = 96;
  o.shape.heads = 2;
  o.shape.kv_heads = 1;
  o.shape.head_dim = 32;
  o.shape.vocab = 100;
  o.shape.gdn_value_heads = 4;
  o.shape.gdn_key_heads = 2;
  o.shape.gdn_dim = 32;
  o.shape.gemv_cols = 40;
  o.layers = layers;
  o.include_lm_head = lm_head;
  return o;
}

}  // namespace twinbit::test
