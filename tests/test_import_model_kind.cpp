// model_kind (artifacts/import/model_kind.h): the reader a path needs is told by its bytes and,
// for a folder, by its index file; anything else is INVALID_ARGUMENT naming the path and what it
// found.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "artifacts/import/model_kind.h"
#include "test_artifact_util.h"

using namespace twinbit;
using namespace twinbit::import;

namespace {
void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
}  // namespace

TEST_SUITE("import") {

TEST_CASE("model_kind_by_bytes_not_by_name") {
  const testart::TempDir dir;
  const std::string d = dir.path;
  write(d + "/model.bin", std::string("GGUF\3\0\0\0", 8));
  const std::string header = "{\"__metadata__\":{}}";
  std::string st(8, '\0');
  st[0] = static_cast<char>(header.size());
  write(d + "/weights.gguf", st + header);  // a safetensors file, whatever its name says
  auto g = model_kind(d + "/model.bin");
  REQUIRE(g.ok());
  CHECK(*g == ModelKind::gguf);
  auto s = model_kind(d + "/weights.gguf");
  REQUIRE(s.ok());
  CHECK(*s == ModelKind::safetensors_file);

  // A header length past the end of the file is not a safetensors file.
  std::string bad = st + header;
  bad[1] = 0x10;
  write(d + "/long.safetensors", bad);
  auto l = model_kind(d + "/long.safetensors");
  CHECK(l.status().code() == TB_INVALID_ARGUMENT);

  write(d + "/text.txt", "hello");
  auto t = model_kind(d + "/text.txt");
  CHECK(t.status().code() == TB_INVALID_ARGUMENT);
  CHECK(t.status().message().find("68 65 6c 6c 6f") != std::string::npos);
  write(d + "/empty", "");
  CHECK(model_kind(d + "/empty").status().message().find("none") != std::string::npos);
  CHECK(model_kind(d + "/absent.gguf").status().message().find("absent.gguf") != std::string::npos);

  // A folder is shards only with its index.
  auto no_index = model_kind(d);
  CHECK(no_index.status().code() == TB_INVALID_ARGUMENT);
  CHECK(no_index.status().message().find("model.safetensors.index.json") != std::string::npos);
  write(d + "/model.safetensors.index.json", "{}");
  auto folder = model_kind(d);
  REQUIRE(folder.ok());
  CHECK(*folder == ModelKind::safetensors_folder);
  CHECK(std::string(model_kind_name(*folder)) == "safetensors folder");
}

}  // TEST_SUITE
