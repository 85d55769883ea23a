// Naming backends: the spec parser (good and hostile inputs), the registry creating from a spec
// (unknown names, plugins by path) and listing every built-in with its devices.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/backend_spec.h"
#include "core/registry.h"

using namespace twinbit;

namespace {

BackendSpec parsed(const std::string& text) {
  auto s = parse_backend_spec(text);
  REQUIRE_MESSAGE(s.ok(), text << ": " << s.status().to_string());
  return s.value();
}

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
