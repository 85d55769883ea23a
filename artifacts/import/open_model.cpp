// Opening a model for import and making the pipeline's jobs of its plan (open_model.h).
#include "artifacts/import/open_model.h"

#include "artifacts/import/gguf_file.h"
#include "artifacts/import/safetensors_file.h"

namespace twinbit::import {

OpenedModel jobs_from_plan(const ImportPlan& plan) {
  OpenedModel m;
  for (const PlannedEntry& e : plan.entries) m.jobs.push_back(ImportJob{e.name, {e.tensor}, {}});
  for (const FusionGroup& g : plan.fused) {
    ImportJob job{g.name, {}, {}};
    for (size_t part : g.parts) {
      job.tensors.push_back(plan.entries.at(part).tensor);
      job.parts.push_back(plan.entries.at(part).role);
    }
    m.jobs.push_back(std::move(job));
  }
  for (const SkippedTensor& k : plan.skipped) {
    m.skipped.push_back(SkipNote{k.name, k.bytes, k.reason});
  }
  m.notes = plan.notes;
  return m;
}

Result<OpenedModel> open_model(const std::string& path, ModelKind kind,
                               const OpenModelOptions& options) {
  auto file = kind == ModelKind::gguf ? open_gguf(path) : open_safetensors(path);
  if (!file.ok()) return file.status();
  NameOptions names;
  names.fuse_qkv = options.fuse_qkv;
  names.fuse_gate_up = options.fuse_gate_up;
  if (!options.name_map.empty()) {
    auto rules = load_name_map(options.name_map);
    if (!rules.ok()) return rules.status();
    names.rules = std::move(rules).value();
  }
  auto plan = plan_names(**file, names);
  if (!plan.ok()) return plan.status();
  OpenedModel m = jobs_from_plan(*plan);
  m.file = std::move(file).value();
  return m;
}

}  // namespace twinbit::import
