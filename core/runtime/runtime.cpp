// Opening a Runtime, deciding placements and the report (the calls: runtime_gemm.cpp).
#include "core/runtime/runtime.h"

#include <algorithm>

#include "core/op_checks.h"
#include "core/registry.h"
#include "core/runtime/cost_model.h"
#include "core/runtime/default_plan.h"
#include "core/runtime/runtime_state.h"

namespace twinbit::runtime {

Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>> Runtime::open(const std::string& artifact_path,
                                               const RuntimeOptions& options) {
  std::unique_ptr<Runtime> rt(new Runtime());
  auto art = artifact::Artifact::open(artifact_path, options.open);
  if (!art.ok()) return art.status();
  rt->artifact_ = std::move(art.value());

  std::vector<BackendSpec> specs;
  for (const std::string& text : options.backends) {
    auto spec = parse_backend_spec(text);
    if (!spec.ok()) return spec.status();
    if (std::find(specs.begin(), specs.end(), spec.value()) != specs.end()) {
      return Error(TB_INVALID_ARGUMENT, "backend '%s' is listed twice", text.c_str());
    }
    specs.push_back(spec.value());
  }
  auto cpu = std::find_if(specs.begin(), specs.end(), [](const BackendSpec& s) { return s.name == kCpuBackendName; });
  if (cpu == specs.end()) {
    specs.push_back(BackendSpec{kCpuBackendName, "", std::nullopt, {}});
    cpu = specs.end() - 1;
  }
  rt->cpu_ = static_cast<size_t>(cpu - specs.begin());
  for (const BackendSpec& spec : specs) {
    auto b = create_backend(spec);
    if (!b.ok()) return b.status();
    rt->backends_.push_back(std::move(b.value()));
    rt->labels_.push_back(spec.to_string());
  }
  for (const Backend& b : rt->backends_) rt->backend_ptrs_.push_back(&b);
  if (options.profile) TB_RETURN_IF_ERROR(rt->use_profile(*options.profile));

  for (const OverrideRule& rule : options.overrides) {
    Placement placement;
    for (const TargetPart& part : rule.target) {
      auto at = std::find(specs.begin(), specs.end(), part.spec);
      if (at == specs.end()) {
        std::string listed;
        for (const std::string& l : rt->labels_) listed += (listed.empty() ? "" : ", ") + l;
        return Error(TB_INVALID_ARGUMENT, "%s: '%s': backend '%s' is not one of the runtime's backends (%s)",
                     rule.origin.c_str(), rule.text.c_str(), part.spec.to_string().c_str(), listed.c_str());
      }
      placement.parts.push_back(PlacementPart{static_cast<size_t>(at - specs.begin()), part.fraction});
    }
    const auto& all = rt->artifact_->entries();
    if (std::none_of(all.begin(), all.end(), [&](const artifact::Entry& e) { return entry_matches(rule.pattern, e.name); })) {
      return Error(TB_INVALID_ARGUMENT, "%s: '%s': pattern '%s' matches no entry of %s", rule.origin.c_str(),
                   rule.text.c_str(), rule.pattern.c_str(), artifact_path.c_str());
    }
    rt->override_placements_.push_back(std::move(placement));
  }
  rt->overrides_ = options.overrides;

  for (const artifact::Entry& e : rt->artifact_->entries()) {
    auto state = std::make_unique<EntryState>();
    state->entry = &e;
    for (size_t r = 0; r < rt->overrides_.size() && state->rule < 0; ++r) {
      if (entry_matches(rt->overrides_[r].pattern, e.name)) state->rule = static_cast<int>(r);
    }
    rt->entries_.push_back(std::move(state));
  }
  return rt;
}

Status Runtime::use_profile(const Profile& profile) {
  profile_ = profile;
  for (size_t i = 0; i < backends_.size(); ++i) {
    const BackendProfile* b = profile_->find(labels_[i]);
    if (b == nullptr) {
      return Error(TB_INVALID_ARGUMENT, "profile %s has no measurements for backend '%s'; run twinbit calibrate --backend %s",
                   profile_->source.c_str(), labels_[i].c_str(), labels_[i].c_str());
    }
    // Costs of another device would place calls by the wrong numbers (a profile copied from
    // another machine, a GPU swapped): refused rather than silently wrong.
    if (b->name != backends_[i].name() || b->device != backends_[i].device()) {
      return Error(TB_INVALID_ARGUMENT,
                   "profile %s measured backend '%s' as %s on '%s', but here it is %s on '%s'; run twinbit calibrate --backend %s",
                   profile_->source.c_str(), labels_[i].c_str(), b->name.c_str(), b->device.c_str(),
                   backends_[i].name().c_str(), backends_[i].device().c_str(), labels_[i].c_str());
    }
    backend_profiles_.push_back(b);
  }
  return Status();
}

const Runtime::EntryState* Runtime::find_entry(const std::string& entry, size_t* index) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i]->entry->name == entry) {
      *index = i;
      return entries_[i].get();
    }
  }
  return nullptr;
}

tb_op_desc Runtime::op_of(const artifact::Entry& e, int64_t m, int64_t n, tb_act_mode mode) const {
  return gemm_op_desc(e.prec, mode, m, n, e.k);
}

Result<Decision> Runtime::decide(const std::string& entry, int64_t m, tb_act_mode mode) const {
  size_t index = 0;
  const EntryState* state = find_entry(entry, &index);
  if (state == nullptr) {
    return Error(TB_INVALID_ARGUMENT, "no entry '%s' in %s", entry.c_str(), artifact_->path().c_str());
  }
  const artifact::Entry& e = *state->entry;
  if (e.kind != TB_WEIGHTS_STRIPS) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' is a float matrix, not a strip set: it has no gemm", entry.c_str());
  }
  Decision d;
  const tb_op_desc whole = op_of(e, m, e.n, mode);
  const std::vector<size_t> order = default_order(backend_ptrs_, cpu_, whole);
  std::optional<CalibratedChoice> calibrated;
  if (profile_) {
    std::vector<Candidate> candidates;
    for (size_t i = 0; i < backends_.size(); ++i) {
      candidates.push_back(Candidate{backend_profiles_[i], backends_[i].supports(whole).ok()});
    }
    calibrated = choose_calibrated(candidates, labels_, GemmShape{m, e.n, e.k, e.prec, mode}, cpu_, &*profile_);
    d.predicted_us = calibrated->single_us;
  }
  if (state->rule >= 0) {
    const OverrideRule& rule = overrides_[static_cast<size_t>(state->rule)];
    d.placement = override_placements_[static_cast<size_t>(state->rule)];
    d.why = Format("override %s: %s", rule.origin.c_str(), rule.text.c_str());
  } else if (calibrated) {
    d.placement = calibrated->placement;
    d.why = calibrated->why;
    d.predicted_choice_us = calibrated->predicted_us;
  } else {
    d.placement = Placement::single(order.front());
    const double flops = gemm_flops(m, e.n, e.k);
    if (flops < kCpuFlopThreshold) {
      d.why = Format("threshold: 2*M*N*K = %.4g < %.0e stays on the CPU", flops, kCpuFlopThreshold);
    } else if (order.front() != cpu_) {
      d.why = Format("threshold: 2*M*N*K = %.4g >= %.0e, the first listed backend that supports it", flops, kCpuFlopThreshold);
    } else {
      d.why = Format("threshold: 2*M*N*K = %.4g >= %.0e, but no other backend supports it", flops, kCpuFlopThreshold);
    }
    for (size_t i = 0; i < backends_.size(); ++i) {
      if (flops >= kCpuFlopThreshold && i != cpu_ && is_emulated(backends_[i])) {
        d.why += Format(" (%s is emulated on the host: only an override places calls there)", labels_[i].c_str());
      }
    }
  }
  // A part whose backend declines its columns moves down the default order now, so what the plan
  // shows is what runs (a backend may still decline at the call: runtime_gemm.cpp).
  for (const ColumnShare& share : column_shares(d.placement, e.n)) {
    PlacementPart& part = d.placement.parts[share.part];
    const tb_op_desc op = op_of(e, m, share.count, mode);
    for (size_t b : fallback_chain(part.backend, order, cpu_)) {
      const Status s = backends_[b].supports(op);
      if (s.ok()) {
        part.backend = b;
        break;
      }
      if (s.code() != TB_UNIMPLEMENTED) return s;
      ++d.fallbacks;
      d.why += Format("; fallback: %s declined (%s)", labels_[b].c_str(), s.message().c_str());
    }
  }
  return d;
}

std::vector<EntryReport> Runtime::report() const {
  std::vector<EntryReport> out;
  for (const auto& state : entries_) {
    if (state->entry->kind != TB_WEIGHTS_STRIPS) continue;
    EntryReport r;
    r.entry = state->entry->name;
    {
      std::lock_guard<std::mutex> lock(state->latest_mutex);
      r.placement = state->latest_placement;
    }
    r.calls = state->calls.load();
    r.fallbacks = state->fallbacks.load();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace twinbit::runtime
