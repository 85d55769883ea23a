// The import plan (names.h): source names to entries, the shape checks, fusion and tied embeddings.
#include "artifacts/import/names.h"

#include <algorithm>
#include <map>
#include <optional>

namespace twinbit::import {
namespace {

using ull = unsigned long long;

// Roles in entry order; the index is the sort key within a layer.
const char* const kRoles[] = {"attn_q", "attn_k", "attn_v", "attn_o", "ffn_gate", "ffn_up", "ffn_down"};
constexpr int kLmHead = 7;

int role_index(std::string_view role) {
  for (int i = 0; i < 7; ++i) {
    if (role == kRoles[i]) return i;
  }
  return role == "lm_head" ? kLmHead : -1;
}

struct Mapped {
  int role = -1;       // index into kRoles, or kLmHead
  int64_t layer = -1;
  bool embedding = false;       // the token embedding (not an entry unless tied)
  std::string skip;             // non-empty: skipped on purpose (a name-map '-')
};

// A decimal layer number without leading zeros, below 10^6.
std::optional<int64_t> layer_number(std::string_view s) {
  if (s.empty() || s.size() > 6 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "<prefix>N.<suffix>" -> N, when `name` has that form.
std::optional<int64_t> layer_of(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  return layer_number(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
}

Mapped builtin(std::string_view name) {
  // Multimodal checkpoints nest the language model; read their names as a plain model's.
  std::string plain(name);
  if (name.substr(0, 21) == "model.language_model.") plain = "model." + std::string(name.substr(21));
  else if (name.substr(0, 21) == "language_model.model.") plain = "model." + std::string(name.substr(21));
  else if (name == "language_model.lm_head.weight") plain = "lm_head.weight";
  Mapped m;
  if (plain == "output.weight" || plain == "lm_head.weight") {
    m.role = kLmHead;
    return m;
  }
  if (plain == "token_embd.weight" || plain == "model.embed_tokens.weight") {
    m.embedding = true;
    return m;
  }
  static const struct {
    const char* gguf;  // after "blk.N."
    const char* hf;    // after "model.layers.N."
  } kNames[] = {
      {".attn_q.weight", ".self_attn.q_proj.weight"},  {".attn_k.weight", ".self_attn.k_proj.weight"},
      {".attn_v.weight", ".self_attn.v_proj.weight"},  {".attn_output.weight", ".self_attn.o_proj.weight"},
      {".ffn_gate.weight", ".mlp.gate_proj.weight"},   {".ffn_up.weight", ".mlp.up_proj.weight"},
      {".ffn_down.weight", ".mlp.down_proj.weight"},
  };
  for (int r = 0; r < 7; ++r) {
    auto layer = layer_of(plain, "blk.", kNames[r].gguf);
    if (!layer) layer = layer_of(plain, "model.layers.", kNames[r].hf);
    if (layer) {
      m.role = r;
      m.layer = *layer;
      return m;
    }
  }
  return m;
}

// The first name-map rule matching `name`, applied; nullopt when none matches.
Result<std::optional<Mapped>> from_rules(const std::string& name, const std::vector<NameRule>& rules) {
  std::vector<std::string> stars;
  for (const NameRule& r : rules) {
    if (!glob_match(r.glob, name, &stars)) continue;
    Mapped m;
    if (r.entry == "-") {
      m.skip = Format("skipped by the name map (%s:%d)", r.source.c_str(), r.line);
      return std::optional<Mapped>(m);
    }
    // Rules made in code rather than parsed may break parse_name_map's rules: check again.
    std::string entry;
    size_t star = 0;
    for (char c : r.entry) entry += c != '*' ? std::string(1, c) : star < stars.size() ? stars[star++] : "*";
    if (entry == "lm_head") {
      m.role = kLmHead;
      return std::optional<Mapped>(m);
    }
    const size_t dot = entry.find('.', 4);
    const bool shaped = entry.rfind("blk.", 0) == 0 && dot != std::string::npos;
    const auto layer = shaped ? layer_number(std::string_view(entry).substr(4, dot - 4)) : std::nullopt;
    m.role = shaped ? role_index(std::string_view(entry).substr(dot + 1)) : -1;
    if (!layer || m.role < 0 || m.role == kLmHead) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: tensor '%s' maps to '%s', which is not an entry "
                   "(the layer must be a number)", r.source.c_str(), r.line, name.c_str(), entry.c_str());
    }
    m.layer = *layer;
    return std::optional<Mapped>(m);
  }
  return std::optional<Mapped>();
}

std::string why_skipped(std::string_view name, bool embedding) {
  if (embedding) return "embedding (the model has its own lm_head)";
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("visual") || has("vision") || has("mm_projector") || has("multi_modal")) return "vision tower";
  if (has("norm")) return "norm";
  if (name.size() >= 5 && name.substr(name.size() - 5) == ".bias") return "bias";
  if (has("rotary") || has("rope")) return "rotary table";
  return "not a projection twinbit holds";
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

Result<ImportPlan> plan_names(const std::vector<SourceTensor>& tensors, const NameOptions& options) {
  ImportPlan plan;
  std::map<std::pair<int64_t, int>, size_t> by_slot;  // (layer, role) -> index into plan.entries
  std::optional<size_t> embedding;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SourceTensor& t = tensors[i];
    auto ruled = from_rules(t.name, options.rules);
    if (!ruled.ok()) return ruled.status();
    const Mapped m = ruled->has_value() ? **ruled : builtin(t.name);
    if (!m.skip.empty()) {
      plan.skipped.push_back({i, t.name, t.bytes, m.skip});
      continue;
    }
    if (m.embedding) {
      if (!embedding) embedding = i;
      else plan.skipped.push_back({i, t.name, t.bytes, "a second embedding table"});
      continue;
    }
    if (m.role < 0) {
      plan.skipped.push_back({i, t.name, t.bytes, why_skipped(t.name, false)});
      continue;
    }
    PlannedEntry e;
    e.role = m.role == kLmHead ? "lm_head" : kRoles[m.role];
    e.layer = m.layer;
    e.name = m.role == kLmHead ? "lm_head" : Format("blk.%lld.%s", (long long)m.layer, e.role.c_str());
    e.tensor = i;
    auto [it, added] = by_slot.emplace(std::make_pair(m.layer, m.role), plan.entries.size());
    if (!added) {
      return Error(TB_INVALID_ARGUMENT, "tensors '%s' and '%s' both map to entry %s",
                   tensors[plan.entries[it->second].tensor].name.c_str(), t.name.c_str(), e.name.c_str());
    }
    plan.entries.push_back(std::move(e));
  }
  if (embedding) {
    if (by_slot.count({-1, kLmHead})) {
      const SourceTensor& t = tensors[*embedding];
      plan.skipped.push_back({*embedding, t.name, t.bytes, why_skipped(t.name, true)});
    } else {
      PlannedEntry e;
      e.name = e.role = "lm_head";
      e.tensor = *embedding;
      e.from_embedding = true;
      by_slot.emplace(std::make_pair(int64_t(-1), kLmHead), plan.entries.size());
      plan.entries.push_back(e);
      plan.notes.push_back("tied embeddings: no lm_head tensor, so lm_head is the embedding table '" +
                           tensors[*embedding].name + "'");
    }
  }
  std::sort(plan.skipped.begin(), plan.skipped.end(),
            [](const SkippedTensor& a, const SkippedTensor& b) { return a.tensor < b.tensor; });

  // Every mapped tensor: a 2-D {N, K} matrix of a type the pipeline can read.
  for (PlannedEntry& e : plan.entries) {
    const SourceTensor& t = tensors[e.tensor];
    if (t.dims.size() != 2 || t.dims[0] <= 0 || t.dims[1] <= 0) {
      return Error(TB_INVALID_ARGUMENT, "tensor '%s' (for %s) has dims %s: a projection is 2-D "
                   "{N outputs, K inputs}, both > 0", t.name.c_str(), e.name.c_str(), dims_text(t.dims).c_str());
    }
    if (t.type == SourceType::other) {
      return Error(TB_INVALID_ARGUMENT, "tensor '%s' (for %s) is %s, which twinbit cannot import",
                   t.name.c_str(), e.name.c_str(), t.type_name.c_str());
    }
    e.n = t.dims[0];
    e.k = t.dims[1];
  }
  std::sort(plan.entries.begin(), plan.entries.end(), [](const PlannedEntry& a, const PlannedEntry& b) {
    const bool ha = a.role == "lm_head", hb = b.role == "lm_head";
    if (ha != hb) return hb;
    return a.layer != b.layer ? a.layer < b.layer : role_index(a.role) < role_index(b.role);
  });
  by_slot.clear();
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    by_slot[{plan.entries[i].layer, role_index(plan.entries[i].role)}] = i;
  }
  auto find = [&](int64_t layer, int role) -> const PlannedEntry* {
    auto it = by_slot.find({layer, role});
    return it == by_slot.end() ? nullptr : &plan.entries[it->second];
  };
  auto mismatch = [&](const PlannedEntry& a, const PlannedEntry& b, const char* rule) {
    return Error(TB_INVALID_ARGUMENT, "%s (tensor '%s', {N %lld, K %lld}) and %s (tensor '%s', {N %lld, "
                 "K %lld}) disagree: %s", a.name.c_str(), tensors[a.tensor].name.c_str(), (long long)a.n,
                 (long long)a.k, b.name.c_str(), tensors[b.tensor].name.c_str(), (long long)b.n,
                 (long long)b.k, rule);
  };

  // Shapes that must agree within a layer, and the fused entries.
  int64_t last_layer = -2;
  std::optional<int64_t> hidden;
  const PlannedEntry* hidden_from = nullptr;
  for (const PlannedEntry& e : plan.entries) {
    if (e.layer == last_layer || e.role == "lm_head") continue;
    last_layer = e.layer;
    const int64_t L = e.layer;
    const PlannedEntry *q = find(L, 0), *k = find(L, 1), *v = find(L, 2), *o = find(L, 3);
    const PlannedEntry *gate = find(L, 4), *up = find(L, 5), *down = find(L, 6);
    for (const PlannedEntry* kv : {k, v}) {
      if (q && kv && kv->k != q->k) return mismatch(*q, *kv, "attn_q, attn_k and attn_v must share K");
    }
    if (k && v && k->k != v->k) return mismatch(*k, *v, "attn_k and attn_v must share K");
    if (q && o && o->n != q->k) return mismatch(*q, *o, "attn_o's N must be attn_q's K (the hidden size)");
    if (gate && up && (gate->n != up->n || gate->k != up->k)) {
      return mismatch(*gate, *up, "ffn_gate and ffn_up must have one shape");
    }
    for (const PlannedEntry* g : {gate, up}) {
      if (g && down && down->k != g->n) return mismatch(*g, *down, "ffn_down's K must be the ffn's N");
    }
    if (q) {
      if (hidden && *hidden != q->k) return mismatch(*hidden_from, *q, "every layer has one hidden size");
      hidden = q->k;
      hidden_from = q;
    }
    auto fuse = [&](const char* role, std::vector<const PlannedEntry*> parts, const char* missing_note) {
      FusionGroup g;
      g.role = role;
      g.layer = L;
      g.name = Format("blk.%lld.%s", (long long)L, role);
      for (const PlannedEntry* p : parts) {
        if (!p) {
          plan.notes.push_back(Format("layer %lld: no %s (%s)", (long long)L, g.name.c_str(), missing_note));
          return;
        }
        g.parts.push_back(static_cast<size_t>(p - plan.entries.data()));
        g.n += p->n;
        g.k = p->k;
      }
      plan.fused.push_back(std::move(g));
    };
    if (options.fuse_qkv) fuse("attn_qkv", {q, k, v}, "attn_q, attn_k or attn_v is missing");
    if (options.fuse_gate_up) fuse("ffn_gate_up", {gate, up}, "ffn_gate or ffn_up is missing");
  }
  if (const PlannedEntry* head = find(-1, kLmHead); head && hidden && head->k != *hidden) {
    return mismatch(*hidden_from, *head, "lm_head's K must be the hidden size");
  }
  return plan;
}

}  // namespace twinbit::import
