// The objects the Python classes wrap, shared by the binding files.
//
// LIFETIMES. An Artifact may be closed (close(), or leaving its `with` block); using it after
// that is FAILED_PRECONDITION. A Bound holds its backend's state and the artifact's file image
// (BoundWeights, core/backend.hpp), so it keeps working after `del artifact`, `del backend` or
// artifact.close(): Python's references and the library's own agree.
#pragma once

#include <memory>
#include <string>

#include "artifacts/artifact.h"
#include "common.h"
#include "core/backend.hpp"

namespace twinbit::py {

struct PyArtifact {
  std::shared_ptr<artifact::Artifact> art;  // null once closed
  std::string path;
  const artifact::Artifact& get() const;    // FAILED_PRECONDITION when closed
  // The same, shared: held across a GIL release so that close() on another thread cannot free it.
  std::shared_ptr<const artifact::Artifact> hold() const;
  // The entry called `name`; INVALID_ARGUMENT listing the entries when absent.
  const artifact::Entry& entry(const std::string& name) const;
};

struct PyBackend {
  std::shared_ptr<Backend> backend;
  std::string spec;
};

struct PyBound {
  std::shared_ptr<Backend> backend;  // shares the state BoundWeights holds
  artifact::Entry entry;             // a copy: the artifact may be closed
  BoundWeights weights;
};

// "strips" / "matrix_f32"; "q8" / "q4" (None for a float matrix).
const char* kind_name(tb_weights_kind kind);
const char* prec_short_name(tb_prec prec);

}  // namespace twinbit::py

namespace twinbit::py {
// One gated-delta step (twinbit/backend.h tb_gdn_args) on `backend`, or on the scalar reference
// when it is null: returns (state', o) as new arrays; the inputs are not modified.
nb::tuple gdn_delta(const Backend* backend, const AnyArray& state, const AnyArray& q, const AnyArray& k,
                    const AnyArray& v, const AnyArray& g, const AnyArray& beta);
// The entry's strips / float matrix, or TypeError naming the entry and what it is.
const tb_strips& strips_of(const PyBound& b, const char* op);
const tb_matrix_f32& matrix_of(const PyBound& b, const char* op);
}  // namespace twinbit::py
