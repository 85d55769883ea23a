// The model step (core/runtime/model_step.h): finding a step's projections in an artifact, its
// inputs, running it on a Runtime and hashing its outputs.
#include "core/runtime/model_step.h"

#include <xxhash.h>

#include <cstring>
#include <new>

#include "artifacts/synthetic.h"
#include "core/op_checks.h"
#include "core/precision.h"

namespace twinbit::runtime {

namespace {

using ll = long long;

// The NaN every output is set to before a step: a quiet NaN with a payload no float operation
// of the contract produces from finite inputs.
constexpr uint32_t kPoisonBits = 0x7fc0dead;

Result<StepProjection> projection_of(const artifact::Artifact& art, const std::string& name,
                                     tb_prec prec) {
  const artifact::Entry* e = art.find(name);
  if (e == nullptr) {
    return Error(TB_INVALID_ARGUMENT, "%s: the model step needs entry '%s', which the artifact "
                 "does not have", art.path().c_str(), name.c_str());
  }
  if (e->kind != TB_WEIGHTS_STRIPS || e->prec != prec) {
    return Error(TB_INVALID_ARGUMENT, "%s: entry '%s' is not a %s strip set", art.path().c_str(),
                 name.c_str(), prec_name(prec));
  }
  StepProjection p{name, e->k, e->n, 0};
  for (const auto& payload : e->payloads) p.weight_bytes += payload.bytes;
  return p;
}

// FNV-1a of the entry name, then M mixed in: a stream of its own for every (entry, M).
uint64_t activation_seed(const std::string& entry, int64_t m) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : entry) h = (h ^ c) * 0x100000001b3ull;
  h ^= static_cast<uint64_t>(m) * 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

}  // namespace

uint64_t ModelStep::weight_bytes() const {
  uint64_t sum = 0;
  for (const StepProjection& p : projections) sum += p.weight_bytes;
  return sum;
}

Result<ModelStep> model_step(const artifact::Artifact& art, tb_prec prec) {
  ModelStep step;
  step.prec = prec;
  const std::string suffix = std::string(".") + prec_name(prec);
  const bool layered = art.find(synthetic::layer_name(0, "attn_qkv") + suffix) != nullptr;
  if (!layered && art.find("attn_qkv" + suffix) == nullptr) {
    return Error(TB_INVALID_ARGUMENT, "%s has no model step at %s: neither 'blk.0.attn_qkv%s' "
                 "(a layered model) nor 'attn_qkv%s' (the single-layer model)",
                 art.path().c_str(), prec_name(prec), suffix.c_str(), suffix.c_str());
  }
  for (int layer = layered ? 0 : -1;; ++layer) {
    if (layered && art.find(synthetic::layer_name(layer, "attn_qkv") + suffix) == nullptr) break;
    for (const char* proj : synthetic::kLayerProjections) {
      auto p = projection_of(art, synthetic::layer_name(layer, proj) + suffix, prec);
      if (!p.ok()) return p.status();
      step.projections.push_back(std::move(p.value()));
    }
    if (!layered) break;
    step.layers = layer + 1;
  }
  if (art.find("lm_head" + suffix) != nullptr) {
    auto p = projection_of(art, "lm_head" + suffix, prec);
    if (!p.ok()) return p.status();
    step.projections.push_back(std::move(p.value()));
  }
  return step;
}

std::vector<float> step_activations(const std::string& entry, int64_t m, int64_t k) {
  std::vector<float> x(static_cast<size_t>(m * k));
  synthetic::fill_uniform(x.data(), m * k, activation_seed(entry, m), 1.0f);
  return x;
}

StepBuffers::StepBuffers(const ModelStep& step, int64_t m) : step_(&step), m_(m) {
  for (const StepProjection& p : step.projections) {
    x_.push_back(step_activations(p.entry, m, p.k));
    y_.emplace_back(static_cast<size_t>(m * p.n));
  }
  poison();
}

uint64_t StepBuffers::bytes(const ModelStep& step, int64_t m) {
  uint64_t floats = 0;
  for (const StepProjection& p : step.projections) floats += static_cast<uint64_t>(m) * (p.k + p.n);
  return floats * sizeof(float);
}

void StepBuffers::poison() {
  float nan;
  std::memcpy(&nan, &kPoisonBits, sizeof nan);
  for (std::vector<float>& y : y_) std::fill(y.begin(), y.end(), nan);
}

Status StepBuffers::run(Runtime& rt, tb_act_mode mode) {
  for (size_t i = 0; i < step_->projections.size(); ++i) {
    const StepProjection& p = step_->projections[i];
    Status s = rt.gemm(p.entry, m_, mode, x_[i].data(), p.k, y_[i].data(), p.n);
    if (!s.ok()) {
      return Status(s.code(), "step projection " + std::to_string(i) + " (" + p.entry + "): " + s.message());
    }
  }
  return Status();
}

uint64_t StepBuffers::hash() const {
  XXH64_state_t* st = XXH64_createState();
  if (st == nullptr) throw std::bad_alloc();
  XXH64_reset(st, 0);
  for (const std::vector<float>& y : y_) XXH64_update(st, y.data(), y.size() * sizeof(float));
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

}  // namespace twinbit::runtime
