// The growable ABI (twinbit/backend.h): the host adopts a table only after checking its version,
// its struct_size and its required entries, reads only the entries inside struct_size, and never
// calls a refused table - not even destroy. The plugins are built from tests/abi_plugins, whose
// tables end at a PROT_NONE page: a read past struct_size faults the test.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "artifacts/quantize.h"
#include "core/backend.hpp"
#include "core/reference.h"
#include "core/registry.h"
#include "tests/test_support.h"

namespace twinbit::test {
namespace {

using twinbit::testing::HandStrips;

// The plugin's count of destroy calls (it is already loaded: load_plugin keeps it loaded).
int destroy_calls(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(lib, path);
  auto fn = reinterpret_cast<int (*)()>(dlsym(lib, "tb_abi_plugin_destroy_calls"));
  REQUIRE(static_cast<bool>(fn));
  const int n = fn();
  dlclose(lib);  // drops only the reference taken here
  return n;
}

HandStrips random_strips(int64_t n, int64_t k, uint32_t seed) {
  HandStrips s(TB_PREC_Q8, n, k);
  std::mt19937 rng(seed);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t kk = 0; kk < k; ++kk) s.set(c, kk, static_cast<int>(rng() % 255) - 127);
    for (int64_t g = 0; g < pad32(k) / 32; ++g) s.set_scale(c, g, 0x2c00 + (rng() % 64));
  }
  return s;
}

// gemm (F32 and, through Backend::quantize_i8, I8) on the plugin gives the reference's bits.
void check_ops_exact(const Backend& b) {
  const int64_t m = 3, n = 40, k = 70, kp = pad32(k);
  HandStrips s = random_strips(n, k, 7);
  tb_weights_view v{};
  v.kind = TB_WEIGHTS_STRIPS;
  v.strips = s.view();
  auto w = b.bind(v);
  REQUIRE_MESSAGE(w.ok(), w.status().to_string());
  std::vector<float> x(m * k);
  std::mt19937 rng(3);
  for (float& f : x) f = std::uniform_real_distribution<float>(-2, 2)(rng);

  std::vector<float> y(m * n), want(m * n);
  tb_gemm_args a{};
  a.mode = TB_ACT_F32;
  a.m = m;
  a.x = x.data();
  a.ldx = k;
  a.y = y.data();
  a.ldy = n;
  REQUIRE(b.gemm(w.value(), a).ok());
  ref::gemm_f32(v.strips, m, x.data(), k, want.data(), n);
  CHECK(std::memcmp(y.data(), want.data(), y.size() * 4) == 0);

  std::vector<int8_t> xq(m * kp, 99), want_q(m * kp);
  std::vector<float> xd(m * kp / 32, -1), want_d(m * kp / 32);
  const tb_quantize_args q{m, k, x.data(), k, xq.data(), kp, xd.data(), kp / 32};
  REQUIRE(b.quantize_i8(q).ok());
  ref::quantize_activations(m, k, x.data(), k, want_q.data(), kp, want_d.data(), kp / 32);
  CHECK(std::memcmp(xq.data(), want_q.data(), xq.size()) == 0);
  CHECK(std::memcmp(xd.data(), want_d.data(), xd.size() * 4) == 0);
}

TEST_CASE("abi: the layout - header first, then the required entries, then the optional ones") {
  CHECK(offsetof(tb_backend_iface, abi_version) == 0);
  CHECK(offsetof(tb_backend_iface, struct_size) == 4);
  CHECK(offsetof(tb_backend_iface, describe) == 8);
  CHECK(TB_IFACE_MIN_SIZE == offsetof(tb_backend_iface, destroy) + sizeof(void*));
  CHECK(offsetof(tb_backend_iface, gemv_f32_pair) == TB_IFACE_MIN_SIZE);
  CHECK(offsetof(tb_backend_iface, get_proc) + sizeof(void*) == sizeof(tb_backend_iface));
  CHECK(TB_BACKEND_ABI_VERSION == 2u);
  CHECK(std::string(TB_PLUGIN_ENTRY_SYMBOL) == "tb_backend_create_v1");
}

TEST_CASE("abi: TB_IFACE_HAS needs the entry inside struct_size and non-null") {
  tb_backend_iface t{};
  t.struct_size = sizeof t;
  t.get_proc = [](void*, const char*) -> void* { return nullptr; };
  CHECK(TB_IFACE_HAS(&t, get_proc));
  CHECK_FALSE(TB_IFACE_HAS(&t, quantize_i8));  // inside, but null
  t.struct_size = static_cast<uint32_t>(offsetof(tb_backend_iface, get_proc));
  CHECK_FALSE(TB_IFACE_HAS(&t, get_proc));     // set, but outside
}

TEST_CASE("abi: the full table of this header is adopted; destroy runs once, after the last binding") {
  {
    auto b = load_plugin(TWINBIT_ABI_PLUGIN_FULL);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    CHECK(b->name() == "abi_test");
    CHECK(b->has_quantize_i8());
    CHECK(b->has_gemv_f32_pair());
    CHECK_FALSE(b->has_read_floor());
    CHECK(b->proc("abi_test.nothing") == nullptr);
    check_ops_exact(b.value());
  }
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_FULL) == 1);
}

TEST_CASE("abi: a table that stops before the last optional entry works; get_proc is absent, never read") {
  {
    auto b = load_plugin(TWINBIT_ABI_PLUGIN_CUT);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    CHECK(b->raw().iface->struct_size == offsetof(tb_backend_iface, get_proc));
    CHECK(b->has_quantize_i8());    // inside: used
    CHECK(b->proc("anything") == nullptr);  // outside: reading it would fault on the guard page
    check_ops_exact(b.value());
  }
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_CUT) == 1);
}

TEST_CASE("abi: a table shorter than the required part is refused, naming both sizes; destroy is never called") {
  auto b = load_plugin(TWINBIT_ABI_PLUGIN_SHORT);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == TB_FAILED_PRECONDITION);
  const std::string want = "backend function table is " +
                           std::to_string(offsetof(tb_backend_iface, destroy)) +
                           " bytes, shorter than the " + std::to_string(TB_IFACE_MIN_SIZE) + " bytes";
  CHECK_MESSAGE(b.status().message().find(want) != std::string::npos, b.status().message());
  CHECK(b.status().message().find(TWINBIT_ABI_PLUGIN_SHORT) != std::string::npos);
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_SHORT) == 0);
}

TEST_CASE("abi: a null required entry is refused, naming it; destroy is never called") {
  auto b = load_plugin(TWINBIT_ABI_PLUGIN_NULL_GEMM);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == TB_INVALID_ARGUMENT);
  CHECK_MESSAGE(b.status().message().find("lacks the required entry gemm") != std::string::npos,
                b.status().message());
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_NULL_GEMM) == 0);
}

TEST_CASE("abi: tables of version 1 and 3 are refused, naming both versions; destroy is never called") {
  auto v1 = load_plugin(TWINBIT_ABI_PLUGIN_V1);
  REQUIRE_FALSE(v1.ok());
  CHECK(v1.status().code() == TB_FAILED_PRECONDITION);
  CHECK_MESSAGE(v1.status().message().find("backend speaks ABI version 1, this library speaks 2") !=
                std::string::npos, v1.status().message());
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_V1) == 0);
  auto v3 = load_plugin(TWINBIT_ABI_PLUGIN_V3);
  REQUIRE_FALSE(v3.ok());
  CHECK(v3.status().code() == TB_FAILED_PRECONDITION);
  CHECK_MESSAGE(v3.status().message().find("backend speaks ABI version 3, this library speaks 2") !=
                std::string::npos, v3.status().message());
  CHECK(destroy_calls(TWINBIT_ABI_PLUGIN_V3) == 0);
}

TEST_CASE("abi: adopting a table with no function table or a null destroy is refused before any call") {
  tb_backend raw{};
  auto a = Backend::adopt(raw);
  CHECK(a.status().code() == TB_INVALID_ARGUMENT);
  CHECK(a.status().message().find("no function table") != std::string::npos);
  tb_backend_iface t{};
  t.abi_version = TB_BACKEND_ABI_VERSION;
  t.struct_size = sizeof t;  // every entry null: describe is the first one named
  raw.iface = &t;
  auto b = Backend::adopt(raw);
  CHECK(b.status().code() == TB_INVALID_ARGUMENT);
  CHECK(b.status().message().find("lacks the required entry describe") != std::string::npos);
}

}  // namespace
}  // namespace twinbit::test

namespace twinbit::test {
namespace {

TEST_CASE("abi: Backend::set_switch on a backend without the name is UNIMPLEMENTED naming both") {
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  CHECK(cpu->proc(nullptr) == nullptr);
  const Status st = cpu->set_switch("cuda.set_use_graphs", 0);
  CHECK(st.code() == TB_UNIMPLEMENTED);
  CHECK(st.message().find("backend 'cpu' has no switch 'cuda.set_use_graphs'") != std::string::npos);
}

}  // namespace
}  // namespace twinbit::test

namespace twinbit::test {

// A C caller or plugin may put any int in an enum field; the host refuses one that names nothing
// before any backend compares it (loading it as the enum would be undefined behaviour).
TEST_CASE("abi: op, precision, mode and weights-kind fields that name no enumerator are refused, quoting the int") {
  auto be = create_backend("cpu");
  REQUIRE(be.ok());
  auto with_int = [](auto& field, int raw) { std::memcpy(&field, &raw, sizeof raw); };
  tb_op_desc op{};
  op.m = op.n = op.k = 32;
  with_int(op.op, 9);
  Status s = be->supports(op);
  CHECK(s.code() == TB_INVALID_ARGUMENT);
  CHECK(s.message().find("op 9 is unknown") != std::string::npos);
  op.op = TB_OP_GEMM;
  with_int(op.mode, 5);
  s = be->supports(op);
  CHECK(s.code() == TB_INVALID_ARGUMENT);
  CHECK(s.message().find("mode 5 is unknown") != std::string::npos);
  op.mode = TB_ACT_F32;
  with_int(op.prec, -3);
  CHECK(be->supports(op).code() == TB_INVALID_ARGUMENT);
  op.prec = TB_PREC_Q8;
  CHECK(be->supports(op).ok());

  tb_weights_view v{};
  with_int(v.kind, 2);
  auto bad = be->bind(v);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("weights kind 2 is unknown") != std::string::npos);

  std::vector<float> w(32 * 32, 0.25f), x(32, 1.0f), y(32);
  const quant::PackedStrips packed = quant::pack_strips(w.data(), 32, 32, TB_PREC_Q8);
  tb_weights_view sv{};
  sv.kind = TB_WEIGHTS_STRIPS;
  sv.strips = packed.view();
  auto bound = be->bind(sv);
  REQUIRE(bound.ok());
  tb_gemm_args a{};
  a.m = 1;
  a.x = x.data();
  a.ldx = 32;
  a.y = y.data();
  a.ldy = 32;
  with_int(a.mode, 3);
  s = be->gemm(bound.value(), a);
  CHECK(s.code() == TB_INVALID_ARGUMENT);
  CHECK(s.message().find("mode 3 is unknown") != std::string::npos);
  a.mode = TB_ACT_F32;
  CHECK(be->gemm(bound.value(), a).ok());
}

}  // namespace twinbit::test
