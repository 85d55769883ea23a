// twinbit::Backend - the C++ face of a tb_backend: owns it, checks arguments before they reach
// the backend, and supplies the defaults of the optional entries (written here, once).
//
// Thread safety is that of the underlying backend (see core/backend.h). A Backend is movable,
// not copyable; destroying it destroys the backend (release bound weights first).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/status.hpp"

namespace twinbit {

class Backend;

// A bound weight handle; released when destroyed. Holds the backend's function table and
// context (not the Backend object, so moving the Backend is safe); the backend must outlive it.
class BoundWeights {
 public:
  BoundWeights() = default;
  BoundWeights(const tb_backend& backend, void* handle, const tb_weights_view& view)
      : backend_(backend), handle_(handle), view_(view) {}
  BoundWeights(BoundWeights&& o) noexcept { *this = std::move(o); }
  BoundWeights& operator=(BoundWeights&& o) noexcept;
  BoundWeights(const BoundWeights&) = delete;
  BoundWeights& operator=(const BoundWeights&) = delete;
  ~BoundWeights() { reset(); }

  void reset();
  void* handle() const { return handle_; }
  const tb_weights_view& view() const { return view_; }

 private:
  tb_backend backend_{};
  void* handle_ = nullptr;
  tb_weights_view view_{};
};

class Backend {
 public:
  // Takes ownership of `raw`; checks the ABI version and the table's required entries.
  static Result<Backend> adopt(tb_backend raw);

  Backend(Backend&& o) noexcept
      : raw_(o.raw_), name_(std::move(o.name_)), device_(std::move(o.device_)),
        features_(std::move(o.features_)), memory_bytes_(o.memory_bytes_) {
    o.raw_ = {};
  }
  Backend& operator=(Backend&& o) noexcept;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  ~Backend();

  const std::string& name() const { return name_; }
  const std::string& device() const { return device_; }
  const std::string& features() const { return features_; }
  uint64_t memory_bytes() const { return memory_bytes_; }

  Status supports(const tb_op_desc& op) const;
  Result<BoundWeights> bind(const tb_weights_view& view) const;

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

  const tb_backend& raw() const { return raw_; }

 private:
  explicit Backend(tb_backend raw) : raw_(raw) {}
  tb_backend raw_{};
  std::string name_, device_, features_;
  uint64_t memory_bytes_ = 0;
};

}  // namespace twinbit
