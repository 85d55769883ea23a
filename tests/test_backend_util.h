// A backend made in-process from its create function, for tests that hold one directly (the
// deliberately broken backends of broken_backends.h, the test reference): creation with no
// parameters and the adoption of the table must both succeed, or the test stops there.
#pragma once

#include <doctest/doctest.h>

#include <utility>

#include <twinbit/backend.h>
#include "core/backend.hpp"

namespace twinbit::testing {

inline Backend make_backend(tb_backend_create_fn create) {
  tb_backend raw{};
  tb_error err{};
  REQUIRE(create(TB_BACKEND_ABI_VERSION, &raw, &err, nullptr) == TB_OK);
  auto b = Backend::adopt(raw);
  REQUIRE(b.ok());
  return std::move(b).value();
}

}  // namespace twinbit::testing
