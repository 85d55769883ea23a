// The strip cache: writer/reader round trip, the writer's validation, and the atomic write.
// Hostile and corrupted inputs are in test_artifact_bad_input.cpp; the synthetic model in
// test_artifact_synthetic.cpp.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "artifacts/quantize.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "test_artifact_util.h"

using namespace twinbit;
using namespace twinbit::artifact;
namespace fs = std::filesystem;

TEST_SUITE("artifact") {

TEST_CASE("roundtrip_q8_40x70_fused_q4_33x32_f32_3x5_every_field_and_payload") {
  const testart::Small s = testart::make_small();
  auto image = s.writer.serialize(s.provenance);
  REQUIRE(image.ok());
  auto a = parse(*image, "small");
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  const Artifact& art = **a;
  CHECK(art.format_version() == kFormatVersion);
  CHECK(art.file_bytes() == image->size());
  CHECK(art.provenance().source_file == s.provenance.source_file);
  CHECK(art.provenance().packer == s.provenance.packer);
  REQUIRE(art.entries().size() == 3);

  const Entry* q8 = art.find("blk.0.attn_qkv");
  REQUIRE(q8 != nullptr);
  CHECK(q8->kind == TB_WEIGHTS_STRIPS);
  CHECK(q8->prec == TB_PREC_Q8);
  CHECK(q8->n == 40);
  CHECK(q8->k == 70);
  REQUIRE(q8->ranges.size() == 3);
  CHECK(q8->ranges[0].name == "q");
  CHECK(q8->ranges[0].begin == 0);
  CHECK(q8->ranges[0].end == 20);
  CHECK(q8->ranges[1].name == "k");
  CHECK(q8->ranges[1].begin == 20);
  CHECK(q8->ranges[1].end == 30);
  CHECK(q8->ranges[2].name == "v");
  CHECK(q8->ranges[2].begin == 30);
  CHECK(q8->ranges[2].end == 40);
  CHECK(q8->source_tensors == std::vector<std::string>{"blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                                       "blk.0.attn_v.weight"});
  REQUIRE(q8->payloads.size() == 2);
  for (const Entry& e : art.entries()) {
    for (const Entry::Payload& p : e.payloads) CHECK(p.offset % kPayloadAlign == 0);
  }

  const Entry* q4 = art.find("blk.0.ffn_down");
  REQUIRE(q4 != nullptr);
  CHECK(q4->prec == TB_PREC_Q4);
  CHECK(q4->n == 33);
  CHECK(q4->k == 32);
  CHECK(q4->ranges.empty());
  CHECK(q4->source_tensors.empty());
  // The views the reader returns are whole projections: n_total = N, n_begin = 0, so the fold
  // plan is the entry's (docs/NUMERICS.md "Column ranges").
  for (const Entry* e : {q8, q4}) {
    const tb_weights_view v = art.view(*e);
    CHECK(v.strips.n_total == e->n);
    CHECK(v.strips.n_begin == 0);
    CHECK(check_strips(v.strips).ok());
  }

  const Entry* m = art.find("ssm_a");
  REQUIRE(m != nullptr);
  CHECK(m->kind == TB_WEIGHTS_F32);
  CHECK(m->n == 3);
  CHECK(m->k == 5);
  CHECK(m->payloads.size() == 1);
  CHECK(art.find("absent") == nullptr);

  // Views hand back the exact bytes, and they pass the backends' own shape checks.
  for (const auto* pair : {&s.q8, &s.q4}) {
    const Entry* e = art.find(pair == &s.q8 ? "blk.0.attn_qkv" : "blk.0.ffn_down");
    auto v = art.view_verified(*e);
    REQUIRE(v.ok());
    CHECK(check_strips(v->strips).ok());
    CHECK(v->strips.np == pad32(e->n));
    CHECK(v->strips.kp == pad32(e->k));
    CHECK(std::memcmp(v->strips.codes, pair->codes.data(), pair->codes.size()) == 0);
    CHECK(std::memcmp(v->strips.scales, pair->scales.data(), pair->scales.size() * 2) == 0);
  }
  auto mv = art.view_verified(*m);
  REQUIRE(mv.ok());
  CHECK(check_matrix(mv->matrix).ok());
  CHECK(std::memcmp(mv->matrix.data, s.matrix.data(), s.matrix.size() * 4) == 0);
  CHECK(art.verify(*m).ok());
  // An entry that is not the artifact's own is refused, not read.
  Entry stranger = *m;
  CHECK(art.verify(stranger).code() == TB_INVALID_ARGUMENT);
  CHECK(!art.view_verified(stranger).ok());
}

TEST_CASE("roundtrip_empty_artifact_zero_entries") {
  Writer w;
  auto image = w.serialize({"", ""});
  REQUIRE(image.ok());
  auto a = parse(*image, "empty");
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  CHECK((*a)->entries().empty());
}

TEST_CASE("write_then_open_maps_the_same_bytes_as_serialize") {
  const testart::TempDir dir;
  const testart::Small s = testart::make_small();
  const std::string path = dir.path + "/small.tbc";
  REQUIRE(s.writer.write(path, s.provenance).ok());
  const std::vector<uint8_t> file = testart::read_file(path);
  auto image = s.writer.serialize(s.provenance);
  REQUIRE(image.ok());
  CHECK(file == *image);
  auto a = Artifact::open(path);
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  CHECK((*a)->path() == path);
  for (const Entry& e : (*a)->entries()) CHECK((*a)->verify(e).ok());
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"small.tbc"});
  // Opening what is not there, or a folder, is a clean error.
  CHECK(Artifact::open(dir.path + "/absent.tbc").status().code() == TB_INVALID_ARGUMENT);
  CHECK(!Artifact::open(dir.path).ok());
}

TEST_CASE("writer_rejects_bad_names_sizes_ranges_dims_with_invalid_argument") {
  const quant::PackedStrips p = testart::packed(TB_PREC_Q8, 40, 70, 1);
  Writer w;
  auto add = [&](const std::string& name, std::vector<FusedRange> ranges = {}) {
    return w.add_strips(name, p.prec, p.n, p.k, p.codes, p.scales, std::move(ranges));
  };
  CHECK(add("").code() == TB_INVALID_ARGUMENT);
  CHECK(add("has space").code() == TB_INVALID_ARGUMENT);
  CHECK(add(std::string(kMaxNameBytes + 1, 'a')).code() == TB_INVALID_ARGUMENT);
  CHECK(add(std::string(kMaxNameBytes, 'a')).ok());
  CHECK(add("x").ok());
  const Status dup = add("x");
  CHECK(dup.code() == TB_INVALID_ARGUMENT);
  CHECK(dup.message().find("'x'") != std::string::npos);
  CHECK(add("r1", {{"a", 0, 10}, {"b", 5, 20}}).code() == TB_INVALID_ARGUMENT);  // overlap
  CHECK(add("r2", {{"a", 10, 20}, {"b", 0, 5}}).code() == TB_INVALID_ARGUMENT);  // order
  CHECK(add("r3", {{"a", 0, 41}}).code() == TB_INVALID_ARGUMENT);                // past N
  CHECK(add("r4", {{"a", 3, 3}}).code() == TB_INVALID_ARGUMENT);                 // empty
  CHECK(add("r5", {{"a", 0, 5}, {"a", 5, 9}}).code() == TB_INVALID_ARGUMENT);    // same name
  CHECK(add("r6", {{"a", 0, 5}, {"b", 5, 40}}).ok());
  CHECK(w.add_strips("short", p.prec, p.n, p.k, {p.codes.data(), p.codes.size() - 1}, p.scales)
            .code() == TB_INVALID_ARGUMENT);
  CHECK(w.add_strips("prec", static_cast<tb_prec>(7), p.n, p.k, p.codes, p.scales).code() ==
        TB_INVALID_ARGUMENT);
  CHECK(w.add_strips("dims", p.prec, kMaxDim + 1, p.k, p.codes, p.scales).code() ==
        TB_INVALID_ARGUMENT);
  const std::vector<float> m(6, 1.0f);
  CHECK(w.add_matrix("m", 2, 3, m).ok());
  CHECK(w.add_matrix("m2", 2, 4, m).code() == TB_INVALID_ARGUMENT);
  CHECK(w.add_matrix("m3", 0, 3, m).code() == TB_INVALID_ARGUMENT);
  CHECK(w.add_matrix("m4", 2, 3, m, {std::string("bad\nname")}).code() == TB_INVALID_ARGUMENT);
  CHECK(w.serialize({"a\x01", "p"}).status().code() == TB_INVALID_ARGUMENT);
  auto image = w.serialize({"src", "p"});
  REQUIRE(image.ok());
  auto a = parse(*image, "w");
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  CHECK((*a)->entries().size() == 4);
}

TEST_CASE("atomic_write_into_missing_folder_fails_cleanly_and_creates_nothing") {
  const testart::TempDir dir;
  const testart::Small s = testart::make_small();
  const Status st = s.writer.write(dir.path + "/missing/x.tbc", s.provenance);
  CHECK(st.code() == TB_INVALID_ARGUMENT);  // a path that cannot be an output: the caller's mistake
  CHECK(st.message().find("missing/x.tbc") != std::string::npos);
  CHECK(testart::list_dir(dir.path).empty());
}

TEST_CASE("atomic_write_failing_midway_leaves_existing_file_intact_and_no_temp_file") {
  const testart::TempDir dir;
  const std::string path = dir.path + "/model.tbc";
  const testart::Small s = testart::make_small();
  REQUIRE(s.writer.write(path, s.provenance).ok());
  const std::vector<uint8_t> before = testart::read_file(path);

  // A second, larger artifact whose write runs into a file-size limit half way (EFBIG).
  Writer big;
  const quant::PackedStrips p = testart::packed(TB_PREC_Q8, 256, 1024, 3);  // 256 KiB of codes
  REQUIRE(big.add_strips("big", p.prec, p.n, p.k, p.codes, p.scales).ok());
  struct rlimit old {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 64 * 1024;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  const Status st = big.write(path, {"big", "test"});
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  CHECK(st.code() == TB_UNAVAILABLE);
  CHECK(st.message().find("writing") != std::string::npos);
  CHECK(testart::read_file(path) == before);
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"model.tbc"});

  // A write refused before any file is touched (bad provenance) changes nothing either.
  CHECK(big.write(path, {"bad\ttext", "p"}).code() == TB_INVALID_ARGUMENT);
  CHECK(testart::read_file(path) == before);
  // A folder at the path is refused before a temporary file is made.
  fs::create_directory(dir.path + "/folder");
  CHECK(s.writer.write(dir.path + "/folder", s.provenance).code() == TB_INVALID_ARGUMENT);
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"folder", "model.tbc"});
}

TEST_CASE("view_verified_from_8_threads_at_once_verifies_and_agrees") {
  const testart::Small s = testart::make_small();
  auto image = s.writer.serialize(s.provenance);
  REQUIRE(image.ok());
  auto a = parse(*image, "small");
  REQUIRE(a.ok());
  const Artifact& art = **a;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (const Entry& e : art.entries()) ok += art.view_verified(e).ok() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok.load() == 8 * 3);
}

}  // TEST_SUITE
