// The porting check (conformance/porting_check.h, `twinbit check`) on a tiny synthetic model
// holding every entry kind: strip entries (gemm in both activation modes), float matrices
// (gemv_f32 and the pair), and the gated-delta set. The CPU backend against the unbroken
// reference gives equal lines for all of them; each deliberately broken backend is caught
// exactly where it breaks, and nowhere else.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/synthetic.h"
#include "conformance/porting_check.h"
#include "core/registry.h"
#include "test_artifact_util.h"
#include "tests/broken_backends/broken_backends.h"
#include "tests/test_backend_util.h"

using namespace twinbit;
using twinbit::testing::make_backend;
using namespace twinbit::conformance;

namespace {

// hidden = 96 and vocab = 33: lm_head is K 96 x N 33, the shape broken_flip_bit breaks at M 3
// and one whose last column broken_last_column never writes. Gated-delta: vh 4, kh 2, kd = vd 8.
struct TinyModel {
  testart::TempDir dir;
  std::unique_ptr<artifact::Artifact> art;
  std::vector<CheckEntry> entries;

  TinyModel() {
    synthetic::Options o;
    o.seed = 5;
    o.shape = {.hidden = 96, .intermediate = 64, .heads = 2, .kv_heads = 1, .head_dim = 32,
               .vocab = 33, .gdn_value_heads = 4, .gdn_key_heads = 2, .gdn_dim = 8, .gemv_cols = 40};
    const std::string path = dir.path + "/tiny.tbsc";
    REQUIRE(synthetic::write_model(path, o).ok());
    auto opened = artifact::Artifact::open(path);
    REQUIRE(opened.ok());
    art = std::move(opened).value();
    for (const artifact::Entry& e : art->entries()) {
      auto v = art->view_verified(e);
      REQUIRE(v.ok());
      entries.push_back({e.name, v.value()});
    }
  }
  size_t strip_entries() const {
    size_t n = 0;
    for (const CheckEntry& e : entries) n += e.view.kind == TB_WEIGHTS_STRIPS;
    return n;
  }
};

PortingCheckOptions options() {
  PortingCheckOptions o;
  o.ms = {1, 3};
  o.activations = [](const std::string& key, int64_t m, int64_t k) {
    std::vector<float> x(static_cast<size_t>(m * k));
    uint64_t h = 0xcbf29ce484222325ull + static_cast<uint64_t>(m);
    for (char c : key) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    synthetic::fill_uniform(x.data(), m * k, h, 1.0f);
    return x;
  };
  return o;
}

std::vector<CheckLine> run(const Backend& a, const Backend& b, const std::vector<CheckEntry>& entries,
                           CheckTotals* totals = nullptr) {
  std::vector<CheckLine> lines;
  const CheckTotals t = check_entries(a, b, entries, options(), [&](const CheckLine& l) { lines.push_back(l); });
  CHECK(t.lines == static_cast<int64_t>(lines.size()));
  if (totals) *totals = t;
  return lines;
}

const CheckLine& line(const std::vector<CheckLine>& lines, const std::string& entry, const std::string& what_prefix) {
  for (const CheckLine& l : lines) {
    if (l.entry == entry && l.what.rfind(what_prefix, 0) == 0) return l;
  }
  FAIL("no line " << entry << " / " << what_prefix);
  throw std::logic_error("unreachable: FAIL throws");
}

}  // namespace

TEST_SUITE("conformance") {

TEST_CASE("porting_check_cpu_against_test_reference_every_kind_runs_and_every_line_is_equal") {
  const TinyModel model;
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  const Backend ref = make_backend(tb_backend_create_test_reference);
  CheckTotals t;
  const std::vector<CheckLine> lines = run(cpu.value(), ref, model.entries, &t);
  std::map<std::string, int> kinds;
  for (const CheckLine& l : lines) {
    CAPTURE(l.entry);
    CAPTURE(l.what);
    CHECK(l.outcome == CheckOutcome::equal);
    CHECK(l.mismatch.total > 0);
    kinds[l.what.substr(0, l.what.find(' '))] += 1;
  }
  // gemm: every strip entry x M {1, 3} x {f32, i8}; gemv: ssm_beta, ssm_a; one pair; one gdn step.
  CHECK(kinds["q8"] + kinds["q4"] == static_cast<int>(model.strip_entries() * 4));
  CHECK(kinds["q8"] == kinds["q4"]);
  CHECK(kinds["gemv_f32"] == 2);
  CHECK(kinds["gemv_f32_pair"] == 1);
  CHECK(kinds["gdn_delta"] == 1);
  CHECK(t.equal == t.lines);
  CHECK(line(lines, "ssm_beta+ssm_a", "gemv_f32_pair").mismatch.total == 2 * 4);
  CHECK(line(lines, "gdn.*", "gdn_delta").mismatch.total == 4 * 8 + 4 * 8 * 8);  // o and state
  CHECK(line(lines, "lm_head.q4", "q4 K 96 x N 33, M 3, i8").mismatch.total == 99);
}

TEST_CASE("porting_check_broken_float_ops_caught_gemv_1_of_4_pair_1_of_8_at_y_b_gdn_2_of_288_gemm_equal") {
  const TinyModel model;
  const Backend ref = make_backend(tb_backend_create_test_reference);
  const Backend broken = make_backend(tb_backend_create_broken_float_ops);
  CheckTotals t;
  const std::vector<CheckLine> lines = run(ref, broken, model.entries, &t);
  for (const char* m : {"ssm_beta", "ssm_a"}) {
    const CheckLine& g = line(lines, m, "gemv_f32 ");
    CHECK(g.outcome == CheckOutcome::differ);
    CHECK(g.mismatch.differing == 1);
    CHECK(g.mismatch.total == 4);
    CHECK(g.mismatch.first_n == 3);
    CHECK(g.mismatch.max_ulp == 1);
  }
  const CheckLine& p = line(lines, "ssm_beta+ssm_a", "gemv_f32_pair");
  CHECK(p.outcome == CheckOutcome::differ);
  CHECK(p.mismatch.differing == 1);
  CHECK(p.mismatch.first_output == "y_b");
  CHECK(p.mismatch.first_n == 0);
  const CheckLine& d = line(lines, "gdn.*", "gdn_delta");
  CHECK(d.outcome == CheckOutcome::differ);
  CHECK(d.mismatch.differing == 2);  // o[0][0] and the state's last element: both are compared
  CHECK(d.mismatch.first_output == "o");
  CHECK(check_result_text(d) == "2/288 differ, first at o(m 0, n 0), max 1 ulp");
  CHECK(t.differ == 4);
  CHECK(t.equal == t.lines - 4);  // every gemm line
}

TEST_CASE("porting_check_broken_flip_bit_caught_in_both_modes_lm_head_M3_1_of_99_at_y_1_5") {
  const TinyModel model;
  auto cpu = create_backend("cpu");
  REQUIRE(cpu.ok());
  const Backend broken = make_backend(tb_backend_create_broken_flip_bit);
  CheckTotals t;
  const std::vector<CheckLine> lines = run(cpu.value(), broken, model.entries, &t);
  CHECK(t.differ == 4);
  for (const char* e : {"lm_head.q8", "lm_head.q4"}) {
    for (const char* mode : {"f32", "i8"}) {
      const std::string what = std::string(e).substr(8) + " K 96 x N 33, M 3, " + mode;
      const CheckLine& l = line(lines, e, what);
      CAPTURE(what);
      CHECK(check_result_text(l) == "1/99 differ, first at y(m 1, n 5), max 1 ulp");
    }
  }
}

TEST_CASE("porting_check_broken_last_column_caught_M_of_M_times_N_on_lm_head_N33_both_modes") {
  const TinyModel model;
  const Backend ref = make_backend(tb_backend_create_test_reference);
  const Backend broken = make_backend(tb_backend_create_broken_last_column);
  CheckTotals t;
  const std::vector<CheckLine> lines = run(ref, broken, model.entries, &t);
  CHECK(t.differ == 2 * 2 * 2);  // lm_head q8/q4 x M 1, 3 x f32/i8: the only N % 32 != 0
  const CheckLine& l = line(lines, "lm_head.q8", "q8 K 96 x N 33, M 3, i8");
  CHECK(l.mismatch.differing == 3);
  CHECK(l.mismatch.first_n == 32);
}

TEST_CASE("porting_check_incomplete_gdn_set_is_an_error_line_naming_the_missing_entry") {
  TinyModel model;
  std::erase_if(model.entries, [](const CheckEntry& e) { return e.name == "gdn.k"; });
  const Backend ref = make_backend(tb_backend_create_test_reference);
  CheckTotals t;
  const std::vector<CheckLine> lines = run(ref, ref, model.entries, &t);
  const CheckLine& d = line(lines, "gdn.*", "gdn_delta");
  CHECK(d.outcome == CheckOutcome::error);
  CHECK(check_result_text(d).find("incomplete: no gdn.k") != std::string::npos);
  CHECK(t.error == 1);
}

TEST_CASE("porting_check_example_plugin_pair_and_q4_i8_unsupported_not_failed") {
  const TinyModel model;
  auto plugin = load_plugin(TWINBIT_EXAMPLE_PLUGIN);
  REQUIRE(plugin.ok());
  const Backend ref = make_backend(tb_backend_create_test_reference);
  CheckTotals t;
  const std::vector<CheckLine> lines = run(ref, plugin.value(), model.entries, &t);
  CHECK(t.differ == 0);
  CHECK(t.error == 0);
  // The plugin leaves gemv_f32_pair to core's default (two gemv_f32 calls): it runs and is equal.
  CHECK(line(lines, "ssm_beta+ssm_a", "gemv_f32_pair").outcome == CheckOutcome::equal);
  const CheckLine& u = line(lines, "attn_q.q4", "q4 K 96 x N 64, M 1, i8");
  CHECK(u.outcome == CheckOutcome::unsupported);
  CHECK(check_result_text(u).find("unsupported on B: UNIMPLEMENTED: example plugin: q4 weights") == 0);
  CHECK(t.unsupported == static_cast<int64_t>(model.strip_entries()));  // q4 entries x M 1, 3, i8 only
}

}  // TEST_SUITE
