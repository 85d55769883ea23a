// The GGUF fuzzer's corpus and crashers (tests/fuzz/corpus/gguf/), replayed in the normal build
// through the same checks the fuzzer makes (tests/fuzz/gguf_exercise.h): no clang needed, and a
// crash the fuzzer once found stays fixed.
#include <doctest/doctest.h>

#include <filesystem>

#include "fuzz/gguf_exercise.h"
#include "test_import_gguf_util.h"

TEST_CASE("gguf_fuzz_corpus_replays_every_file_cleanly") {
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "fuzz" / "corpus" / "gguf";
  REQUIRE(std::filesystem::is_directory(dir));
  int files = 0, accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::vector<uint8_t> bytes = twinbit::testing::read_bytes(entry.path());
    INFO(entry.path().filename().string());
    CHECK(twinbit::import::exercise_gguf(bytes.data(), bytes.size()));
    accepted += twinbit::import::parse_gguf(bytes, "corpus").ok() ? 1 : 0;
    ++files;
  }
  CHECK(files >= 50);
  CHECK(accepted >= 1);  // the corpus keeps valid files too, not only refusals
}
