// The A/B machinery behind `twinbit bench` and `twinbit gate`: SPEC parsing with clear errors,
// percentiles, a tiny interleaved run whose outputs are compared bit for bit, and no invented
// floor for a backend without read_floor.
#include <doctest/doctest.h>

#include "conformance/ab.h"

using namespace twinbit;
using namespace twinbit::conformance;

TEST_SUITE("conformance") {

TEST_CASE("bench side: a backend spec, the older BACKEND:CASE, plugin paths, errors naming the bad part") {
  BenchSpec d;
  d.k = 2048;
  d.n = 6144;
  d.m = 1;
  auto a = parse_bench_spec("cpu", d);
  REQUIRE(a.ok());
  CHECK(a->backend.name == "cpu");
  CHECK(a->text() == "cpu case shape=2048x6144,m=1,prec=q8,mode=f32,op=gemm");
  auto b = parse_bench_spec("cuda:shape=96x33,m=32,prec=q4,mode=i8,op=read_floor", d);
  REQUIRE(b.ok());
  CHECK(b->backend.name == "cuda");
  CHECK_FALSE(b->backend.device.has_value());
  CHECK(b->k == 96);
  CHECK(b->n == 33);
  CHECK(b->m == 32);
  CHECK(b->prec == TB_PREC_Q4);
  CHECK(b->mode == TB_ACT_I8);
  CHECK(b->read_floor);
  auto p = parse_bench_spec("./lib/libx.so:m=3", d);
  REQUIRE(p.ok());
  CHECK(p->backend.plugin_path == "./lib/libx.so");
  CHECK(p->backend.name.empty());
  CHECK(p->m == 3);
  // The spec grammar: a device after ':', creation parameters after ','; the case stays default.
  auto g = parse_bench_spec("cuda:1,k=v", d);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  CHECK(g->backend.name == "cuda");
  CHECK(*g->backend.device == 1);
  CHECK(*g->backend.param("k") == "v");
  CHECK(g->m == 1);
  auto t = parse_bench_spec("cpu,threads=8", d);
  REQUIRE(t.ok());
  CHECK(*t->backend.param("threads") == "8");
  CHECK(t->text() == "cpu,threads=8 case shape=2048x6144,m=1,prec=q8,mode=f32,op=gemm");
  REQUIRE(parse_bench_case("m=32,prec=q4", t.value()).ok());
  CHECK(t->m == 32);
  CHECK(t->prec == TB_PREC_Q4);
  CHECK(parse_bench_case("", t.value()).ok());
  // Creation parameters after ':' are refused, with the way to give them.
  auto colon = parse_bench_spec("cpu:threads=8", d);
  CHECK(colon.status().code() == TB_INVALID_ARGUMENT);
  CHECK(colon.status().message().find("'threads=8' is not understood") != std::string::npos);
  CHECK(colon.status().message().find("cpu,threads=8") != std::string::npos);
  CHECK_FALSE(parse_bench_spec("cpu+cuda", d).ok());
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
  a.backend.name = "cpu";
  a.k = 96;
  a.n = 33;
  a.m = 3;
  BenchSpec b = a;
  b.backend = BackendSpec{};
  b.backend.plugin_path = TWINBIT_EXAMPLE_PLUGIN;
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
  a.backend.plugin_path = TWINBIT_EXAMPLE_PLUGIN;
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
