// Naming and creating backends: the spec parser (good and hostile inputs), each backend's exact
// validation of its creation parameters, the registry's device lists, and the cpu backend's isa=
// and threads= parameters giving the reference's bits.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/backend_params.hpp"
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

TEST_CASE("backend spec: names, devices and parameters parse exactly and print back the same") {
  BackendSpec cpu = parsed("cpu");
  CHECK(cpu.name == "cpu");
  CHECK(cpu.plugin_path.empty());
  CHECK_FALSE(cpu.device.has_value());
  CHECK(cpu.params.empty());

  BackendSpec cuda1 = parsed("cuda:1");
  CHECK(cuda1.name == "cuda");
  REQUIRE(cuda1.device.has_value());
  CHECK(*cuda1.device == 1);

  BackendSpec p = parsed("cpu,threads=8,isa=fma3_avx2");
  CHECK(p.name == "cpu");
  REQUIRE(p.params.size() == 2);
  CHECK(p.params[0] == BackendParam{"threads", "8"});  // in the order given
  CHECK(p.params[1] == BackendParam{"isa", "fma3_avx2"});
  REQUIRE(p.param("isa"));
  CHECK(*p.param("isa") == "fma3_avx2");
  CHECK(p.param("prefetch_bytes") == nullptr);

  BackendSpec d = parsed("my_backend2:0,x=A-1.5_z");
  CHECK(*d.device == 0);
  CHECK(d.params[0] == BackendParam{"x", "A-1.5_z"});

  for (const char* text : {"cpu", "cuda:1", "cpu,threads=8,isa=fma3_avx2", "cuda:12,k=v",
                           "my_backend2:0,x=A-1.5_z"}) {
    CHECK(parsed(text).to_string() == text);
    CHECK(parsed(parsed(text).to_string()) == parsed(text));
  }
}

TEST_CASE("backend spec: a path is a plugin, whole, even with ':' and ','") {
  for (const char* text : {"./libmyplugin.so", "/opt/vendor/lib.so", "build/plugins/libx.so",
                           "../lib.so", ".hidden.so", "./odd:name,v=1.so"}) {
    BackendSpec s = parsed(text);
    CHECK(s.is_plugin());
    CHECK(s.plugin_path == text);
    CHECK(s.name.empty());
    CHECK_FALSE(s.device.has_value());
    CHECK(s.params.empty());
    CHECK(s.to_string() == text);
  }
  BackendSpec with;  // a device or parameters given to a plugin by separate options
  with.plugin_path = "./lib.so";
  with.device = 1;
  with.params = {{"k", "v"}};
  CHECK(with.to_string() == "./lib.so (device 1, k=v)");
}

TEST_CASE("backend spec: hostile inputs are INVALID_ARGUMENT quoting the text and saying why") {
  const struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"", "empty"},
      {":1", "name is empty"},
      {",threads=1", "name is empty"},
      {"cpu:", "device index after ':' is empty"},
      {"cpu:-1", "not a non-negative integer"},
      {"cpu:+1", "reserved"},
      {"cpu:1a", "not a non-negative integer"},
      {"cpu:01", "leading zero"},
      {"cpu:1234567890", "out of range"},
      {"cpu:1:2", "not a non-negative integer"},
      {"cpu,", "empty"},
      {"cpu,,threads=1", "empty"},
      {"cpu,threads=1,", "empty"},
      {"cpu,threads", "not KEY=VALUE"},
      {"cpu,=8", "key '' is not"},
      {"cpu,threads=", "value '' of key 'threads'"},
      {"cpu,Threads=8", "key 'Threads' is not"},
      {"cpu,threads=8:1", "value '8:1'"},
      {"cpu,threads=8=9", "value '8=9'"},
      {"cpu,threads=1,threads=2", "given twice"},
      {"CPU", "name 'CPU' is not"},
      {"cpu-x", "name 'cpu-x' is not"},
      {"cpu threads=1", "whitespace"},
      {" cpu", "whitespace"},
      {"cpu\t", "whitespace"},
      {"cpu+cuda", "'+' is reserved"},
      {"cpu*0.5", "'*' is reserved"},
      {"cpu*0.5+cuda*0.5", "reserved"},
      {"./lib+x.so", "'+' is reserved"},
  };
  for (const auto& c : cases) {
    auto s = parse_backend_spec(c.text);
    REQUIRE_MESSAGE(!s.ok(), "accepted: '" << c.text << "'");
    CHECK(s.status().code() == TB_INVALID_ARGUMENT);
    const std::string& m = s.status().message();
    CHECK_MESSAGE(m.find(std::string("'") + c.text + "'") != std::string::npos, m);
    CHECK_MESSAGE(m.find(c.why) != std::string::npos, c.text << " -> " << m);
  }
  std::string nul = "cpu";
  nul.push_back('\0');
  CHECK(parse_backend_spec(nul).status().code() == TB_INVALID_ARGUMENT);
}

TEST_CASE("registry: an unknown name is INVALID_ARGUMENT listing the built-ins") {
  for (const char* text : {"nope", "cpu2", "nope:1,a=b"}) {
    auto b = create_backend(std::string_view(text));
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == TB_INVALID_ARGUMENT);
    CHECK(b.status().message().find("unknown backend") != std::string::npos);
    CHECK(b.status().message().find(builtin_backend_names()) != std::string::npos);
  }
  auto bad = create_backend(std::string_view("cpu,"));
  CHECK(bad.status().code() == TB_INVALID_ARGUMENT);
  CHECK(bad.status().message().find("'cpu,'") != std::string::npos);
}

TEST_CASE("cpu backend parameters: unknown keys and bad values are INVALID_ARGUMENT quoting them and listing the valid ones") {
  const struct {
    const char* spec;
    const char* quoted;
    const char* valid;
  } cases[] = {
      {"cpu,thread=8", "'thread=8'", "valid keys: threads, isa, prefetch_bytes"},
      {"cpu,threads=0", "threads=0", "1 .. 1024"},
      {"cpu,threads=1025", "threads=1025", "1 .. 1024"},
      {"cpu,threads=eight", "threads=eight", "1 .. 1024"},
      {"cpu,threads=-1", "threads=-1", "1 .. 1024"},
      {"cpu,threads=4.0", "threads=4.0", "1 .. 1024"},
      {"cpu,isa=avx512", "isa=avx512", "avx512vnni, avx512bw, fma3_avx2, sse2"},
      {"cpu,isa=SSE2", "isa=SSE2", "avx512vnni, avx512bw, fma3_avx2, sse2"},
      {"cpu,prefetch_bytes=65537", "prefetch_bytes=65537", "0 .. 65536"},
      {"cpu,prefetch_bytes=8k", "prefetch_bytes=8k", "0 .. 65536"},
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
                           "cpu,isa=sse2,threads=2,prefetch_bytes=4096", "cpu:0"}) {
    auto b = create_backend(std::string_view(good));
    CHECK_MESSAGE(b.ok(), good << ": " << b.status().to_string());
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

TEST_CASE("registry: every built-in is listed with its devices, or with the reason it cannot run") {
  const std::vector<BackendListing> all = list_backends();
  REQUIRE(all.size() == builtin_backends().size());
  bool saw_cpu = false;
  for (const BackendListing& l : all) {
    if (!l.available) {
      CHECK_FALSE(l.why_not.empty());
      CHECK(l.devices.empty());
      continue;
    }
    REQUIRE_FALSE(l.devices.empty());
    for (size_t i = 0; i < l.devices.size(); ++i) {
      CHECK(l.devices[i].index == static_cast<int32_t>(i));
      CHECK(l.devices[i].available != !l.devices[i].why_not.empty());
    }
    if (l.name == "cpu") {
      saw_cpu = true;
      REQUIRE(l.devices.size() == 1);
      CHECK(l.devices[0].available);
      CHECK(l.devices[0].features.find("gemm.q8") != std::string::npos);
    }
  }
  CHECK(saw_cpu);
}

TEST_CASE("plugin by spec: loads by path; its device list is one device; it validates its params") {
  auto p = create_backend(std::string_view(TWINBIT_EXAMPLE_PLUGIN));
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(p->name() == "example");
  BackendSpec spec;
  spec.plugin_path = TWINBIT_EXAMPLE_PLUGIN;
  auto devices = list_devices(spec);
  REQUIRE_MESSAGE(devices.ok(), devices.status().to_string());
  CHECK(devices->size() == 1);
  spec.params = {{"speed", "fast"}};
  auto refused = create_backend(spec);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == TB_INVALID_ARGUMENT);
  CHECK(refused.status().message().find("'speed=fast'") != std::string::npos);
  CHECK(refused.status().message().find(TWINBIT_EXAMPLE_PLUGIN) != std::string::npos);
  spec.params.clear();
  spec.device = 1;
  CHECK(create_backend(spec).status().code() == TB_UNAVAILABLE);
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
