// The objects behind the host C API's handles, and the table of open handles that lets a call
// refuse a closed or foreign handle without reading it (include/twinbit/twinbit.h "ERRORS").
#pragma once

#include <memory>
#include <string>

#include <twinbit/twinbit.h>

#include "artifacts/artifact.h"
#include "core/backend.hpp"
#include "core/runtime/runtime.h"

struct tb_artifact {
  std::unique_ptr<twinbit::artifact::Artifact> art;
};

struct tb_engine {
  twinbit::Backend backend;
};

// A binding holds its backend (through the BoundWeights and the Backend made from it) and the
// artifact's file image (the BoundWeights' keep_alive), so it outlives both handles.
struct tb_bound {
  tb_bound(twinbit::BoundWeights w, const twinbit::artifact::Entry& e)
      : weights(std::move(w)), backend(weights.backend()), entry(e) {}
  twinbit::BoundWeights weights;
  twinbit::Backend backend;  // weights.backend(): the same state, to run the operations
  twinbit::artifact::Entry entry;
  tb_entry_info info{};      // info.name points into entry.name
};

struct tb_runtime {
  std::unique_ptr<twinbit::runtime::Runtime> rt;
};

namespace twinbit::api {

// The kinds of handle, so that a handle of one kind passed for another is refused too.
enum class HandleKind { kArtifact, kEngine, kBound, kRuntime };

void track_open(const void* handle, HandleKind kind);
// Hands a new handle to the caller: tracked as open, then released into *out (the one way a
// handle leaves the library, so every handle a caller holds is known to untrack/check_open).
template <typename Handle>
void publish(std::unique_ptr<Handle> handle, HandleKind kind, Handle** out) {
  track_open(handle.get(), kind);
  *out = handle.release();
}
// True (and forgotten) when `handle` was open as `kind`: the caller then deletes it.
bool untrack(const void* handle, HandleKind kind);
// OK when `handle` is open as `kind`; else INVALID_ARGUMENT "ARG is not an open TYPE ...".
Status check_open(const void* handle, HandleKind kind, const char* arg);

// An entry's C description (name points into e.name).
tb_entry_info entry_info(const artifact::Entry& e);

}  // namespace twinbit::api
