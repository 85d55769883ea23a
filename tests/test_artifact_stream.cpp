// The streaming writer (artifacts/stream_writer.h): the file it writes is byte for byte what the
// in-memory Writer writes for the same entries (to a file and to a stream), and a failure at any
// step - a bad declaration, an entry out of order or with bad padding, a write that fails half
// way, an early finish - leaves nothing at the target and no temporary beside it.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include "artifacts/atomic_file.h"
#include "artifacts/stream_writer.h"
#include "artifacts/synthetic.h"
#include "core/strip_layout.h"
#include "test_artifact_util.h"

using namespace twinbit;
using namespace twinbit::artifact;

namespace {

// An artifact's entries re-added from its bytes: through Writer (in memory) and as declarations
// plus payloads for StreamWriter.
struct Replay {
  Writer writer;
  std::vector<Entry> declared;
  std::vector<std::vector<uint8_t>> codes;
  std::vector<std::vector<uint16_t>> scales;
  std::vector<std::vector<float>> data;
};

Replay replay(const std::vector<uint8_t>& image) {
  auto a = parse(image, "replayed");
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  Replay r;
  for (const Entry& e : (*a)->entries()) {
    if (e.kind == TB_WEIGHTS_STRIPS) {
      const Entry::Payload& c = e.payloads[kStripCodes];
      const Entry::Payload& s = e.payloads[kStripScales];
      r.codes.emplace_back(image.begin() + c.offset, image.begin() + c.offset + c.bytes);
      r.scales.emplace_back(s.bytes / 2);
      std::memcpy(r.scales.back().data(), image.data() + s.offset, s.bytes);
      r.data.emplace_back();
      REQUIRE(r.writer.add_strips(e.name, e.prec, e.n, e.k, r.codes.back(), r.scales.back(),
                                  e.ranges, e.source_tensors).ok());
      r.declared.push_back(declare_strips(e.name, e.prec, e.n, e.k, e.ranges, e.source_tensors));
    } else {
      const Entry::Payload& d = e.payloads[kMatrixData];
      r.codes.emplace_back();
      r.scales.emplace_back();
      r.data.emplace_back(d.bytes / 4);
      std::memcpy(r.data.back().data(), image.data() + d.offset, d.bytes);
      REQUIRE(r.writer.add_matrix(e.name, e.n, e.k, r.data.back(), e.source_tensors).ok());
      r.declared.push_back(declare_matrix(e.name, e.n, e.k, e.source_tensors));
    }
  }
  return r;
}

// Streams the replayed entries into `out` and finishes.
Status stream_all(OutputFile& out, const Replay& r, const Provenance& prov) {
  auto w = StreamWriter::begin(out, prov, r.declared);
  if (!w.ok()) return w.status();
  for (size_t i = 0; i < r.declared.size(); ++i) {
    const Entry& e = r.declared[i];
    const Status s = e.kind == TB_WEIGHTS_STRIPS
                         ? (*w)->add_strips(e.name, r.codes[i], r.scales[i])
                         : (*w)->add_matrix(e.name, r.data[i]);
    if (!s.ok()) return s;
  }
  return (*w)->finish();
}

std::vector<uint8_t> small_image(Provenance* prov) {
  const testart::Small s = testart::make_small();
  *prov = s.provenance;
  auto image = s.writer.serialize(s.provenance);
  REQUIRE(image.ok());
  return *image;
}

}  // namespace

TEST_SUITE("artifact") {

TEST_CASE("stream_writer_file_equals_writer_bytes_for_small_and_empty_artifacts") {
  const testart::TempDir dir;
  Provenance prov;
  const std::vector<uint8_t> image = small_image(&prov);
  const Replay r = replay(image);
  {
    auto out = OutputFile::open(dir.path + "/small.tbc");
    REQUIRE(out.ok());
    const Status s = stream_all(*out, r, prov);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
  }
  CHECK(testart::read_file(dir.path + "/small.tbc") == image);
  auto via_writer = r.writer.serialize(prov);
  REQUIRE(via_writer.ok());
  CHECK(*via_writer == image);

  Writer empty;
  auto empty_image = empty.serialize({"nothing", "twinbit test"});
  REQUIRE(empty_image.ok());
  {
    auto out = OutputFile::open(dir.path + "/empty.tbc");
    REQUIRE(out.ok());
    auto w = StreamWriter::begin(*out, {"nothing", "twinbit test"}, {});
    REQUIRE(w.ok());
    REQUIRE((*w)->finish().ok());
  }
  CHECK(testart::read_file(dir.path + "/empty.tbc") == *empty_image);
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"empty.tbc", "small.tbc"});
}

TEST_CASE("stream_writer_strip_by_strip_equals_whole_entries_and_checks_each_strip") {
  const testart::TempDir dir;
  Provenance prov;
  const std::vector<uint8_t> image = small_image(&prov);
  const Replay r = replay(image);
  // The strips of a strip set lie one after the other in both payloads.
  auto maker = [&](size_t entry, bool spoil) {
    return [&r, entry, spoil](int64_t s0, int64_t count, uint8_t* codes, uint16_t* scales) {
      const Entry& e = r.declared[entry];
      const StripLayout layout{e.prec, e.n, e.k};
      std::memcpy(codes, r.codes[entry].data() + s0 * layout.strip_code_bytes(),
                  count * layout.strip_code_bytes());
      std::memcpy(scales, r.scales[entry].data() + s0 * layout.strip_scales(),
                  count * layout.strip_scales() * 2);
      if (spoil && s0 + count == layout.strips()) codes[count * layout.strip_code_bytes() - 1] = 0x12;
      return Status();
    };
  };
  for (int64_t batch : {1, 2, 64}) {
    const std::string path = dir.path + "/b" + std::to_string(batch) + ".tbc";
    {
      auto out = OutputFile::open(path);
      REQUIRE(out.ok());
      auto w = StreamWriter::begin(*out, prov, r.declared);
      REQUIRE(w.ok());
      REQUIRE((*w)->add_strips_streamed(r.declared[0].name, batch, maker(0, false)).ok());
      REQUIRE((*w)->add_strips_streamed(r.declared[1].name, batch, maker(1, false)).ok());
      REQUIRE((*w)->add_matrix(r.declared[2].name, r.data[2]).ok());
      REQUIRE((*w)->finish().ok());
    }
    CHECK(testart::read_file(path) == image);
  }
  // Bad padding in the last strip of the 33-column q4 set (strip 1), or a maker's error: the
  // writer is spent, nothing is left.
  const std::string bad = dir.path + "/bad.tbc";
  {
    auto out = OutputFile::open(bad);
    REQUIRE(out.ok());
    auto w = StreamWriter::begin(*out, prov, r.declared);
    REQUIRE(w.ok());
    REQUIRE((*w)->add_strips_streamed(r.declared[0].name, 1, maker(0, false)).ok());
    const Status s = (*w)->add_strips_streamed(r.declared[1].name, 1, maker(1, true));
    CHECK(s.code() == TB_INVALID_ARGUMENT);
    CHECK(s.message().find("(strip 1)") != std::string::npos);
    CHECK((*w)->finish().code() == TB_FAILED_PRECONDITION);
  }
  {
    auto out = OutputFile::open(bad);
    REQUIRE(out.ok());
    auto w = StreamWriter::begin(*out, prov, r.declared);
    REQUIRE(w.ok());
    const Status s = (*w)->add_strips_streamed(r.declared[0].name, 1,
        [](int64_t, int64_t, uint8_t*, uint16_t*) { return Error(TB_DATA_LOSS, "source cut"); });
    CHECK(s.code() == TB_DATA_LOSS);
    CHECK((*w)->finish().code() == TB_FAILED_PRECONDITION);
  }
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"b1.tbc", "b2.tbc", "b64.tbc"});
}

TEST_CASE("stream_writer_to_a_stream_spools_the_payloads_and_sends_the_same_bytes") {
  const testart::TempDir dir;
  Provenance prov;
  const std::vector<uint8_t> image = small_image(&prov);
  const Replay r = replay(image);
  // /dev/fd/N is streamed to the descriptor (atomic_file.h): here a regular file, so the bytes
  // that went through the spool can be read back.
  const std::string path = dir.path + "/streamed.tbc";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  {
    auto out = OutputFile::open("/dev/fd/" + std::to_string(fd));
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    REQUIRE(out->kind() == OutputFile::Kind::stream);
    const Status s = stream_all(*out, r, prov);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
  }
  ::close(fd);
  CHECK(testart::read_file(path) == image);
}

TEST_CASE("synthetic_model_streamed_equals_the_in_memory_writer_for_the_same_entries") {
  // write_model streams; re-adding its entries to the in-memory Writer gives the same file.
  const testart::TempDir dir;
  synthetic::Options o;
  o.shape.hidden = 64;
  o.shape.intermediate = 96;
  o.shape.heads = 2;
  o.shape.kv_heads = 1;
  o.shape.head_dim = 32;
  o.shape.vocab = 100;
  o.shape.gdn_value_heads = 4;
  o.shape.gdn_key_heads = 2;
  o.shape.gdn_dim = 32;
  o.shape.gemv_cols = 40;
  REQUIRE(synthetic::write_model(dir.path + "/m.tbc", o).ok());
  const std::vector<uint8_t> file = testart::read_file(dir.path + "/m.tbc");
  const Replay r = replay(file);
  auto a = parse(file, "m");
  REQUIRE(a.ok());
  auto again = r.writer.serialize((*a)->provenance());
  REQUIRE(again.ok());
  CHECK(*again == file);
  CHECK((*a)->entries().size() == 10 * 2 + 8);
}

TEST_CASE("stream_writer_failures_leave_no_target_and_no_temporary") {
  const testart::TempDir dir;
  Provenance prov;
  const std::vector<uint8_t> image = small_image(&prov);
  const Replay r = replay(image);
  const std::string kept = dir.path + "/kept.tbc";
  REQUIRE(r.writer.write(kept, prov).ok());
  const std::string target = dir.path + "/new.tbc";
  auto only_kept = [&] {
    CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"kept.tbc"});
    CHECK(testart::read_file(kept) == image);
  };

  SUBCASE("bad declarations are refused at begin, naming the entry") {
    for (int which = 0; which < 4; ++which) {
      std::vector<Entry> d = r.declared;
      if (which == 0) d[1].name = d[0].name;
      if (which == 1) d[0].n = 0;
      if (which == 2) d[0].ranges.push_back({"q", 0, 1});  // repeated range name
      if (which == 3) d[2].name = "has space";
      auto out = OutputFile::open(target);
      REQUIRE(out.ok());
      auto w = StreamWriter::begin(*out, prov, d);
      CHECK(w.status().code() == TB_INVALID_ARGUMENT);
      CHECK(w.status().message().find("entry") != std::string::npos);
    }
    auto out = OutputFile::open(target);
    REQUIRE(out.ok());
    CHECK(StreamWriter::begin(*out, {"bad\ttext", "p"}, r.declared).status().code() ==
          TB_INVALID_ARGUMENT);
  }
  SUBCASE("an entry with bad padding, out of order or missing spends the writer") {
    for (int which = 0; which < 3; ++which) {
      auto out = OutputFile::open(target);
      REQUIRE(out.ok());
      auto w = StreamWriter::begin(*out, prov, r.declared);
      REQUIRE(w.ok());
      REQUIRE((*w)->add_strips(r.declared[0].name, r.codes[0], r.scales[0]).ok());
      Status s;
      if (which == 0) {
        std::vector<uint8_t> codes = r.codes[1];
        codes.back() = 0x12;  // the last byte of a 33-column q4 set is padding
        s = (*w)->add_strips(r.declared[1].name, codes, r.scales[1]);
        CHECK(s.message().find("padding") != std::string::npos);
      } else if (which == 1) {
        s = (*w)->add_matrix(r.declared[2].name, r.data[2]);
        CHECK(s.message().find("declared order") != std::string::npos);
      } else {
        s = (*w)->finish();
        CHECK(s.message().find("1 of 3 declared entries") != std::string::npos);
      }
      CHECK(!s.ok());
      // Spent: nothing more is accepted, finish included.
      CHECK(!(*w)->add_strips(r.declared[1].name, r.codes[1], r.scales[1]).ok());
      CHECK((*w)->finish().code() == TB_FAILED_PRECONDITION);
    }
  }
  SUBCASE("a write that fails half way (file size limit) is UNAVAILABLE") {
    const quant::PackedStrips p = testart::packed(TB_PREC_Q8, 256, 1024, 3);  // 256 KiB of codes
    auto out = OutputFile::open(target);
    REQUIRE(out.ok());
    auto w = StreamWriter::begin(*out, prov, {declare_strips("big", p.prec, p.n, p.k)});
    REQUIRE(w.ok());
    struct rlimit old {};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto* old_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = old;
    lim.rlim_cur = 64 * 1024;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    const Status s = (*w)->add_strips("big", p.codes, p.scales);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    CHECK(s.code() == TB_UNAVAILABLE);
    CHECK((*w)->finish().code() == TB_FAILED_PRECONDITION);
  }
  only_kept();
}

}  // TEST_SUITE
