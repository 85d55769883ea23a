// Runtime::gemm: one call routed to its placement - the I8 quantiser once, the column shares
// concurrently, fallbacks at bind and at the call (core/runtime/runtime.h).
#include <system_error>
#include <thread>

#include "core/numerics.h"
#include "core/rows.h"
#include "core/runtime/default_plan.h"
#include "core/runtime/runtime.h"
#include "core/runtime/runtime_state.h"
#include "core/strip_layout.h"

namespace twinbit::runtime {

Result<const BoundWeights*> Runtime::bound(size_t entry, size_t backend, int64_t begin, int64_t count) {
  const BindKey key{entry, backend, begin, count};
  std::lock_guard<std::mutex> lock(bind_mutex_);
  auto at = bindings_.find(key);
  if (at != bindings_.end()) return static_cast<const BoundWeights*>(at->second.get());
  auto w = artifact_->weights(*entries_[entry]->entry);
  if (!w.ok()) return w.status();
  tb_weights_view view = w->view;
  if (count != view.strips.n) {
    auto part = StripLayout::columns(view.strips, begin, count);
    if (!part.ok()) return part.status();
    view.strips = part.value();
  }
  auto b = backends_[backend].bind(view, w->keep_alive);
  if (!b.ok()) return b.status();  // not remembered: a later call asks again
  auto owned = std::make_unique<BoundWeights>(std::move(b.value()));
  const BoundWeights* out = owned.get();
  bindings_.emplace(key, std::move(owned));
  return out;
}

Status Runtime::run_share(size_t entry, const Share& share, const tb_gemm_args& whole_args,
                          std::atomic<int64_t>* fallbacks, std::string* ran_on) {
  tb_gemm_args args = whole_args;
  args.y = whole_args.y + share.columns.begin;
  Status last;
  for (size_t b : fallback_chain(share.backend, share.order, cpu_)) {
    auto w = bound(entry, b, share.columns.begin, share.columns.count);
    Status s = w.ok() ? backends_[b].gemm(*w.value(), args) : w.status();
    if (s.ok()) {
      *ran_on = labels_[b];
      return s;
    }
    if (s.code() != TB_UNIMPLEMENTED) return s;
    fallbacks->fetch_add(1);
    last = std::move(s);
  }
  return Error(TB_UNIMPLEMENTED, "entry '%s' columns [%lld, %lld): no backend runs them, the CPU backend included (%s)",
               entries_[entry]->entry->name.c_str(), static_cast<long long>(share.columns.begin),
               static_cast<long long>(share.columns.begin + share.columns.count), last.message().c_str());
}

Status Runtime::gemm(const std::string& entry, int64_t m, tb_act_mode mode, const float* x, int64_t ldx,
                     float* y, int64_t ldy) {
  TB_RETURN_IF_ERROR(check_rows(m));
  if (mode != TB_ACT_F32 && mode != TB_ACT_I8) return Error(TB_INVALID_ARGUMENT, "activation mode %d is not F32 or I8", static_cast<int>(mode));
  auto decision = decide(entry, m, mode);
  if (!decision.ok()) return decision.status();
  size_t index = 0;
  EntryState& state = *entries_[find_entry(entry, &index) ? index : 0];
  const artifact::Entry& e = *state.entry;
  const Placement& placement = decision->placement;
  // Checked here for the whole row: each part's backend sees only its share's columns, so it
  // could not tell that ldy is too short for the others.
  if (x == nullptr || y == nullptr) return Error(TB_INVALID_ARGUMENT, "entry '%s': x and y must not be null", entry.c_str());
  if (ldx < e.k || ldy < e.n) {
    return Error(TB_INVALID_ARGUMENT, "entry '%s' (K %lld, N %lld): ldx %lld must be >= K and ldy %lld >= N",
                 entry.c_str(), static_cast<long long>(e.k), static_cast<long long>(e.n),
                 static_cast<long long>(ldx), static_cast<long long>(ldy));
  }

  tb_gemm_args args{};
  args.mode = mode;
  args.m = m;
  args.y = y;
  args.ldy = ldy;
  std::vector<int8_t> xq;
  std::vector<float> xd;
  if (mode == TB_ACT_F32) {
    args.x = x;
    args.ldx = ldx;
  } else {
    // Once per call, whatever the number of parts: every part reads the same codes.
    const int64_t kp = pad32(e.k);
    xq.resize(static_cast<size_t>(m * kp));
    xd.resize(static_cast<size_t>(m * (kp / 32)));
    const tb_quantize_args q{m, e.k, x, ldx, xq.data(), kp, xd.data(), kp / 32};
    TB_RETURN_IF_ERROR(backends_[placement.parts.front().backend].quantize_i8(q));
    args.xq = xq.data();
    args.ldxq = kp;
    args.xd = xd.data();
    args.ldxd = kp / 32;
  }

  const std::vector<size_t> order = default_order(backend_ptrs_, cpu_, op_of(e, m, e.n, mode));
  std::vector<Share> shares;
  for (const ColumnShare& c : column_shares(placement, e.n)) {
    shares.push_back(Share{c, placement.parts[c.part].backend, order});
  }
  std::atomic<int64_t> fallbacks{decision->fallbacks};
  std::vector<Status> status(shares.size());
  std::vector<std::string> ran_on(shares.size());
  {
    // The first share runs on this thread, the others on their own; all are joined before the
    // statuses are read.
    std::vector<std::jthread> others;
    for (size_t i = 1; i < shares.size(); ++i) {
      auto run = [&, i] { status[i] = run_share(index, shares[i], args, &fallbacks, &ran_on[i]); };
      try {
        others.emplace_back(run);
      } catch (const std::system_error&) {
        run();  // no thread to be had: the share runs here, later, with the same bits
      }
    }
    status[0] = run_share(index, shares[0], args, &fallbacks, &ran_on[0]);
  }
  state.calls.fetch_add(1);
  state.fallbacks.fetch_add(fallbacks.load());
  for (const Status& s : status) TB_RETURN_IF_ERROR(s);

  std::string ran;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (i > 0) ran += '+';
    ran += ran_on[i];
    if (shares.size() > 1) ran += Format("[%lld:%lld]", static_cast<long long>(shares[i].columns.begin),
                                         static_cast<long long>(shares[i].columns.begin + shares[i].columns.count));
  }
  std::lock_guard<std::mutex> lock(state.latest_mutex);
  state.latest_placement = std::move(ran);
  return Status();
}

}  // namespace twinbit::runtime
