// Creation parameters, validated exactly by each backend (cpu, null, cuda; the C ABI helpers of
// twinbit/backend_params.hpp), device indices, and the cpu backend's isa= and threads= giving the
// reference's bits. The gpu suite creates every visible GPU by index.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <twinbit/backend_params.hpp>
#include "backends/cpu/cpu_amx.h"
#include "core/backend_spec.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"
#include "tests/test_cpu_util.h"

using namespace twinbit;
using namespace twinbit::test;

namespace {

BackendSpec parsed(const std::string& text) {
  auto s = parse_backend_spec(text);
  REQUIRE_MESSAGE(s.ok(), text << ": " << s.status().to_string());
  return s.value();
}

bool has_builtin(const char* name) { return find_builtin_backend(name) != nullptr; }

}  // namespace

TEST_CASE("cpu backend parameters: unknown keys and bad values are INVALID_ARGUMENT quoting them and listing the valid ones") {
  const struct {
    const char* spec;
    const char* quoted;
    const char* valid;
  } cases[] = {
      {"cpu,thread=8", "'thread=8'", "valid keys: threads, isa, prefetch_bytes, amx_schedule"},
      {"cpu,threads=0", "threads=0", "1 .. 1024"},
      {"cpu,threads=1025", "threads=1025", "1 .. 1024"},
      {"cpu,threads=eight", "threads=eight", "1 .. 1024"},
      {"cpu,threads=-1", "threads=-1", "1 .. 1024"},
      {"cpu,threads=4.0", "threads=4.0", "1 .. 1024"},
      {"cpu,isa=avx512", "isa=avx512", "amx, avx512vnni, avx512bw, fma3_avx2, sse2"},
      {"cpu,isa=SSE2", "isa=SSE2", "amx, avx512vnni, avx512bw, fma3_avx2, sse2"},
      {"cpu,prefetch_bytes=65537", "prefetch_bytes=65537", "0 .. 65536"},
      {"cpu,prefetch_bytes=8k", "prefetch_bytes=8k", "0 .. 65536"},
      {"cpu,amx_schedule=fast", "amx_schedule=fast", "auto, shared or quadrants"},
      {"cpu,amx_schedule=0", "amx_schedule=0", "auto, shared or quadrants"},
  };
  for (const auto& c : cases) {
    auto b = create_backend(std::string_view(c.spec));
    REQUIRE_MESSAGE(!b.ok(), "accepted: " << c.spec);
    CHECK(b.status().code() == TB_INVALID_ARGUMENT);
    const std::string& m = b.status().message();
    CHECK_MESSAGE(m.find(c.quoted) != std::string::npos, m);
    CHECK_MESSAGE(m.find(c.valid) != std::string::npos, m);
    CHECK_MESSAGE(m.find(std::string("backend '") + c.spec + "'") != std::string::npos, m);
  }
  for (const char* good : {"cpu,threads=1", "cpu,threads=1024", "cpu,prefetch_bytes=0",
                           "cpu,isa=sse2,threads=2,prefetch_bytes=4096", "cpu:0",
                           "cpu,amx_schedule=shared", "cpu,isa=sse2,amx_schedule=quadrants", "cpu,amx_schedule=auto"}) {
    auto b = create_backend(std::string_view(good));
    CHECK_MESSAGE(b.ok(), good << ": " << b.status().to_string());
  }
}

TEST_CASE("cpu amx_schedule auto: shared for up to 16 rows, quadrants past them; a fixed one stays; the switch takes 0 .. 2") {
  using cpu::amx_schedule_for;
  using cpu::kAmxScheduleAuto;
  CHECK(amx_schedule_for(kAmxScheduleAuto, 16) == 1);
  CHECK(amx_schedule_for(kAmxScheduleAuto, 17) == 0);
  CHECK(amx_schedule_for(kAmxScheduleAuto, 512) == 0);
  for (int fixed : {0, 1}) {
    CHECK(amx_schedule_for(fixed, 16) == fixed);
    CHECK(amx_schedule_for(fixed, 64) == fixed);
  }
  auto b = create_backend(std::string_view("cpu"));
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  for (int v : {0, 1, 2}) CHECK(b->set_switch("cpu.set_amx_schedule", v).ok());
  for (int v : {-1, 3}) {
    const Status st = b->set_switch("cpu.set_amx_schedule", v);
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("2 = auto") != std::string::npos, st.message());
  }
}

TEST_CASE("cpu backend parameters: threads= sets the arena, isa= the kernels (describe says so)") {
  auto b = create_backend(std::string_view("cpu,threads=3,isa=sse2"));
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  CHECK(b->device().find("(3 threads, sse2)") != std::string::npos);
  CHECK(b->features().find("isa.sse2") != std::string::npos);
  for (cpu::Isa isa : cpu::runnable_isas()) {
    auto t = cpu_backend_for(isa);
    REQUIRE_MESSAGE(t.ok(), t.status().to_string());
    CHECK(t->features().find(std::string("isa.") + cpu::isa_name(isa)) != std::string::npos);
  }
}

TEST_CASE("cpu backend parameters: an isa this CPU cannot run is UNAVAILABLE naming it") {
  int refused = 0;
  for (cpu::Isa isa : cpu::compiled_isas()) {
    if (cpu::isa_runnable(isa)) continue;
    auto b = cpu_backend_for(isa);
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == TB_UNAVAILABLE);
    CHECK(b.status().message().find(std::string("isa=") + cpu::isa_name(isa)) != std::string::npos);
    ++refused;
  }
  MESSAGE(refused << " compiled tag(s) this CPU cannot run, each refused");
}

TEST_CASE("devices: an index past the count is UNAVAILABLE naming the count (cpu, null); cpu:0 is the host") {
  for (const char* text : {"cpu:1", "cpu:7,threads=2", "null:1"}) {
    if (!has_builtin(parsed(text).name.c_str())) continue;
    auto b = create_backend(std::string_view(text));
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == TB_UNAVAILABLE);
    CHECK_MESSAGE(b.status().message().find("1 device, 0 .. 0") != std::string::npos,
                  b.status().message());
  }
}

TEST_CASE("null backend parameters: it takes none") {
  REQUIRE(has_builtin("null"));
  auto b = create_backend(std::string_view("null,threads=2"));
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == TB_INVALID_ARGUMENT);
  CHECK(b.status().message().find("'threads=2'") != std::string::npos);
  CHECK(b.status().message().find("it takes no parameters") != std::string::npos);
  CHECK(create_backend(std::string_view("null:0")).ok());
}

TEST_CASE("cuda backend parameters: none, checked before the device (so the same answer without a GPU)") {
  if (!has_builtin("cuda")) {
    MESSAGE("this build has no cuda backend");
    return;
  }
  auto b = create_backend(std::string_view("cuda,threads=2"));
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == TB_INVALID_ARGUMENT);
  CHECK(b.status().message().find("'threads=2'") != std::string::npos);
  // An index no machine has: UNAVAILABLE, naming the count where there is a driver.
  auto far = create_backend(std::string_view("cuda:999"));
  REQUIRE_FALSE(far.ok());
  CHECK(far.status().code() == TB_UNAVAILABLE);
}

TEST_CASE("backend params (C ABI): malformed tables are INVALID_ARGUMENT, never a crash") {
  tb_backend_params p{};
  p.device = -1;
  p.count = 2;
  p.items = nullptr;
  CHECK(check_param_keys(&p, "x", {"a"}).code() == TB_INVALID_ARGUMENT);
  const tb_backend_param null_value[] = {{"a", nullptr}};
  p.items = null_value;
  p.count = 1;
  CHECK(check_param_keys(&p, "x", {"a"}).code() == TB_INVALID_ARGUMENT);
  const tb_backend_param twice[] = {{"a", "1"}, {"a", "2"}};
  p.items = twice;
  p.count = 2;
  Status s = check_param_keys(&p, "x", {"a"});
  CHECK(s.code() == TB_INVALID_ARGUMENT);
  CHECK(s.message().find("given twice") != std::string::npos);
  CHECK(check_param_keys(nullptr, "x", {}).ok());
  int32_t device = 0;
  p.device = -2;
  CHECK(choose_device(&p, "x", 4, &device).code() == TB_INVALID_ARGUMENT);
  p.device = -1;
  REQUIRE(choose_device(&p, "x", 4, &device).ok());
  CHECK(device == 0);
  p.device = 3;
  REQUIRE(choose_device(&p, "x", 4, &device).ok());
  CHECK(device == 3);
  p.device = 4;
  Status past = choose_device(&p, "x", 4, &device);
  CHECK(past.code() == TB_UNAVAILABLE);
  CHECK(past.message().find("4 devices, 0 .. 3") != std::string::npos);
  int64_t v = 0;
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "0x10", "99999999999999999999"}) {
    CHECK_MESSAGE(parse_int_param("x", "k", bad, 0, 100, &v).code() == TB_INVALID_ARGUMENT, bad);
  }
  CHECK(parse_int_param("x", "k", nullptr, 0, 100, &v).code() == TB_INVALID_ARGUMENT);
  REQUIRE(parse_int_param("x", "k", "100", 0, 100, &v).ok());
  CHECK(v == 100);
}

TEST_CASE("cpu isa= and threads= parameters give the reference's bits (q8/q4, f32/i8, every runnable isa)") {
  const int64_t n = 97, k = 200, m = 5;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    OwnedStrips w = random_strips(prec, n, k, 1234 + prec);
    std::vector<float> x = random_activations(m * k, 99);
    const int64_t kp = w.view.kp, ng = kp / 32;
    std::vector<int8_t> xq(static_cast<size_t>(m * kp));
    std::vector<float> xd(static_cast<size_t>(m * ng));
    ref::quantize_activations(m, k, x.data(), k, xq.data(), kp, xd.data(), ng);
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      std::vector<float> ref_y(static_cast<size_t>(m * n));
      if (mode == TB_ACT_F32) {
        ref::gemm_f32(w.view, m, x.data(), k, ref_y.data(), n);
      } else {
        ref::gemm_i8(w.view, m, xq.data(), kp, xd.data(), ng, ref_y.data(), n);
      }
      for (cpu::Isa isa : cpu::runnable_isas()) {
        for (const char* threads : {"1", "3"}) {
          auto b = create_cpu_backend({{"isa", cpu::isa_name(isa)}, {"threads", threads}});
          REQUIRE_MESSAGE(b.ok(), b.status().to_string());
          tb_weights_view view{};
          view.kind = TB_WEIGHTS_STRIPS;
          view.strips = w.view;
          auto bound = b->bind(view);
          REQUIRE(bound.ok());
          std::vector<float> y(static_cast<size_t>(m * n), -1.0f);
          tb_gemm_args a{};
          a.mode = mode;
          a.m = m;
          a.x = x.data();
          a.ldx = k;
          a.xq = xq.data();
          a.ldxq = kp;
          a.xd = xd.data();
          a.ldxd = ng;
          a.y = y.data();
          a.ldy = n;
          REQUIRE(b->gemm(bound.value(), a).ok());
          CHECK_MESSAGE(same_bits(y.data(), ref_y.data(), y.size()),
                        cpu::isa_name(isa) << " threads=" << threads << " " << prec_name(prec)
                                           << " " << act_mode_name(mode));
        }
      }
    }
  }
}

TEST_SUITE("gpu") {

TEST_CASE("cuda devices: every visible GPU listed and created by index, describe names it, gemm bits equal the reference on each; cuda:COUNT is UNAVAILABLE naming the count") {
  BackendSpec spec;
  spec.name = "cuda";
  if (!has_builtin("cuda")) {
    MESSAGE("SKIPPED: this build has no cuda backend");
    return;
  }
  auto names = list_devices(spec);
  if (!names.ok()) {
    MESSAGE("SKIPPED (no CUDA device here): " << names.status().to_string());
    return;
  }
  const int64_t n = 97, k = 256, m = 3;  // the CUDA gemm walks whole groups of 32 k
  OwnedStrips w = random_strips(TB_PREC_Q8, n, k, 77);
  std::vector<float> x = random_activations(m * k, 78);
  std::vector<float> ref_y(static_cast<size_t>(m * n));
  ref::gemm_f32(w.view, m, x.data(), k, ref_y.data(), n);
  const int32_t count = static_cast<int32_t>(names->size());
  for (int32_t d = 0; d < count; ++d) {
    spec.device = d;
    const std::string title = (*names)[static_cast<size_t>(d)];
    CHECK(title.find("(device " + std::to_string(d) + ",") != std::string::npos);
    auto b = create_backend(spec);
    REQUIRE_MESSAGE(b.ok(), spec.to_string() << ": " << b.status().to_string());
    CHECK_MESSAGE(b->device().find("(device " + std::to_string(d) + ",") != std::string::npos,
                  b->device());
    tb_weights_view view{};
    view.kind = TB_WEIGHTS_STRIPS;
    view.strips = w.view;
    auto bound = b->bind(view);
    REQUIRE_MESSAGE(bound.ok(), bound.status().to_string());
    std::vector<float> y(static_cast<size_t>(m * n), -1.0f);
    tb_gemm_args a{};
    a.mode = TB_ACT_F32;
    a.m = m;
    a.x = x.data();
    a.ldx = k;
    a.y = y.data();
    a.ldy = n;
    const Status run = b->gemm(bound.value(), a);
    REQUIRE_MESSAGE(run.ok(), run.to_string());
    CHECK_MESSAGE(same_bits(y.data(), ref_y.data(), y.size()), spec.to_string());
  }
  spec.device = count;
  auto past = create_backend(spec);
  REQUIRE_FALSE(past.ok());
  CHECK(past.status().code() == TB_UNAVAILABLE);
  CHECK_MESSAGE(past.status().message().find("this machine has " + std::to_string(count) +
                                             " device") != std::string::npos,
                past.status().message());
  MESSAGE(count << " CUDA device(s) listed, created and bit-checked");
}

}  // TEST_SUITE("gpu")
