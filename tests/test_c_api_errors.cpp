// The host C API's artifact, backend and operation calls driven from C (tests/c_api/
// engine_calls.c): every bad argument returns its code with a message naming what was wrong (a
// truncated artifact included), a binding outlives the handles it came from (and the file's
// name), the last error belongs to its thread, and concurrent gemms on one binding agree with
// the reference.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/numerics.h"
#include "core/reference.h"
#include "tests/c_api/engine_calls.h"
#include "tests/test_c_api_util.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {
namespace {

// A copy of the first half of the test artifact.
std::string truncated_artifact(const testart::TempDir& dir) {
  const std::string path = dir.path + "/truncated.tbc";
  std::ifstream in(c_api_random_artifact(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  return path;
}

// The reference gemm of a whole entry (ldx = K, ldy = N) on the C++ view of `art`.
std::vector<float> reference(const artifact::Artifact& art, const std::string& entry, int64_t m, tb_act_mode mode,
                             const std::vector<float>& x) {
  const tb_strips w = art.view(*art.find(entry)).strips;
  std::vector<float> y(static_cast<size_t>(m * w.n));
  if (mode == TB_ACT_F32) {
    ref::gemm_f32(w, m, x.data(), w.k, y.data(), w.n);
    return y;
  }
  const int64_t kp = pad32(w.k);
  std::vector<int8_t> xq(static_cast<size_t>(m * kp));
  std::vector<float> xd(static_cast<size_t>(m * kp / 32));
  ref::quantize_activations(m, w.k, x.data(), w.k, xq.data(), kp, xd.data(), kp / 32);
  ref::gemm_i8(w, m, xq.data(), kp, xd.data(), kp / 32, y.data(), w.n);
  return y;
}

}  // namespace

TEST_SUITE("c_api") {

TEST_CASE("c_api_engine_bad_calls_from_c_return_their_code_and_a_message") {
  testart::TempDir dir;
  char failures[16384];
  const int wrong = c_api_engine_bad_calls(c_api_random_artifact().c_str(), truncated_artifact(dir).c_str(), failures,
                                           sizeof failures);
  CHECK_MESSAGE(wrong == 0, failures);
}

TEST_CASE("c_api_truncated_artifact_and_corrupt_payload_name_the_file") {
  testart::TempDir dir;
  const std::string truncated = truncated_artifact(dir);
  tb_artifact* art = nullptr;
  check_failure(tb_artifact_open(truncated.c_str(), &art), TB_DATA_LOSS, "tb_artifact_open: ");
  CHECK(art == nullptr);
  CHECK(std::string(tb_last_error()).find(truncated) != std::string::npos);

  // One flipped payload byte: the open succeeds (the manifest is intact), verify and bind fail.
  const std::string corrupt = dir.path + "/corrupt.tbc";
  std::filesystem::copy_file(c_api_random_artifact(), corrupt);
  auto cpp = artifact::Artifact::open(corrupt);
  REQUIRE(cpp.ok());
  const uint64_t offset = cpp.value()->find("s3")->payloads[0].offset;
  cpp.value().reset();
  {
    std::fstream f(corrupt, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }
  REQUIRE(tb_artifact_open(corrupt.c_str(), &art) == TB_OK);
  check_failure(tb_artifact_verify(art), TB_DATA_LOSS, "s3");
  tb_engine* engine = nullptr;
  REQUIRE(tb_backend_open("cpu", &engine) == TB_OK);
  tb_bound* bound = nullptr;
  check_failure(tb_bind(engine, art, "s3", &bound), TB_DATA_LOSS, "s3");
  CHECK(bound == nullptr);
  REQUIRE(tb_bind(engine, art, "s2", &bound) == TB_OK);  // the other entries are intact
  tb_unbind(bound);
  tb_backend_close(engine);
  tb_artifact_close(art);
}

TEST_CASE("c_api_binding_outlives_the_artifact_backend_and_file_name") {
  testart::TempDir dir;
  const std::string path = dir.path + "/copy.tbc";
  auto art = artifact::Artifact::open(c_api_random_artifact());
  REQUIRE(art.ok());
  for (const std::string spec : {"cpu", "cpu,isa=sse2"}) {
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      CAPTURE(spec);
      const int64_t m = 5, k = art.value()->find("s5")->k, n = art.value()->find("s5")->n;
      const std::vector<float> x = random_activations(m * k, 17);
      const std::vector<float> want = reference(*art.value(), "s5", m, mode, x);
      std::vector<float> got(static_cast<size_t>(m * n), -1.0f);
      const bool remove_file = mode == TB_ACT_I8;
      if (!std::filesystem::exists(path)) std::filesystem::copy_file(c_api_random_artifact(), path);
      REQUIRE_MESSAGE(c_api_gemm_after_closes(path.c_str(), spec.c_str(), "s5", m, mode, x.data(), got.data(), remove_file) == TB_OK,
                      std::string(tb_last_error()));
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      CHECK(std::filesystem::exists(path) == !remove_file);
    }
  }
}

TEST_CASE("c_api_last_error_is_per_thread_and_kept_by_successful_calls") {
  std::atomic<int> wrong{0};
  auto worker = [&](const std::string& entry) {
    tb_artifact* art = nullptr;
    if (tb_artifact_open(c_api_random_artifact().c_str(), &art) != TB_OK) {
      ++wrong;
      return;
    }
    std::string message = "no entry '";
    message.append(entry).append("'");
    for (int i = 0; i < 200; ++i) {
      size_t index = 0;
      if (tb_artifact_find(art, entry.c_str(), &index) != TB_INVALID_ARGUMENT) ++wrong;
      size_t count = 0;
      if (tb_artifact_entry_count(art, &count) != TB_OK) ++wrong;  // leaves the message as it was
      if (std::string(tb_last_error()).find(message) == std::string::npos) ++wrong;
    }
    tb_artifact_close(art);
  };
  std::thread a(worker, "only_in_thread_a"), b(worker, "only_in_thread_b");
  a.join();
  b.join();
  CHECK(wrong == 0);
}

TEST_CASE("c_api_concurrent_gemms_on_one_binding_equal_the_reference") {
  tb_artifact* art = nullptr;
  tb_engine* engine = nullptr;
  tb_bound* bound = nullptr;
  REQUIRE(tb_artifact_open(c_api_random_artifact().c_str(), &art) == TB_OK);
  REQUIRE(tb_backend_open("cpu", &engine) == TB_OK);
  REQUIRE(tb_bind(engine, art, "s6", &bound) == TB_OK);
  auto cpp = artifact::Artifact::open(c_api_random_artifact());
  REQUIRE(cpp.ok());
  const artifact::Entry& e = *cpp.value()->find("s6");
  std::atomic<int> wrong{0};
  auto worker = [&](int t) {
    for (int i = 0; i < 8; ++i) {
      const tb_act_mode mode = (t + i) % 2 == 0 ? TB_ACT_F32 : TB_ACT_I8;
      const int64_t m = 1 + (t * 7 + i) % 9;
      const std::vector<float> x = random_activations(m * e.k, static_cast<uint64_t>(t * 100 + i));
      const std::vector<float> want = reference(*cpp.value(), "s6", m, mode, x);
      std::vector<float> got(want.size());
      if (tb_bound_gemm(bound, m, mode, x.data(), e.k, got.data(), e.n) != TB_OK ||
          std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
        ++wrong;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t);
  for (std::thread& t : threads) t.join();
  CHECK(wrong == 0);
  tb_unbind(bound);
  tb_backend_close(engine);
  tb_artifact_close(art);
}

}  // TEST_SUITE
}  // namespace twinbit::test
