// Hardening from outside: one M range for every entry point (core/rows.h), report writers that
// never abort on a backend's bytes, and `twinbit info --json` on an artifact whose text is not
// UTF-8 (the command is run as a user would; its path comes from the build).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/ab.h"
#include "conformance/conformance.h"
#include "conformance/inputs.h"
#include "core/registry.h"
#include "core/rows.h"
#include "test_artifact_util.h"

using namespace twinbit;

namespace {

const std::string kReplacement = "\xef\xbf\xbd";  // U+FFFD
// Bytes no UTF-8 decoder accepts (a lone 0xff, a lone continuation, a truncated pair), plus a
// control character XML 1.0 forbids and one it allows only escaped (newline).
const std::string kHostile = "dev\xff\x80\xc3-\x01-\n-<&>\"'";

// nlohmann's strict dump throws on the first byte that is not UTF-8.
bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (...) {
    return false;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("rows: M 1 and 2^24 accepted; 0, -5, 2^24+1 and 99999999 are INVALID_ARGUMENT naming the value and the range") {
  CHECK(check_rows(1).ok());
  CHECK(check_rows(kMaxRows).ok());
  for (int64_t m : {int64_t{0}, int64_t{-5}, kMaxRows + 1, int64_t{99999999}}) {
    const Status s = check_rows(m, "--m");
    CHECK(s.code() == TB_INVALID_ARGUMENT);
    CHECK(s.message() == "--m = " + std::to_string(m) + " is out of range (expected 1 .. 16777216 rows)");
  }
}

TEST_CASE("rows: a bench SPEC's m= uses the same range; 99999999 and -5 refused with the range, 2^24 accepted") {
  conformance::BenchSpec d;
  for (const char* bad : {"cpu:m=99999999", "cpu:m=-5", "cpu:m=0", "cpu:m=99999999999999999999"}) {
    auto s = conformance::parse_bench_spec(bad, d);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == TB_INVALID_ARGUMENT);
    CHECK(s.status().message().find("1 .. 16777216") != std::string::npos);
  }
  auto ok = conformance::parse_bench_spec("cpu:m=16777216", d);
  REQUIRE(ok.ok());
  CHECK(ok->m == kMaxRows);
}

TEST_CASE("rows: Backend::read_floor refuses M 0 and 2^24+1 before the backend sees them") {
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  conformance::Rng rng(1);
  const conformance::OwnedStrips w = conformance::random_strips(rng, TB_PREC_Q8, 32, 32);
  tb_weights_view view{};
  view.kind = TB_WEIGHTS_STRIPS;
  view.strips = w.view();
  auto bound = cpu->bind(view);
  REQUIRE(bound.ok());
  for (int64_t m : {int64_t{0}, kMaxRows + 1}) {
    const Status s = cpu->read_floor(bound.value(), m);
    CHECK(s.code() == TB_INVALID_ARGUMENT);
    CHECK(s.message().find("out of range (expected 1 .. 16777216 rows)") != std::string::npos);
  }
  CHECK(cpu->read_floor(bound.value(), 1).ok());
}

TEST_CASE("reports: JSON and JUnit of a backend whose name, device and messages hold invalid UTF-8 and control bytes") {
  conformance::Report r;
  r.backend = "vendor" + kHostile;
  r.device = kHostile;
  r.features = "gemm.q8," + kHostile;
  r.source = "plugin ./lib" + kHostile + ".so";
  r.date = "2026-01-01T00:00:00Z";
  conformance::CaseResult c;
  c.name = "gemm_q8_f32_M1_N1_K1";
  c.verdict = conformance::Verdict::error;
  c.message = "backend said " + kHostile;
  r.results.push_back(c);
  r.totals.cases = 1;
  r.totals.error = 1;

  std::string json;
  REQUIRE_NOTHROW(json = conformance::format_json(r));
  const auto j = nlohmann::json::parse(json);
  CHECK(j["backend"]["device"].get<std::string>().find(kReplacement) != std::string::npos);
  CHECK(j["cases"][0]["message"].get<std::string>().find(kReplacement) != std::string::npos);

  const std::string x = conformance::format_junit(r);
  CHECK(valid_utf8(x));
  for (char ch : x) {
    const auto u = static_cast<unsigned char>(ch);
    CHECK_MESSAGE((u >= 0x20 || ch == '\n'), "control byte ", int(u), " in the XML");
  }
  CHECK(x.find("value=\"dev" + kReplacement) != std::string::npos);
  CHECK(x.find("-&#10;-&lt;&amp;&gt;&quot;&apos;") != std::string::npos);
  // Every line break left is the writer's own, between elements.
  CHECK(x.find("-\n-") == std::string::npos);
}

TEST_CASE("cli: info --json on an artifact whose provenance is not UTF-8 exits normally, never aborts") {
  testart::Small small = testart::make_small();
  auto image = small.writer.serialize({"model-MARK.gguf", "twinbit test"});
  REQUIRE(image.ok());
  std::vector<uint8_t>& b = image.value();
  const std::string mark = "MARK";
  auto at = std::search(b.begin(), b.end(), mark.begin(), mark.end());
  REQUIRE(at != b.end());
  const uint8_t hostile[4] = {0xff, 0xfe, 0xc3, 0x28};  // not UTF-8 in three ways
  std::copy(hostile, hostile + 4, at);
  testart::reseal(b);
  testart::TempDir dir;
  const std::string path = dir.path + "/hostile.tbsc";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  // exec: the shell becomes the command, so an abort shows as a signal, not as exit 134.
  const std::string cmd = std::string("exec '") + TWINBIT_CLI + "' info --json '" + path + "' >'" +
                          dir.path + "/out' 2>'" + dir.path + "/err'";
  const int st = std::system(cmd.c_str());
  REQUIRE_MESSAGE(WIFEXITED(st), "twinbit info was killed by a signal (an abort)");
  const std::string out = read_text(dir.path + "/out"), err = read_text(dir.path + "/err");
  INFO("stderr: ", err);
  if (WEXITSTATUS(st) == 0) {
    const auto j = nlohmann::json::parse(out);
    CHECK(j["source"] == "model-" + kReplacement + kReplacement + kReplacement + "(.gguf");
  } else {
    // A reader that refuses non-UTF-8 text says so: corrupt input, exit 1.
    CHECK(WEXITSTATUS(st) == 1);
    CHECK(err.find("DATA_LOSS") != std::string::npos);
  }
}
