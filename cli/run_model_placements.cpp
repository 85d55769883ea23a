// The placements of `twinbit run-model`, the floors and the percentiles
// (cli/run_model_placements.h).
#include "cli/run_model_placements.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_isa.h"
#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "core/registry.h"

namespace twinbit::cli {

namespace {

// A backend given (or added by default) and whether it can run here.
struct Listed {
  std::string label;    // what the runtime and the overrides call it
  std::string name;     // "cpu", "cuda", "" for a plugin
  std::string why_not;  // "" when it was created here
};

Result<Listed> resolve(const std::string& text, int* exit_code) {
  auto spec = backend_spec_from_option(text);
  if (!spec.ok()) {
    *exit_code = usage_error("run-model", spec.status());
    return spec.status();
  }
  Listed l{spec->is_plugin() ? spec->plugin_path : spec->to_string(), spec->name, ""};
  auto b = create_backend(spec.value());
  if (b.ok()) return l;
  if (!spec->is_plugin() && b.status().code() == TB_UNAVAILABLE) {
    l.why_not = b.status().message();  // a placement that needs it is skipped
    return l;
  }
  *exit_code = spec->is_plugin() || b.status().code() != TB_INVALID_ARGUMENT
                   ? fail("run-model", b.status())
                   : usage_error("run-model", b.status());
  return b.status();
}

int cuda_devices_here() {
  BackendSpec cuda;
  cuda.name = "cuda";
  if (find_builtin_backend("cuda") == nullptr) return 0;
  auto devices = list_devices(cuda);
  if (!devices.ok()) return 0;
  int usable = 0;
  for (size_t i = 0; i < devices->size(); ++i) {
    cuda.device = static_cast<int32_t>(i);
    if (create_backend(cuda).ok()) ++usable;
  }
  return usable;
}

ModelPlacement placement(std::string name, std::string how, std::vector<std::string> backends,
                         const std::string& rule, const artifact::OpenOptions& open) {
  ModelPlacement p;
  p.name = std::move(name);
  p.how = std::move(how);
  p.options.backends = std::move(backends);
  p.options.open = open;
  if (!rule.empty()) {
    auto r = runtime::parse_override_rule(rule, "run-model placement '" + p.name + "'");
    if (r.ok()) {
      p.options.overrides.push_back(std::move(r.value()));
    } else {
      p.skipped = r.status().message();
    }
  }
  return p;
}

}  // namespace

Result<std::vector<ModelPlacement>> model_placements(const std::vector<std::string>& backend_texts,
                                                     const artifact::OpenOptions& open, int* exit_code) {
  *exit_code = kExitOk;
  const int gpus = cuda_devices_here();
  std::vector<std::string> texts = backend_texts;
  if (texts.empty()) {
    texts.push_back("cpu");
    if (find_builtin_backend("cuda") != nullptr) texts.push_back("cuda");
  }
  std::vector<Listed> listed;
  for (const std::string& t : texts) {
    auto l = resolve(t, exit_code);
    if (!l.ok()) return l.status();
    listed.push_back(std::move(l.value()));
  }
  auto cpu_at = std::find_if(listed.begin(), listed.end(), [](const Listed& l) { return l.name == "cpu"; });
  if (cpu_at == listed.end()) {
    auto l = resolve("cpu", exit_code);
    if (!l.ok()) return l.status();
    listed.push_back(std::move(l.value()));
    cpu_at = listed.end() - 1;
  }
  const Listed cpu = *cpu_at;

  std::vector<ModelPlacement> out;
  out.push_back(placement("cpu", "every projection on " + cpu.label, {cpu.label}, "", open));
  out.back().single_backend = true;
  out.back().floor_backend = cpu.label;
  std::vector<std::string> runnable;
  for (const Listed& l : listed) {
    if (l.why_not.empty()) runnable.push_back(l.label);
    if (l.label == cpu.label) continue;
    out.push_back(placement("all " + l.label, "*=" + l.label, {cpu.label, l.label}, "*=" + l.label, open));
    out.back().single_backend = true;
    out.back().floor_backend = l.label;
    if (out.back().skipped.empty()) out.back().skipped = l.why_not;
  }
  std::string over;
  for (const std::string& r : runnable) over += (over.empty() ? "" : ", ") + r;
  out.push_back(placement("threshold", "default plan over " + over, runnable, "", open));
  if (runnable.size() < 2) {
    out.back().skipped = "only the CPU backend can run here, so the default plan is placement 'cpu'";
  }
  out.push_back(placement("calibrated", "calibrated plan over " + over, runnable, "", open));
  out.back().calibrated = true;
  if (runnable.size() < 2) {
    out.back().skipped = "only the CPU backend can run here, so the calibrated plan is placement 'cpu'";
  }

  if (gpus >= 1) {
    out.push_back(placement("split cpu+cuda", "*=" + cpu.label + "*0.5+cuda*0.5", {cpu.label, "cuda"},
                            "*=" + cpu.label + "*0.5+cuda*0.5", open));
    out.push_back(placement("split cuda:0+cuda:1", "*=cuda:0*0.5+cuda:1*0.5", {cpu.label, "cuda:0", "cuda:1"},
                            "*=cuda:0*0.5+cuda:1*0.5", open));
    if (gpus < 2) out.back().skipped = "needs two CUDA devices; this machine has one";
    return out;
  }
  const std::vector<cpu::Isa> isas = cpu::runnable_isas();
  if (isas.size() < 2) {
    out.push_back(placement("split cpu ISAs", "two CPU backends of different instruction sets", {}, "", open));
    out.back().skipped = "this CPU runs one instruction set of the backend (" + cpu::isa_names(isas) + ")";
    return out;
  }
  const std::string second = std::string("cpu,isa=") + cpu::isa_name(isas[1]) + ",threads=1";
  const std::string rule = "*=" + second + "*0.5+" + cpu.label + "*0.5";
  out.push_back(placement("split cpu ISAs", rule, {cpu.label, second}, rule, open));
  return out;
}

Result<StepFloor> StepFloor::make(const std::string& label, const artifact::Artifact& art,
                                  const runtime::ModelStep& step) {
  auto backend = create_backend(label);
  if (!backend.ok()) return backend.status();
  if (!backend->has_read_floor()) {
    return Error(TB_UNIMPLEMENTED, "backend '%s' has no read_floor entry", label.c_str());
  }
  StepFloor f;
  f.label_ = label;
  for (const runtime::StepProjection& p : step.projections) {
    auto w = art.weights(*art.find(p.entry));
    if (!w.ok()) return w.status();
    auto b = backend->bind(w->view, w->keep_alive);
    if (!b.ok()) return b.status();
    f.bound_.push_back(std::move(b.value()));
  }
  return f;
}

Status StepFloor::read(int64_t m) const {
  for (const BoundWeights& w : bound_) TB_RETURN_IF_ERROR(w.backend().read_floor(w, m));
  return Status();
}

double quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double at = q * static_cast<double>(samples.size() - 1);
  return samples[static_cast<size_t>(std::lround(at))];
}

}  // namespace twinbit::cli
