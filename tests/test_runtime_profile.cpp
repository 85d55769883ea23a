// Profiles (core/runtime/profile.h): the round trip field by field and every validation error,
// quoting the field; the cost model and the calibrated choice on hand-made profiles
// (core/runtime/cost_model.h); the fit of calibrate (core/runtime/calibrate.h) on measurements
// made from known costs.
#include <doctest/doctest.h>


#include "core/runtime/calibrate.h"
#include "core/runtime/cost_model.h"
#include "core/runtime/default_plan.h"
#include "core/runtime/profile.h"
#include "tests/test_artifact_util.h"

namespace twinbit::test {
namespace {

using runtime::BackendProfile;
using runtime::Candidate;
using runtime::GemmCost;
using runtime::GemmShape;
using runtime::Profile;

// One cost for every (mode, prec).
BackendProfile backend_with(const std::string& spec, double fixed_us, double bytes_per_s, double flops_per_s) {
  BackendProfile b{spec, spec, "device of " + spec, {}};
  for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) b.costs.push_back(GemmCost{mode, prec, fixed_us, bytes_per_s, flops_per_s});
  }
  return b;
}

Profile sample_profile() {
  Profile p;
  p.machine = {"host-1", "Some CPU \"quoted\" \xc3\xa9", 16};
  p.date = "2026-12-02T04:05:51Z";
  p.twinbit_version = "0.1.0";
  p.backends.push_back(backend_with("cpu", 2.5, 2.1e10, 9.5e10));
  p.backends.push_back(BackendProfile{"cuda:1", "cuda", "NVIDIA H200 (132 SMs)",
                                      {GemmCost{TB_ACT_I8, TB_PREC_Q4, 11.125, 3.3e12, 1.0 / 3.0 * 1e15}}});
  return p;
}

// The error of reading `text` as a profile (INVALID_ARGUMENT expected).
std::string read_error(const std::string& text) {
  auto p = runtime::parse_profile(text, "bad.json");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == TB_INVALID_ARGUMENT);
  return p.status().message();
}

// The sample profile's JSON with one substring replaced.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = runtime::profile_json(sample_profile());
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

std::vector<Candidate> candidates(const std::vector<const BackendProfile*>& profiles) {
  std::vector<Candidate> out;
  for (const BackendProfile* p : profiles) out.push_back(Candidate{p, true});
  return out;
}

}  // namespace

TEST_SUITE("runtime") {

TEST_CASE("profile_round_trip_gives_every_field_back") {
  testart::TempDir dir;
  const std::string path = dir.path + "/profile.json";
  const Profile p = sample_profile();
  REQUIRE(runtime::write_profile(p, path).ok());
  auto back = runtime::read_profile(path);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(back->source == path);
  CHECK(back->machine.hostname == p.machine.hostname);
  CHECK(back->machine.cpu_model == p.machine.cpu_model);
  CHECK(back->machine.cores == p.machine.cores);
  CHECK(back->date == p.date);
  CHECK(back->twinbit_version == p.twinbit_version);
  REQUIRE(back->backends.size() == p.backends.size());
  for (size_t i = 0; i < p.backends.size(); ++i) {
    CHECK(back->backends[i].spec == p.backends[i].spec);
    CHECK(back->backends[i].name == p.backends[i].name);
    CHECK(back->backends[i].device == p.backends[i].device);
    REQUIRE(back->backends[i].costs.size() == p.backends[i].costs.size());
    for (size_t c = 0; c < p.backends[i].costs.size(); ++c) {
      // Exact: the doubles are written with enough digits to come back bit for bit.
      CHECK(back->backends[i].costs[c] == p.backends[i].costs[c]);
    }
  }
  CHECK(back->same_measurements(p));
  CHECK(back->find("cuda:1")->find(TB_ACT_I8, TB_PREC_Q4)->fixed_us == 11.125);
  CHECK(back->find("cuda:1")->find(TB_ACT_F32, TB_PREC_Q4) == nullptr);
  CHECK(back->find("cuda") == nullptr);
}

TEST_CASE("profile_reading_refuses_each_bad_field_naming_it") {
  CHECK(read_error("{\"format\": ").find("profile bad.json is not valid JSON") != std::string::npos);
  CHECK(read_error("[1, 2]").find("top level must be a JSON object") != std::string::npos);
  CHECK(read_error(edited("\"twinbit-profile\"", "\"other\"")).find("field 'format' is 'other'") != std::string::npos);
  const std::string version = read_error(edited("\"version\": 1", "\"version\": 2"));
  CHECK(version.find("field 'version' is 2: this twinbit reads profile version 1 only") != std::string::npos);
  CHECK(read_error(edited("\"version\": 1,", "")).find("field 'version' is missing") != std::string::npos);
  CHECK(read_error(edited("\"date\": \"2026-12-02T04:05:51Z\",", "")).find("field 'date' is missing") != std::string::npos);
  CHECK(read_error(edited("\"cores\": 16", "\"cores\": 0")).find("field 'machine.cores' must be an integer >= 1, not 0") != std::string::npos);
  CHECK(read_error(edited("\"hostname\": \"host-1\"", "\"hostname\": 7")).find("field 'machine.hostname' must be a string, not 7") != std::string::npos);
  CHECK(read_error(edited("\"fixed_us\": 2.5", "\"fixed_us\": -2.5")).find("field 'backends[0].costs[0].fixed_us' must be a finite number >= 0, not -2.5") != std::string::npos);
  // JSON has no NaN: a NaN written by another tool is null or a string; both are refused.
  CHECK(read_error(edited("\"fixed_us\": 2.5", "\"fixed_us\": null")).find("field 'backends[0].costs[0].fixed_us' must be a number, not null") != std::string::npos);
  CHECK(read_error(edited("\"fixed_us\": 2.5", "\"fixed_us\": \"NaN\"")).find("'backends[0].costs[0].fixed_us' must be a number") != std::string::npos);
  CHECK(read_error(edited("\"bytes_per_s\": 21000000000.0", "\"bytes_per_s\": 0")).find("field 'backends[0].costs[0].bytes_per_s' must be a finite number > 0, not 0") != std::string::npos);
  CHECK(read_error(edited("\"bytes_per_s\": 21000000000.0,", "")).find("field 'backends[0].costs[0].bytes_per_s' is missing") != std::string::npos);
  CHECK(read_error(edited("\"flops_per_s\": 95000000000.0", "\"flops_per_s\": 1e400")).find("not valid JSON") != std::string::npos);
  CHECK(read_error(edited("\"mode\": \"i8\"", "\"mode\": \"f16\"")).find("field 'backends[0].costs[2].mode' 'f16' is not an activation mode") != std::string::npos);
  CHECK(read_error(edited("\"prec\": \"q4\",\n          \"fixed_us\": 11.125", "\"prec\": \"q5\",\n          \"fixed_us\": 11.125")).find("field 'backends[1].costs[0].prec'") != std::string::npos);
  CHECK(read_error(edited("\"spec\": \"cuda:1\"", "\"spec\": \"cpu\"")).find("field 'backends[1].spec': backend 'cpu' is given twice") != std::string::npos);
  CHECK(read_error(edited("\"costs\": [\n        {\n          \"mode\": \"i8\"", "\"costs\": 3, \"x\": [\n        {\n          \"mode\": \"i8\"")).find("field 'backends[1].costs' must be an array") != std::string::npos);
  auto missing = runtime::read_profile("/nonexistent/profile.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("profile /nonexistent/profile.json cannot be opened") != std::string::npos);
}

TEST_CASE("cost_model_predicts_fixed_plus_the_slower_of_streaming_and_computing") {
  const BackendProfile b = backend_with("x", 10.0, 1e9, 1e12);
  // 1024 x 1024 q8: 1 MiB of codes + 64 KiB of scales, streamed at 1 GB/s; at M = 1 streaming
  // (1114 us) beats computing (2.1 us); at M = 1024, computing (2147 us) is the slower.
  const double bytes = runtime::strip_bytes(TB_PREC_Q8, 1024, 1024);
  CHECK(bytes == 1024.0 * 1024 + 1024.0 * 32 * 2);
  CHECK(*runtime::predict_us(b, GemmShape{1, 1024, 1024, TB_PREC_Q8, TB_ACT_F32}) == doctest::Approx(10.0 + bytes / 1e3));
  CHECK(*runtime::predict_us(b, GemmShape{1024, 1024, 1024, TB_PREC_Q8, TB_ACT_I8}) ==
        doctest::Approx(10.0 + 2.0 * 1024 * 1024 * 1024 / 1e6));
  // Ragged shapes are counted in whole tiles, as stored.
  CHECK(runtime::strip_bytes(TB_PREC_Q4, 33, 40) == 64.0 * 64 / 2 + 64.0 * 2 * 2);
  BackendProfile only_i8 = b;
  only_i8.costs = {GemmCost{TB_ACT_I8, TB_PREC_Q8, 1.0, 1e9, 1e9}};
  CHECK_FALSE(runtime::predict_us(only_i8, GemmShape{1, 64, 64, TB_PREC_Q8, TB_ACT_F32}).has_value());
}

TEST_CASE("calibrated_choice_small_calls_stay_on_low_fixed_cost_big_ones_go_to_high_bandwidth") {
  const BackendProfile cpu = backend_with("cpu", 1.0, 2e10, 1e11);
  const BackendProfile gpu = backend_with("gpu", 20.0, 3e12, 1e14);
  const std::vector<std::string> labels{"cpu", "gpu"};
  const auto both = candidates({&cpu, &gpu});
  auto small = runtime::choose_calibrated(both, labels, GemmShape{1, 256, 256, TB_PREC_Q8, TB_ACT_F32}, 0);
  REQUIRE(small.placement.parts.size() == 1);
  CHECK(small.placement.parts[0].backend == 0);
  CHECK(small.why.rfind("calibrated: cpu ", 0) == 0);
  CHECK(small.why.find("-> cpu") != std::string::npos);
  REQUIRE(small.single_us.size() == 2);
  CHECK(*small.single_us[0] < *small.single_us[1]);
  CHECK(small.predicted_us == *small.single_us[0]);
  auto big = runtime::choose_calibrated(both, labels, GemmShape{32, 16384, 2048, TB_PREC_Q4, TB_ACT_I8}, 0);
  REQUIRE(big.placement.parts.size() == 1);  // the GPU is ~100x faster: a split would not pay
  CHECK(big.placement.parts[0].backend == 1);
  CHECK(big.why.find("-> gpu") != std::string::npos);
  // A backend whose supports() declines, or that has no cost for the mode, is not a candidate.
  auto declined = both;
  declined[1].supported = false;
  auto stays = runtime::choose_calibrated(declined, labels, GemmShape{32, 16384, 2048, TB_PREC_Q4, TB_ACT_I8}, 0);
  CHECK(stays.placement.parts[0].backend == 0);
  CHECK_FALSE(stays.single_us[1].has_value());
  BackendProfile gpu_f32_only = gpu;
  gpu_f32_only.costs.resize(2);  // the f32 costs only
  auto unmeasured = runtime::choose_calibrated(candidates({&cpu, &gpu_f32_only}), labels, GemmShape{32, 16384, 2048, TB_PREC_Q4, TB_ACT_I8}, 0);
  CHECK(unmeasured.placement.parts[0].backend == 0);
  // Nothing usable: the fallback backend, and why says so.
  auto none = runtime::choose_calibrated(std::vector<Candidate>{{nullptr, true}, {&gpu, false}}, labels, GemmShape{1, 64, 64, TB_PREC_Q8, TB_ACT_F32}, 0);
  CHECK(none.placement.parts[0].backend == 0);
  CHECK(none.why.find("no backend both supports f32 q8 and has a cost") != std::string::npos);
}

TEST_CASE("calibrated_choice_splits_two_equal_backends_at_a_multiple_of_32_and_not_a_much_faster_one") {
  const BackendProfile a = backend_with("a", 5.0, 2e10, 1e11);
  const BackendProfile b = backend_with("b", 5.0, 2e10, 1e11);
  const std::vector<std::string> labels{"a", "b"};
  for (int64_t n : {1000, 4096, 151936, 64}) {
    INFO("n = ", n);
    const GemmShape shape{8, n, 2048, TB_PREC_Q8, TB_ACT_F32};
    auto c = runtime::choose_calibrated(candidates({&a, &b}), labels, shape, 0);
    REQUIRE(c.placement.is_split());
    const auto shares = runtime::column_shares(c.placement, n);
    REQUIRE(shares.size() == 2);
    CHECK(shares[0].begin == 0);
    CHECK(shares[0].count % 32 == 0);
    CHECK(shares[1].begin == shares[0].count);
    CHECK(shares[0].count + shares[1].count == n);
    // Balanced: the parts differ by at most one strip.
    CHECK(std::llabs(shares[0].count - shares[1].count) <= 32 + (n % 32));
    CHECK(c.predicted_us <= (1.0 - runtime::kSplitMargin) * *c.single_us[0]);
    CHECK(c.why.find("-> split") != std::string::npos);
    // The shares' predicted times are what the choice says the split takes.
    GemmShape first = shape, second = shape;
    first.n = shares[0].count;
    second.n = shares[1].count;
    CHECK(c.predicted_us == doctest::Approx(std::max(*runtime::predict_us(a, first), *runtime::predict_us(b, second))));
  }
  // 32 columns: one strip, nothing to cut.
  auto one_strip = runtime::choose_calibrated(candidates({&a, &b}), labels, GemmShape{8, 32, 2048, TB_PREC_Q8, TB_ACT_F32}, 0);
  CHECK_FALSE(one_strip.placement.is_split());
  // A 3x faster backend takes 3/4 of the columns; a 50x faster one takes everything (the split
  // would save 2%, below the margin).
  const BackendProfile fast = backend_with("fast", 5.0, 6e10, 3e11);
  auto uneven = runtime::choose_calibrated(candidates({&a, &fast}), {"a", "fast"}, GemmShape{1, 16384, 4096, TB_PREC_Q8, TB_ACT_F32}, 0);
  REQUIRE(uneven.placement.is_split());
  const auto shares = runtime::column_shares(uneven.placement, 16384);
  CHECK(shares[0].count == doctest::Approx(4096).epsilon(0.02));
  const BackendProfile much_faster = backend_with("much", 5.0, 1e12, 5e12);
  auto whole = runtime::choose_calibrated(candidates({&a, &much_faster}), {"a", "much"}, GemmShape{1, 16384, 4096, TB_PREC_Q8, TB_ACT_F32}, 0);
  CHECK_FALSE(whole.placement.is_split());
  CHECK(whole.placement.parts[0].backend == 1);
  // Small calls: the fixed cost is paid on both sides, so an even split saves nothing.
  auto tiny = runtime::choose_calibrated(candidates({&a, &b}), labels, GemmShape{1, 64, 64, TB_PREC_Q8, TB_ACT_F32}, 0);
  CHECK_FALSE(tiny.placement.is_split());
}

TEST_CASE("calibrate_fit_recovers_the_costs_the_measurements_were_made_from") {
  const GemmCost truth{TB_ACT_I8, TB_PREC_Q4, 7.0, 4e10, 2e11};
  const BackendProfile b{"x", "x", "d", {truth}};
  std::vector<runtime::Measurement> shapes;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1024, 1024}, {4096, 2048}, {16384, 2048}}) {
    for (int64_t m : {1, 8, 32, 256}) shapes.push_back({m, n, k, *runtime::predict_us(b, GemmShape{m, n, k, TB_PREC_Q4, TB_ACT_I8})});
  }
  const GemmCost fit = runtime::fit_cost(TB_ACT_I8, TB_PREC_Q4, 7.0, shapes);
  CHECK(fit.mode == TB_ACT_I8);
  CHECK(fit.prec == TB_PREC_Q4);
  CHECK(fit.fixed_us == 7.0);
  CHECK(fit.bytes_per_s == doctest::Approx(4e10));
  CHECK(fit.flops_per_s == doctest::Approx(2e11));
}

}  // TEST_SUITE
}  // namespace twinbit::test

namespace twinbit::test {
namespace {

runtime::Profile profile_with_splits() {
  runtime::Profile p;
  p.machine = {"host-2", "cpu model", 4};
  p.date = "2026-12-02T05:00:00Z";
  p.twinbit_version = "0.1.0";
  for (const char* spec : {"a", "b"}) {
    runtime::BackendProfile b{spec, spec, std::string("device ") + spec, {}};
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) b.costs.push_back(runtime::GemmCost{mode, prec, 5.0, 2e10, 1e11});
    }
    p.backends.push_back(b);
  }
  p.splits.push_back(runtime::SplitCost{"a", "b", TB_ACT_F32, TB_PREC_Q8, 2.5});
  p.splits.push_back(runtime::SplitCost{"b", "a", TB_ACT_I8, TB_PREC_Q4, 0.5});
  return p;
}

}  // namespace

TEST_CASE("profile_split_factors_round_trip_and_are_found_in_either_order") {
  const runtime::Profile p = profile_with_splits();
  auto back = runtime::parse_profile(runtime::profile_json(p), "splits.json");
  REQUIRE(back.ok());
  CHECK(back->same_measurements(p));
  CHECK(back->split_factor("a", "b", TB_ACT_F32, TB_PREC_Q8) == 2.5);
  CHECK(back->split_factor("b", "a", TB_ACT_F32, TB_PREC_Q8) == 2.5);
  CHECK(back->split_factor("a", "b", TB_ACT_I8, TB_PREC_Q4) == 0.5);
  CHECK(back->split_factor("a", "b", TB_ACT_I8, TB_PREC_Q8) == 1.0);  // not measured: independent parts
  // A profile without the field reads as one without factors.
  runtime::Profile none = p;
  none.splits.clear();
  const std::string text = runtime::profile_json(none);
  CHECK(text.find("splits") == std::string::npos);
  auto plain = runtime::parse_profile(text, "plain.json");
  REQUIRE(plain.ok());
  CHECK(plain->splits.empty());
}

TEST_CASE("profile_bad_split_entries_are_refused_naming_the_field") {
  const std::string good = runtime::profile_json(profile_with_splits());
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
    auto p = runtime::parse_profile(text, "bad.json");
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == TB_INVALID_ARGUMENT);
    return p.status().message();
  };
  CHECK(error_of("\"factor\": 2.5", "\"factor\": 0").find("splits[0].factor") != std::string::npos);
  CHECK(error_of("\"factor\": 2.5", "\"factor\": -2").find("splits[0].factor") != std::string::npos);
  CHECK(error_of("\"first\": \"a\"", "\"first\": \"z\"").find("names backend 'z'") != std::string::npos);
  CHECK(error_of("\"first\": \"a\"", "\"first\": \"b\"").find("same backend") != std::string::npos);
  CHECK(error_of("\"mode\": \"i8\",\n      \"prec\": \"q4\",\n      \"factor\": 0.5", "\"mode\": \"f32\",\n      \"prec\": \"q8\",\n      \"factor\": 0.5")
            .find("given twice") != std::string::npos);
  CHECK(error_of("\"splits\": [", "\"splits\": [7, ").find("splits[0]") != std::string::npos);
}

TEST_CASE("calibrated_choice_a_measured_split_factor_keeps_or_takes_away_a_split") {
  const runtime::Profile p = profile_with_splits();
  const std::vector<std::string> labels{"a", "b"};
  std::vector<Candidate> both{Candidate{&p.backends[0], true}, Candidate{&p.backends[1], true}};
  const GemmShape f32q8{8, 4096, 2048, TB_PREC_Q8, TB_ACT_F32};
  // Without the profile's factors two equal backends split; a factor of 2.5 makes the split
  // slower than either alone, so it is not taken, and why says so.
  CHECK(runtime::choose_calibrated(both, labels, f32q8, 0).placement.is_split());
  auto kept_whole = runtime::choose_calibrated(both, labels, f32q8, 0, &p);
  CHECK_FALSE(kept_whole.placement.is_split());
  CHECK(kept_whole.why.find("split factor 2.50") != std::string::npos);
  // A factor below 1 (the parts ran faster together than predicted) still splits, and the
  // predicted time carries it.
  const GemmShape i8q4{8, 4096, 2048, TB_PREC_Q4, TB_ACT_I8};
  auto alone = runtime::choose_calibrated(both, labels, i8q4, 0);
  auto faster = runtime::choose_calibrated(both, labels, i8q4, 0, &p);
  REQUIRE(faster.placement.is_split());
  CHECK(faster.predicted_us == doctest::Approx(0.5 * alone.predicted_us));
}

TEST_CASE("calibrate_measures_a_split_factor_per_pair_and_mode_on_two_cpu_specs") {
  runtime::CalibrateOptions o;
  o.quick = true;
  auto p = runtime::calibrate({"cpu", "cpu,isa=sse2,threads=1"}, o);
  REQUIRE(p.ok());
  CHECK(p->splits.size() == 4);  // f32 and i8, q8 and q4
  for (const runtime::SplitCost& c : p->splits) {
    CHECK(c.first == "cpu");
    CHECK(c.second == "cpu,isa=sse2,threads=1");
    CHECK(std::isfinite(c.factor));
    CHECK(c.factor > 0.0);
  }
}

}  // namespace twinbit::test
