// The host C API's way to a backend's private entries (tb_backend_proc, tb_bound_backend_handle):
// a switch found by name and called with the context it gives, names the backend lacks refused
// with both named, bad arguments and closed handles refused, and a binding's backend handle.
#include <doctest/doctest.h>

#include <string>

#include <twinbit/cuda_device.h>
#include <twinbit/twinbit.h>

#include "tests/test_c_api_util.h"

namespace twinbit::test {
namespace {

TEST_CASE("c_api_backend_proc_finds_a_switch_and_calls_it_with_its_context; unknown names, bad arguments and closed handles refused") {
  tb_engine* engine = nullptr;
  REQUIRE(tb_backend_open("cpu", &engine) == TB_OK);
  void* fn = nullptr;
  void* ctx = nullptr;
  REQUIRE_MESSAGE(tb_backend_proc(engine, "cpu.set_prefetch_bytes", &fn, &ctx) == TB_OK, std::string(tb_last_error()));
  REQUIRE(fn != nullptr);
  REQUIRE(ctx != nullptr);
  const auto set = reinterpret_cast<tb_switch_fn>(fn);
  tb_error err{};
  CHECK(set(ctx, 4096, &err) == TB_OK);
  CHECK(set(ctx, 70000, &err) == TB_INVALID_ARGUMENT);  // the switch's own range check ran
  CHECK(std::string(err.message).find("cpu.set_prefetch_bytes") != std::string::npos);
  CHECK(set(ctx, 0, &err) == TB_OK);

  // The CUDA backend's device-resident calls are the CUDA backend's only.
  check_failure(tb_backend_proc(engine, TB_CUDA_GEMM_DEVICE, &fn, &ctx), TB_UNIMPLEMENTED,
                "backend 'cpu' has no entry 'cuda.gemm_device'");
  CHECK(fn == nullptr);
  CHECK(ctx == nullptr);
  check_failure(tb_backend_proc(engine, nullptr, &fn, &ctx), TB_INVALID_ARGUMENT, "name");
  check_failure(tb_backend_proc(engine, "cpu.set_prefetch_bytes", nullptr, &ctx), TB_INVALID_ARGUMENT, "fn");
  check_failure(tb_backend_proc(engine, "cpu.set_prefetch_bytes", &fn, nullptr), TB_INVALID_ARGUMENT, "ctx");
  check_failure(tb_backend_proc(nullptr, "cpu.set_prefetch_bytes", &fn, &ctx), TB_INVALID_ARGUMENT, "engine");
  tb_backend_close(engine);
  check_failure(tb_backend_proc(engine, "cpu.set_prefetch_bytes", &fn, &ctx), TB_INVALID_ARGUMENT, "engine");
}

TEST_CASE("c_api_bound_backend_handle_is_the_backends_own_per_binding; null output and closed bindings refused") {
  tb_artifact* art = nullptr;
  tb_engine* engine = nullptr;
  REQUIRE(tb_artifact_open(c_api_random_artifact().c_str(), &art) == TB_OK);
  REQUIRE(tb_backend_open("cpu", &engine) == TB_OK);
  tb_bound* a = nullptr;
  tb_bound* b = nullptr;
  REQUIRE(tb_bind(engine, art, "s2", &a) == TB_OK);
  REQUIRE(tb_bind(engine, art, "s3", &b) == TB_OK);
  void* ha = nullptr;
  void* hb = nullptr;
  REQUIRE(tb_bound_backend_handle(a, &ha) == TB_OK);
  REQUIRE(tb_bound_backend_handle(b, &hb) == TB_OK);
  CHECK(ha != nullptr);
  CHECK(hb != nullptr);
  CHECK(ha != hb);
  check_failure(tb_bound_backend_handle(a, nullptr), TB_INVALID_ARGUMENT, "handle");
  tb_unbind(b);
  check_failure(tb_bound_backend_handle(b, &hb), TB_INVALID_ARGUMENT, "bound");
  tb_unbind(a);
  tb_backend_close(engine);
  tb_artifact_close(art);
}

}  // namespace
}  // namespace twinbit::test
