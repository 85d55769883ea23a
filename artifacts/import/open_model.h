// Opening a model for import: the reader its kind calls for (GGUF, a safetensors file or shard
// folder), the name planner (names.h) with the fusions asked for and a name map, and the jobs the
// import pipeline (importer.h) makes of the plan.
//
// JOBS. Every planned projection becomes a one-tensor job named per the per-layer scheme
// ("blk.0.attn_q"; the pipeline appends the precision: "blk.0.attn_q.q8"), in the plan's order.
// Each fusion group then becomes a job of its parts' tensors, the parts named by their roles
// ("attn_q", "attn_k", "attn_v"): the artifact holds the unfused and the fused entries, as the
// synthetic model does; the runtime's step uses the fused ones, and a single projection can still
// be run or checked alone. The plan's skipped tensors (norms, biases, an embedding the model does
// not tie) become the summary's skip notes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "artifacts/import/importer.h"
#include "artifacts/import/model_kind.h"
#include "artifacts/import/names.h"
#include "artifacts/import/tensor_source.h"
#include <twinbit/status.hpp>

namespace twinbit::import {

struct OpenedModel {
  std::unique_ptr<TensorFile> file;
  std::vector<ImportJob> jobs;
  std::vector<SkipNote> skipped;
  std::vector<std::string> notes;  // the planner's: tied embeddings, layers left unfused
};

struct OpenModelOptions {
  bool fuse_qkv = false;
  bool fuse_gate_up = false;
  std::string name_map;  // a name-map file; empty: the built-in names only
};

// The jobs and skip notes of a plan (see JOBS above).
OpenedModel jobs_from_plan(const ImportPlan& plan);

// Opens `path` as `kind` and plans it. The reader's, the name map's and the planner's errors as
// they are (each names the file or the tensors).
Result<OpenedModel> open_model(const std::string& path, ModelKind kind,
                               const OpenModelOptions& options);

}  // namespace twinbit::import
