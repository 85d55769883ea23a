// Replays the safetensors fuzzer's committed corpus and crashers (tests/fuzz/corpus/safetensors)
// through the fuzzer's own invariants, in the normal build: no clang or libFuzzer needed, and a
// crash the fuzzer once found stays fixed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz/safetensors_check.h"

TEST_SUITE("import") {

TEST_CASE("safetensors_fuzz_corpus_replays_clean") {
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "fuzz" / "corpus" / "safetensors";
  REQUIRE(std::filesystem::is_directory(dir));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    CAPTURE(e.path().filename().string());
    CHECK(fuzzcheck::safetensors_input_ok(bytes.data(), bytes.size()));
    ++files;
  }
  CHECK(files >= 5);  // the seeds at least: an empty directory would test nothing
}

}  // TEST_SUITE
