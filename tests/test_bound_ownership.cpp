// Bindings own what they use (core/backend.hpp): a BoundWeights keeps alive the backend it was
// bound on and the file image its view points into. Each test binds, destroys the Backend wrapper
// and the Artifact object, then uses the binding: it must work and give the reference's bits.
// Under AddressSanitizer a dangling use (the mapping, the backend's context) is an error.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "artifacts/artifact.h"
#include "core/backend.hpp"
#include "core/reference.h"
#include "core/registry.h"
#include "tests/test_artifact_util.h"

namespace twinbit::test {
namespace {

std::vector<float> activations(int64_t m, int64_t k) {
  std::vector<float> x(static_cast<size_t>(m * k));
  std::mt19937 rng(11);
  for (float& f : x) f = std::uniform_real_distribution<float>(-3, 3)(rng);
  return x;
}

// Binds the q8 entry of a small artifact on `backend_name`, then drops the Backend and the
// Artifact objects before returning the binding with the reference's output for it.
struct Kept {
  BoundWeights bound;
  std::vector<float> want;
  std::vector<float> x;
  int64_t m = 3, n = 0, k = 0;
};

Kept bind_then_drop(const std::string& path, artifact::ReadMode mode, const char* backend_name,
                    const char* plugin = nullptr) {
  Kept out;
  std::optional<Backend> backend;
  {
    auto b = plugin ? load_plugin(plugin) : create_backend(backend_name);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    backend.emplace(std::move(b).value());
  }
  {
    auto art = artifact::Artifact::open(path, {mode});
    REQUIRE_MESSAGE(art.ok(), art.status().to_string());
    const artifact::Entry* e = art.value()->find("blk.0.attn_qkv");
    REQUIRE(e);
    auto w = art.value()->weights(*e);
    REQUIRE_MESSAGE(w.ok(), w.status().to_string());
    const tb_strips s = w->view.strips;
    out.n = s.n;
    out.k = s.k;
    out.x = activations(out.m, out.k);
    out.want.assign(static_cast<size_t>(out.m * out.n), 0.0f);
    ref::gemm_f32(s, out.m, out.x.data(), out.k, out.want.data(), out.n);
    auto bound = backend->bind(w->view, w->keep_alive);
    REQUIRE_MESSAGE(bound.ok(), bound.status().to_string());
    out.bound = std::move(bound).value();
  }                 // the Artifact object and the Weights are gone ...
  backend.reset();  // ... and so is the Backend wrapper
  return out;
}

void use_and_compare(const Kept& kept) {
  const Backend b = kept.bound.backend();  // the backend, kept alive by the binding
  std::vector<float> y(kept.want.size(), -1.0f);
  tb_gemm_args a{};
  a.mode = TB_ACT_F32;
  a.m = kept.m;
  a.x = kept.x.data();
  a.ldx = kept.k;
  a.y = y.data();
  a.ldy = kept.n;
  const Status st = b.gemm(kept.bound, a);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  CHECK(std::memcmp(y.data(), kept.want.data(), y.size() * 4) == 0);
  // The view still reads the file's bytes (the mapping is alive): the reference agrees too.
  std::vector<float> again(kept.want.size());
  ref::gemm_f32(kept.bound.view().strips, kept.m, kept.x.data(), kept.k, again.data(), kept.n);
  CHECK(std::memcmp(again.data(), kept.want.data(), again.size() * 4) == 0);
}

TEST_CASE("bound ownership: a cpu binding outlives its Backend wrapper and its mapped Artifact") {
  testart::TempDir dir;
  const std::string path = dir.path + "/small.tbc";
  testart::Small small = testart::make_small();
  REQUIRE(small.writer.write(path, small.provenance).ok());
  for (artifact::ReadMode mode : {artifact::ReadMode::kMap, artifact::ReadMode::kCopy}) {
    Kept kept = bind_then_drop(path, mode, "cpu");
    use_and_compare(kept);
  }
}

int destroy_calls(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(lib, path);
  auto fn = reinterpret_cast<int (*)()>(dlsym(lib, "tb_abi_plugin_destroy_calls"));
  REQUIRE(static_cast<bool>(fn));
  const int n = fn();
  dlclose(lib);
  return n;
}

TEST_CASE("bound ownership: a plugin's destroy waits for its last binding") {
  REQUIRE(load_plugin(TWINBIT_ABI_PLUGIN_FULL).ok());  // loaded (and its first backend gone)
  const int before = destroy_calls(TWINBIT_ABI_PLUGIN_FULL);
  testart::TempDir dir;
  const std::string path = dir.path + "/small.tbc";
  testart::Small small = testart::make_small();
  REQUIRE(small.writer.write(path, small.provenance).ok());
  Kept kept = bind_then_drop(path, artifact::ReadMode::kMap, nullptr, TWINBIT_ABI_PLUGIN_FULL);
  use_and_compare(kept);
  Kept second = bind_then_drop(path, artifact::ReadMode::kMap, nullptr, TWINBIT_ABI_PLUGIN_FULL);
  use_and_compare(second);
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_FULL) == before);  // both wrappers gone, not destroyed
  // Moving a binding moves its references; releasing it is what lets the backend go.
  BoundWeights moved = std::move(kept.bound);
  CHECK(kept.bound.handle() == nullptr);
  CHECK_FALSE(static_cast<bool>(kept.bound.backend()));
  moved.reset();
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_FULL) == before + 1);
  second.bound.reset();
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_FULL) == before + 2);
}

TEST_CASE("bound ownership: an empty binding gives an empty backend; bind without keep_alive still works") {
  BoundWeights empty;
  CHECK_FALSE(static_cast<bool>(empty.backend()));
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  std::vector<float> m(6, 1.0f);
  tb_weights_view v{};
  v.kind = TB_WEIGHTS_F32;
  v.matrix = {2, 3, m.data()};
  auto w = cpu->bind(v);  // the caller keeps m alive
  REQUIRE(w.ok());
  std::vector<float> x(3, 2.0f), y(2), want(2);
  REQUIRE(cpu->gemv_f32(w.value(), x.data(), y.data()).ok());
  ref::gemv_f32(v.matrix, x.data(), want.data());
  CHECK(std::memcmp(y.data(), want.data(), 8) == 0);
}

}  // namespace
}  // namespace twinbit::test
