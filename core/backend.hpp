// twinbit::Backend - the C++ face of a tb_backend: owns it, checks arguments before they reach
// the backend, and supplies the defaults of the optional entries (written here, once).
//
// OWNERSHIP. A Backend and every BoundWeights made by it share one reference-counted state that
// owns the tb_backend; the backend's destroy runs when the last of them is gone. A BoundWeights
// also holds `keep_alive`, whatever owns the memory its view points into (an artifact's file
// image: artifacts/artifact.h, Artifact::weights). So a binding stays usable after the Backend
// wrapper and the Artifact object that produced it are destroyed.
//
// Thread safety is that of the underlying backend (see twinbit/backend.h). A Backend is movable,
// not copyable (a moved-from Backend is empty: only destruction and assignment are allowed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit {

class Backend;

namespace detail {
// The adopted tb_backend and its identity; the destructor calls destroy. Exists only for tables
// that passed the adoption checks (Backend::adopt), so a refused table is never called.
struct BackendState {
  explicit BackendState(tb_backend r) : raw(r) {}
  BackendState(const BackendState&) = delete;
  BackendState& operator=(const BackendState&) = delete;
  ~BackendState() { raw.iface->destroy(raw.ctx); }
  tb_backend raw;
  std::string name, device, features;  // from describe(), at adoption
  uint64_t memory_bytes = 0;
};
}  // namespace detail

// A bound weight handle; released when destroyed (then it drops its references: the backend
// and the memory may go after it).
class BoundWeights {
 public:
  BoundWeights() = default;
  BoundWeights(std::shared_ptr<const detail::BackendState> backend, void* handle,
               const tb_weights_view& view, std::shared_ptr<const void> keep_alive)
      : backend_(std::move(backend)), handle_(handle), view_(view),
        keep_alive_(std::move(keep_alive)) {}
  BoundWeights(BoundWeights&& o) noexcept { *this = std::move(o); }
  BoundWeights& operator=(BoundWeights&& o) noexcept;
  BoundWeights(const BoundWeights&) = delete;
  BoundWeights& operator=(const BoundWeights&) = delete;
  ~BoundWeights() { reset(); }

  void reset();
  void* handle() const { return handle_; }
  // The backend it was bound on (sharing its state), to run operations on it after the Backend
  // object that bound it is gone. An empty handle gives an empty Backend.
  Backend backend() const;
  const tb_weights_view& view() const { return view_; }

 private:
  std::shared_ptr<const detail::BackendState> backend_;
  void* handle_ = nullptr;
  tb_weights_view view_{};
  std::shared_ptr<const void> keep_alive_;
};

class Backend {
 public:
  // Checks the table BEFORE taking ownership: a null table, another ABI version (both named), a
  // struct_size below TB_IFACE_MIN_SIZE (both sizes named) or a null required entry (named) is
  // refused and the table is never called, not even destroy. Once the checks pass, `raw` is
  // owned: destroyed on any later error (describe failing) and when the last user is gone.
  static Result<Backend> adopt(tb_backend raw);

  Backend(Backend&& o) noexcept = default;
  Backend& operator=(Backend&& o) noexcept = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  ~Backend() = default;

  const std::string& name() const { return state_->name; }
  const std::string& device() const { return state_->device; }
  const std::string& features() const { return state_->features; }
  uint64_t memory_bytes() const { return state_->memory_bytes; }

  Status supports(const tb_op_desc& op) const;
  // `keep_alive` owns the memory `view` points into (may be null when the caller guarantees it
  // outlives the binding); the binding holds it until released.
  Result<BoundWeights> bind(const tb_weights_view& view,
                            std::shared_ptr<const void> keep_alive = nullptr) const;

  // Each checks its arguments (core/op_checks.h) and then asks supports() before calling in, so
  // a backend never sees an impossible or unclaimed call.
  Status gemm(const BoundWeights& w, const tb_gemm_args& args) const;
  Status gemv_f32(const BoundWeights& w, const float* x, float* y) const;
  // Default when the backend has no pair entry: two gemv_f32 calls.
  Status gemv_f32_pair(const BoundWeights& a, const BoundWeights& b, const float* x, float* ya,
                       float* yb) const;
  Status gdn_delta(const tb_gdn_args& args) const;
  // Default when the backend has no read_floor entry: UNIMPLEMENTED. An M outside
  // kMinRows .. kMaxRows (core/rows.h) is INVALID_ARGUMENT, as for gemm.
  Status read_floor(const BoundWeights& w, int64_t m) const;
  // The I8 activation quantiser (== ref::quantize_activations). Default when the backend has no
  // quantize_i8 entry, or its supports() declines the shape: the scalar reference on this thread.
  Status quantize_i8(const tb_quantize_args& args) const;
  bool has_quantize_i8() const;

  // A backend-private entry by name (tb_backend_iface::get_proc); null when the backend has no
  // get_proc or does not know the name. The backend documents each name's function type.
  void* proc(const char* name) const;
  // Sets a backend-private switch (tb_switch_fn) found by proc(name). UNIMPLEMENTED naming the
  // backend and the switch when the backend has no such name; the backend's own error otherwise.
  Status set_switch(const char* name, int64_t value) const;
  // Whether the table provides an optional entry (TB_IFACE_HAS through the wrapper).
  bool has_gemv_f32_pair() const;
  bool has_read_floor() const;

  // False only for a moved-from Backend or the backend() of an empty BoundWeights.
  explicit operator bool() const { return state_ != nullptr; }
  const tb_backend& raw() const { return state_->raw; }

 private:
  explicit Backend(std::shared_ptr<const detail::BackendState> state) : state_(std::move(state)) {}
  const tb_backend_iface& iface() const { return *state_->raw.iface; }
  void* ctx() const { return state_->raw.ctx; }
  std::shared_ptr<const detail::BackendState> state_;
  friend class BoundWeights;
};

// Capability tags: a backend's describe().features split at commas, spaces trimmed. Tags with a
// meaning outside the suite's reports: "reference" (computes with the scalar reference; the suite
// says its run is not evidence) and "emulated" (the device is emulated on the host, exactly but
// slowly: the runtime's default plan leaves it out, an override still places calls there).
std::vector<std::string> split_feature_tags(const std::string& features);
bool has_feature_tag(const std::string& features, const std::string& tag);

}  // namespace twinbit
