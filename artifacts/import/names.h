// From a model file's tensor names to twinbit's entries: which tensor becomes which projection of
// which layer, which are fused, and which are left out (and why).
//
// ENTRIES follow the runtime's per-layer scheme (the pipeline appends the precision, ".q8"/".q4"):
//   blk.N.attn_q  blk.N.attn_k  blk.N.attn_v  blk.N.attn_o
//   blk.N.ffn_gate  blk.N.ffn_up  blk.N.ffn_down      lm_head
// and, on request, the fused entries (rows of the parts stacked in this order):
//   blk.N.attn_qkv = attn_q, attn_k, attn_v          blk.N.ffn_gate_up = ffn_gate, ffn_up
//
// SOURCE NAMES recognised without a name map (N: decimal, no leading zeros):
//   llama.cpp (GGUF)                 Hugging Face (safetensors)
//   blk.N.attn_q.weight              model.layers.N.self_attn.q_proj.weight    -> blk.N.attn_q
//   blk.N.attn_k.weight              model.layers.N.self_attn.k_proj.weight    -> blk.N.attn_k
//   blk.N.attn_v.weight              model.layers.N.self_attn.v_proj.weight    -> blk.N.attn_v
//   blk.N.attn_output.weight         model.layers.N.self_attn.o_proj.weight    -> blk.N.attn_o
//   blk.N.ffn_gate.weight            model.layers.N.mlp.gate_proj.weight       -> blk.N.ffn_gate
//   blk.N.ffn_up.weight              model.layers.N.mlp.up_proj.weight         -> blk.N.ffn_up
//   blk.N.ffn_down.weight            model.layers.N.mlp.down_proj.weight       -> blk.N.ffn_down
//   output.weight                    lm_head.weight                            -> lm_head
//   token_embd.weight                model.embed_tokens.weight                 (the embedding)
// Multimodal checkpoints prefix the language model: "model.language_model.layers.N..." and
// "model.language_model.embed_tokens.weight" (Qwen-VL style), "language_model.model.layers.N..."
// and "language_model.lm_head.weight" (LLaVA style) are read as the names above.
//
// TIED EMBEDDINGS. A model with an embedding table but no lm_head / output tensor ties them: the
// plan's lm_head is then the embedding ({vocab, hidden} = {N, K}, as an lm_head is stored), marked
// `from_embedding`, and ImportPlan::notes says so.
//
// A NAME MAP (a text file) overrides or adds mappings, one rule a line:
//   SOURCE_NAME_OR_GLOB=ENTRY        # comment
// '#' starts a comment; blank lines are ignored; spaces around the name and the entry are
// trimmed. In the glob, '*' matches any run of characters (also none) and '?' one character; every
// '*' in ENTRY is replaced by the text the '*' at the same position in the glob matched, so
//   transformer.h.*.attn.q.weight=blk.*.attn_q
// maps a whole family. ENTRY must be an entry of the scheme above (not a fused one), or '-' to
// skip the tensor. Rules are tried in file order before the built-in names; the first that
// matches decides. A malformed line is an error quoting the file, the line number and its text.
//
// CHECKS (INVALID_ARGUMENT naming the tensors and their dims): every mapped tensor is 2-D
// {N, K} of an importable type; no two tensors map to one entry; in a layer, attn_q/k/v share K,
// attn_o's N is attn_q's K, ffn_gate and ffn_up have one shape, ffn_down's K is their N; lm_head's
// K is the layers' hidden size (attn_q's K).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/import/tensor_source.h"
#include <twinbit/status.hpp>

namespace twinbit::import {

// One rule of a name map.
struct NameRule {
  std::string glob;   // source tensor name or glob
  std::string entry;  // "blk.*.attn_q", "lm_head", or "-" (skip)
  int line = 0;       // in the name-map file, for messages
  std::string source; // the file
};

// Parses a name map's text; `source` names it in messages.
Result<std::vector<NameRule>> parse_name_map(std::string_view text, const std::string& source);
// Reads and parses a name-map file (at most 1 MiB).
Result<std::vector<NameRule>> load_name_map(const std::string& path);

// Whether `name` matches `glob` ('*', '?'); the texts the '*'s matched go to `stars`.
bool glob_match(std::string_view glob, std::string_view name, std::vector<std::string>* stars = nullptr);

struct NameOptions {
  bool fuse_qkv = false;
  bool fuse_gate_up = false;
  std::vector<NameRule> rules;  // a name map; tried first
};

// An unfused entry: one source tensor.
struct PlannedEntry {
  std::string name;   // "blk.3.attn_q", "lm_head"
  std::string role;   // "attn_q" ... "ffn_down", "lm_head"
  int64_t layer = -1; // -1 for lm_head
  size_t tensor = 0;  // index into the TensorFile's tensors()
  int64_t n = 0, k = 0;  // outputs (rows), inputs (row length)
  bool from_embedding = false;  // a tied lm_head
};

// A fused entry: its parts' rows stacked in order.
struct FusionGroup {
  std::string name;  // "blk.3.attn_qkv", "blk.3.ffn_gate_up"
  std::string role;  // "attn_qkv", "ffn_gate_up"
  int64_t layer = 0;
  std::vector<size_t> parts;  // indices into ImportPlan::entries
  int64_t n = 0, k = 0;       // n = sum of the parts' n
};

// A tensor the artifact will not hold.
struct SkippedTensor {
  size_t tensor = 0;
  std::string name;
  uint64_t bytes = 0;
  std::string reason;  // "norm", "bias", "embedding (the model has an lm_head)", ...
};

struct ImportPlan {
  std::vector<PlannedEntry> entries;  // by layer, then attn_q k v o, ffn_gate up down; lm_head last
  std::vector<FusionGroup> fused;     // by layer; qkv before gate_up
  std::vector<SkippedTensor> skipped; // in the file's tensor order
  std::vector<std::string> notes;     // tied embeddings, layers that could not be fused ...
};

Result<ImportPlan> plan_names(const std::vector<SourceTensor>& tensors, const NameOptions& options);
inline Result<ImportPlan> plan_names(const TensorFile& file, const NameOptions& options) {
  return plan_names(file.tensors(), options);
}

}  // namespace twinbit::import
