// The A/B machinery behind `twinbit bench` and `twinbit gate`: SPEC parsing with clear errors,
// percentiles, a tiny interleaved run whose outputs are compared bit for bit, and no invented
// floor for a backend without read_floor.
#include <doctest/doctest.h>

#include "conformance/ab.h"

using namespace twinbit;
using namespace twinbit::conformance;

TEST_SUITE("conformance") {

TEST_CASE("bench SPEC: name only, key=value overrides, plugin paths, errors naming the bad part") {
  BenchSpec d;
  d.k = 2048;
  d.n = 6144;
  d.m = 1;
  auto a = parse_bench_spec("cpu", d);
  REQUIRE(a.ok());
  CHECK(a->backend == "cpu");
  CHECK(a->text() == "cpu:shape=2048x6144,m=1,prec=q8,mode=f32,op=gemm");
  auto b = parse_bench_spec("cuda:shape=96x33,m=32,prec=q4,mode=i8,op=read_floor", d);
  REQUIRE(b.ok());
  CHECK(b->backend == "cuda");
  CHECK(b->k == 96);
  CHECK(b->n == 33);
  CHECK(b->m == 32);
  CHECK(b->prec == TB_PREC_Q4);
  CHECK(b->mode == TB_ACT_I8);
  CHECK(b->read_floor);
  auto p = parse_bench_spec("./lib/libx.so:m=3", d);
  REQUIRE(p.ok());
  CHECK(p->plugin_path == "./lib/libx.so");
  CHECK(p->backend.empty());
  CHECK(p->m == 3);
  auto bad = parse_bench_spec("cpu:colour=red", d);
  CHECK(bad.status().code() == TB_INVALID_ARGUMENT);
  CHECK(bad.status().message().find("'colour=red' is not understood") != std::string::npos);
  CHECK(parse_bench_spec("cpu:shape=12", d).status().message().find("not KxN") != std::string::npos);
  CHECK_FALSE(parse_bench_spec("cpu:m=0", d).ok());
  CHECK_FALSE(parse_bench_spec(":m=1", d).ok());
}

TEST_CASE("percentile of {4, 1, 3, 2}: p0 1, p50 2.5, p100 4") {
  CHECK(percentile({4, 1, 3, 2}, 0) == 1.0);
  CHECK(percentile({4, 1, 3, 2}, 50) == 2.5);
  CHECK(percentile({4, 1, 3, 2}, 100) == 4.0);
}

TEST_CASE("run_ab cpu vs example plugin, K 96 x N 33, M 3: interleaved rounds, outputs bit-identical") {
  BenchSpec a;
  a.backend = "cpu";
  a.k = 96;
  a.n = 33;
  a.m = 3;
  BenchSpec b = a;
  b.backend.clear();
  b.plugin_path = TWINBIT_EXAMPLE_PLUGIN;
  AbOptions o;
  o.rounds = 3;
  o.min_round_us = 100;
  auto r = run_ab(a, b, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->a.rounds_us.size() == 3);
  CHECK(r->b.rounds_us.size() == 3);
  CHECK(r->ratio_median > 0);
  CHECK(r->compared);
  CHECK(r->bits.total == 99);
  CHECK(r->bits.differing == 0);
}

TEST_CASE("gate machinery: the example plugin has no read_floor - UNIMPLEMENTED from the floor side, no number") {
  BenchSpec a;
  a.plugin_path = TWINBIT_EXAMPLE_PLUGIN;
  a.k = 64;
  a.n = 32;
  BenchSpec f = a;
  f.read_floor = true;
  AbOptions o;
  o.rounds = 1;
  auto r = run_ab(a, f, o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == TB_UNIMPLEMENTED);
  CHECK(r.status().message().rfind(f.text(), 0) == 0);
  CHECK(r.status().message().find("no read_floor entry") != std::string::npos);
}

}  // TEST_SUITE
