// The host C API's operations (include/twinbit/engine.h) against the scalar reference, by memcmp
// of whole output buffers (so a write outside the columns it may write is caught too): gemm in
// both modes on strip sets of random shapes and leading dimensions, gemv and the pair on float
// rows, the quantiser and the gated-delta step, on every CPU instruction set's spec; and the
// artifact and backend queries against the C++ objects they wrap.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/numerics.h"
#include "core/reference.h"
#include "core/registry.h"
#include "tests/test_c_api_util.h"
#include "tests/test_cpu_util.h"
#include "tests/test_runtime_util.h"

namespace twinbit::test {
namespace {

// A value no operation writes: outputs are prefilled with it in both buffers being compared.
constexpr float kUntouched = -12345.0f;

struct CApiHandles {
  tb_artifact* art = nullptr;
  tb_engine* engine = nullptr;
  std::unique_ptr<artifact::Artifact> cpp;  // the same file through C++, for the reference's views
  explicit CApiHandles(const std::string& spec) {
    REQUIRE_MESSAGE(tb_artifact_open(c_api_random_artifact().c_str(), &art) == TB_OK, std::string(tb_last_error()));
    REQUIRE_MESSAGE(tb_backend_open(spec.c_str(), &engine) == TB_OK, std::string(tb_last_error()));
    auto a = artifact::Artifact::open(c_api_random_artifact());
    REQUIRE(a.ok());
    cpp = std::move(a.value());
  }
  ~CApiHandles() {
    tb_backend_close(engine);
    tb_artifact_close(art);
  }
  tb_bound* bind(const std::string& entry) const {
    tb_bound* b = nullptr;
    REQUIRE_MESSAGE(tb_bind(engine, art, entry.c_str(), &b) == TB_OK, std::string(tb_last_error()));
    return b;
  }
};

std::vector<std::string> cpu_specs() {
  std::vector<std::string> specs = {"cpu"};
  for (cpu::Isa isa : cpu::runnable_isas()) specs.push_back(std::string("cpu,isa=") + cpu::isa_name(isa));
  return specs;
}

// gemm in both modes on every strip entry, random M and leading dims, on the backend `spec`.
// `may_decline`: the backend may answer UNIMPLEMENTED for a shape it does not support (the CUDA
// gemm for K % 32 != 0); then the output must be untouched, and at least one entry must run.
void check_gemm_on(const std::string& spec, bool may_decline = false) {
  std::mt19937_64 rng(5);
  int ran = 0;
  std::uniform_int_distribution<int64_t> rows(1, 40), extra(0, 5);
  {
    CAPTURE(spec);
    CApiHandles h(spec);
    for (int i = 0; i < kCApiStripEntries; ++i) {
      const std::string name = std::string("s").append(std::to_string(i));
      const tb_strips w = h.cpp->view(*h.cpp->find(name)).strips;
      tb_bound* b = h.bind(name);
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        const int64_t m = rows(rng), ldx = w.k + extra(rng), ldy = w.n + extra(rng);
        CAPTURE(name);
        CAPTURE(m);
        CAPTURE(static_cast<int>(mode));
        const std::vector<float> x = random_activations(m * ldx, rng());
        std::vector<float> want(static_cast<size_t>(m * ldy), kUntouched), got = want;
        if (mode == TB_ACT_F32) {
          ref::gemm_f32(w, m, x.data(), ldx, want.data(), ldy);
        } else {
          const int64_t kp = pad32(w.k);
          std::vector<int8_t> xq(static_cast<size_t>(m * kp));
          std::vector<float> xd(static_cast<size_t>(m * kp / 32));
          ref::quantize_activations(m, w.k, x.data(), ldx, xq.data(), kp, xd.data(), kp / 32);
          ref::gemm_i8(w, m, xq.data(), kp, xd.data(), kp / 32, want.data(), ldy);
        }
        const tb_code code = tb_bound_gemm(b, m, mode, x.data(), ldx, got.data(), ldy);
        if (may_decline && code == TB_UNIMPLEMENTED) {
          const std::vector<float> untouched(got.size(), kUntouched);
          CHECK(std::memcmp(got.data(), untouched.data(), got.size() * sizeof(float)) == 0);
          continue;
        }
        REQUIRE_MESSAGE(code == TB_OK, std::string(tb_last_error()));
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        ++ran;
      }
      tb_unbind(b);
    }
  }
  CHECK(ran > 0);
}

// gemv, the pair, the quantiser and the gated-delta step on the backend `spec`.
void check_other_ops_on(const std::string& spec) {
  {
    CAPTURE(spec);
    CApiHandles h(spec);
    const tb_matrix_f32 wa = h.cpp->view(*h.cpp->find("rows_a")).matrix;
    const tb_matrix_f32 wb = h.cpp->view(*h.cpp->find("rows_b")).matrix;
    tb_bound* a = h.bind("rows_a");
    tb_bound* b = h.bind("rows_b");
    const std::vector<float> x = random_activations(wa.cols, 77);
    std::vector<float> want_a(wa.rows), want_b(wb.rows), got_a(wa.rows, kUntouched), got_b(wb.rows, kUntouched);
    ref::gemv_f32(wa, x.data(), want_a.data());
    ref::gemv_f32(wb, x.data(), want_b.data());
    REQUIRE_MESSAGE(tb_bound_gemv_f32(a, x.data(), got_a.data()) == TB_OK, std::string(tb_last_error()));
    CHECK(std::memcmp(got_a.data(), want_a.data(), got_a.size() * sizeof(float)) == 0);
    std::fill(got_a.begin(), got_a.end(), kUntouched);
    REQUIRE_MESSAGE(tb_bound_gemv_pair(a, b, x.data(), got_a.data(), got_b.data()) == TB_OK, std::string(tb_last_error()));
    CHECK(std::memcmp(got_a.data(), want_a.data(), got_a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(got_b.data(), want_b.data(), got_b.size() * sizeof(float)) == 0);
    tb_unbind(a);
    tb_unbind(b);

    std::mt19937_64 rng(9);
    for (int trial = 0; trial < 6; ++trial) {
      const int64_t m = 1 + static_cast<int64_t>(rng() % 20), k = 1 + static_cast<int64_t>(rng() % 300);
      const int64_t kp = pad32(k), ldx = k + static_cast<int64_t>(rng() % 4);
      const int64_t ldxq = kp + static_cast<int64_t>(rng() % 40), ldxd = kp / 32 + static_cast<int64_t>(rng() % 3);
      CAPTURE(m);
      CAPTURE(k);
      const std::vector<float> xs = random_activations(m * ldx, rng());
      std::vector<int8_t> xq_want(static_cast<size_t>(m * ldxq), 99), xq_got = xq_want;
      std::vector<float> xd_want(static_cast<size_t>(m * ldxd), kUntouched), xd_got = xd_want;
      ref::quantize_activations(m, k, xs.data(), ldx, xq_want.data(), ldxq, xd_want.data(), ldxd);
      REQUIRE_MESSAGE(tb_quantize_i8(h.engine, m, k, xs.data(), ldx, xq_got.data(), ldxq, xd_got.data(), ldxd) == TB_OK,
                      std::string(tb_last_error()));
      CHECK(std::memcmp(xq_got.data(), xq_want.data(), xq_got.size()) == 0);
      CHECK(std::memcmp(xd_got.data(), xd_want.data(), xd_got.size() * sizeof(float)) == 0);
    }

    struct Dims { int64_t vh, kh, kd, vd; };
    for (const Dims d : {Dims{4, 2, 128, 128}, Dims{3, 1, 64, 37}, Dims{2, 1, 5, 3}}) {
      CAPTURE(d.kd);
      CAPTURE(d.vd);
      const uint64_t seed = static_cast<uint64_t>(d.vh * 100 + d.kd + d.vd);
      std::vector<float> state = random_activations(d.vh * d.kd * d.vd, seed);
      const std::vector<float> q = random_activations(d.kh * d.kd, seed + 1), k = random_activations(d.kh * d.kd, seed + 2);
      const std::vector<float> v = random_activations(d.vh * d.vd, seed + 3), g = random_activations(d.vh, seed + 4);
      const std::vector<float> beta = random_activations(d.vh, seed + 5);
      std::vector<float> state_want = state, o_want(static_cast<size_t>(d.vh * d.vd)), o_got(o_want.size(), kUntouched);
      const tb_gdn_args want{d.vh, d.kh, d.kd, d.vd, state_want.data(), q.data(), k.data(), v.data(), g.data(),
                             beta.data(), o_want.data()};
      ref::gdn_delta(want);
      tb_gdn_args got = want;
      got.state = state.data();
      got.o = o_got.data();
      REQUIRE_MESSAGE(tb_gdn_delta(h.engine, &got) == TB_OK, std::string(tb_last_error()));
      CHECK(std::memcmp(o_got.data(), o_want.data(), o_got.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(state.data(), state_want.data(), state.size() * sizeof(float)) == 0);
    }
  }
}

}  // namespace

TEST_SUITE("c_api") {

TEST_CASE("c_api_bound_gemm_equals_the_reference_on_random_shapes_and_leading_dims") {
  for (const std::string& spec : cpu_specs()) check_gemm_on(spec);
}

TEST_CASE("c_api_gemv_pair_quantize_and_gdn_equal_the_reference") {
  for (const std::string& spec : cpu_specs()) check_other_ops_on(spec);
}


TEST_CASE("c_api_artifact_entries_and_backends_match_the_cpp_objects") {
  tb_artifact* art = nullptr;
  REQUIRE(tb_artifact_open(c_api_random_artifact().c_str(), &art) == TB_OK);
  auto cpp = artifact::Artifact::open(c_api_random_artifact());
  REQUIRE(cpp.ok());
  CHECK(tb_artifact_verify(art) == TB_OK);
  size_t count = 0;
  REQUIRE(tb_artifact_entry_count(art, &count) == TB_OK);
  REQUIRE(count == cpp.value()->entries().size());
  CHECK(count == kCApiStripEntries + 3);
  for (size_t i = 0; i < count; ++i) {
    const artifact::Entry& e = cpp.value()->entries()[i];
    CAPTURE(e.name);
    tb_entry_info info{};
    REQUIRE(tb_artifact_entry(art, i, &info) == TB_OK);
    CHECK(std::string(info.name) == e.name);
    CHECK(info.kind == e.kind);
    uint64_t bytes = 0;
    for (const auto& p : e.payloads) bytes += p.bytes;
    CHECK(info.bytes == bytes);
    if (e.kind == TB_WEIGHTS_STRIPS) {
      CHECK((info.prec == e.prec && info.n == e.n && info.k == e.k && info.rows == 0 && info.cols == 0));
    } else {
      CHECK((info.rows == e.n && info.cols == e.k && info.n == 0 && info.k == 0));
    }
    size_t index = count;
    REQUIRE(tb_artifact_find(art, e.name.c_str(), &index) == TB_OK);
    CHECK(index == i);
  }
  tb_artifact_close(art);

  CHECK(std::string(tb_version_string()) == TWINBIT_TEST_VERSION);
  CHECK(tb_backend_abi_version() == TB_BACKEND_ABI_VERSION);
  const auto builtins = builtin_backends();
  REQUIRE(tb_backend_count() == builtins.size());
  for (size_t i = 0; i < builtins.size(); ++i) {
    const char* name = nullptr;
    REQUIRE(tb_backend_name(i, &name) == TB_OK);
    CHECK(std::string(name) == builtins[i].name);

    // tb_devices agrees with the registry's listing (what `twinbit devices` prints).
    BackendSpec spec;
    spec.name = builtins[i].name;
    auto names = list_devices(spec);
    size_t n_devices = 99;
    const tb_code code = tb_devices(name, nullptr, 0, &n_devices);
    CAPTURE(name);
    if (!names.ok()) {
      check_failure(code, names.status().code(), names.status().message());
      continue;
    }
    REQUIRE_MESSAGE(code == TB_OK, std::string(tb_last_error()));
    REQUIRE(n_devices == names->size());
    std::vector<tb_device_entry> devices(n_devices);
    REQUIRE(tb_devices(name, devices.data(), devices.size(), &n_devices) == TB_OK);
    for (size_t d = 0; d < n_devices; ++d) {
      spec.device = static_cast<int32_t>(d);
      auto b = create_backend(spec);
      CHECK(devices[d].index == static_cast<int32_t>(d));
      CHECK(std::string(devices[d].spec) == std::string(name) + ":" + std::to_string(d));
      CHECK(std::string(devices[d].name) == (*names)[d]);
      CHECK(devices[d].available == (b.ok() ? 1 : 0));
      if (b.ok()) {
        CHECK(std::string(devices[d].description) == b->device().substr(0, TB_DEVICE_TEXT_CAPACITY - 1));
        CHECK(std::string(devices[d].features) == b->features().substr(0, TB_DEVICE_TEXT_CAPACITY - 1));
      }
    }
  }

  // describe gives the backend's identity, as the C++ wrapper reads it.
  tb_engine* engine = nullptr;
  REQUIRE(tb_backend_open("cpu,isa=sse2", &engine) == TB_OK);
  auto cpp_backend = create_backend("cpu,isa=sse2");
  REQUIRE(cpp_backend.ok());
  tb_backend_info info{};
  REQUIRE(tb_backend_describe(engine, &info) == TB_OK);
  CHECK(std::string(info.name) == "cpu");
  CHECK(std::string(info.device) == cpp_backend->device());
  CHECK(std::string(info.features) == cpp_backend->features());
  CHECK(info.memory_bytes == cpp_backend->memory_bytes());
  tb_backend_close(engine);
}

}  // TEST_SUITE

TEST_SUITE("gpu") {

TEST_CASE("gpu c_api: every operation on cuda equals the reference") {
  tb_engine* engine = nullptr;
  if (tb_backend_open("cuda", &engine) != TB_OK) {
    MESSAGE("SKIPPED (no CUDA backend here): " << std::string(tb_last_error()));
    return;
  }
  tb_backend_close(engine);
  check_gemm_on("cuda", /*may_decline=*/true);
  check_other_ops_on("cuda");
}

}  // TEST_SUITE
}  // namespace twinbit::test
