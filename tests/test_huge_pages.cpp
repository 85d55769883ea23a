// artifacts/huge_pages.h: memory for streamed weights on 2 MiB pages where the system gives them.
// The placement is a hint the kernel may refuse (transparent huge pages off), so the tests check
// what is promised whatever it does: alignment, zeroed and writable memory, a report of huge
// bytes within the range, and that an artifact read in copy mode sits in such memory.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

#include "artifacts/artifact.h"
#include "artifacts/huge_pages.h"
#include "tests/test_artifact_util.h"

namespace twinbit::artifact {
namespace {

TEST_CASE("map_huge gives zeroed, writable memory on a 2 MiB boundary; huge_page_bytes reports at most the range") {
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{3} << 20, (size_t{5} << 20) + 123}) {
    CAPTURE(bytes);
    auto* p = static_cast<uint8_t*>(map_huge(bytes));
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0);
    bool zero = true;
    for (size_t i = 0; i < bytes; i += 509) zero = zero && p[i] == 0;
    CHECK(zero);
    std::memset(p, 0x5a, bytes);
    CHECK(p[bytes - 1] == 0x5a);
    const int64_t huge = huge_page_bytes(p, bytes);
    CHECK(huge >= -1);
    CHECK(huge <= static_cast<int64_t>(bytes));
    MESSAGE(bytes << " bytes: " << huge << " on huge pages");
    unmap_huge(p, bytes);
  }
  CHECK(map_huge(0) == nullptr);
  CHECK(huge_page_bytes(nullptr, 0) <= 0);
}

TEST_CASE("an artifact read in copy mode lies in 2 MiB-aligned memory: each payload sits at its file offset from a 2 MiB boundary") {
  const testart::TempDir dir;
  const testart::Small s = testart::make_small();
  const std::string path = dir.path + "/small.tbc";
  REQUIRE(s.writer.write(path, s.provenance).ok());
  OpenOptions copy;
  copy.read = ReadMode::kCopy;
  auto opened = Artifact::open(path, copy);
  REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
  const Artifact& art = **opened;
  REQUIRE_FALSE(art.entries().empty());
  for (const Entry& e : art.entries()) {
    CAPTURE(e.name);
    const tb_weights_view v = art.view(e);
    const auto* first = static_cast<const uint8_t*>(v.kind == TB_WEIGHTS_STRIPS ? v.strips.codes : v.matrix.data);
    REQUIRE_FALSE(e.payloads.empty());
    CHECK((reinterpret_cast<uintptr_t>(first) - e.payloads[0].offset) % kHugePageBytes == 0);
  }
}

}  // namespace
}  // namespace twinbit::artifact
