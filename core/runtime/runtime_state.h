// The Runtime's private per-entry state and shares (core/runtime/runtime.h), shared by its two
// source files.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "core/runtime/runtime.h"

namespace twinbit::runtime {

struct Runtime::EntryState {
  const artifact::Entry* entry = nullptr;
  int rule = -1;  // the first override matching the entry, or -1: the default plan
  std::atomic<int64_t> calls{0}, fallbacks{0};
  mutable std::mutex latest_mutex;  // guards latest_placement
  std::string latest_placement;
};

// One column share of a call, with the backend its part starts on (after the decision's
// fallbacks at supports()) and the default order its fallbacks follow.
struct Runtime::Share {
  ColumnShare columns;
  size_t backend = 0;
  std::vector<size_t> order;
};

}  // namespace twinbit::runtime
