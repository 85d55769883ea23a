// The npu_layout backend beyond the conformance sweep (which runs it as the ctest instance
// conformance_npu_layout): K past one B segment, N past one matmul's 4096, M past one context's
// row block, column ranges, every core count, and its device-call count against the mapping
// model (backends/npu_layout/npu_mapping.h); what it refuses, with which reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/npu_layout/npu_device.h"
#include "backends/npu_layout/npu_mapping.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"
#include "core/strip_layout.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {
namespace {

Result<Backend> npu_backend(int cores) {
  BackendSpec spec;
  spec.name = "npu_layout";
  spec.params = {{"cores", std::to_string(cores)}};
  return create_backend(spec);
}

struct I8Rows {
  std::vector<int8_t> xq;
  std::vector<float> xd;
  int64_t kp = 0;
};
I8Rows quantized(int64_t m, int64_t k, uint64_t seed) {
  I8Rows r;
  r.kp = pad32(k);
  std::vector<float> x = random_activations(m * k, seed);
  r.xq.assign(static_cast<size_t>(m * r.kp), 0);
  r.xd.assign(static_cast<size_t>(m * r.kp / 32), 0.0f);
  ref::quantize_activations(m, k, x.data(), k, r.xq.data(), r.kp, r.xd.data(), r.kp / 32);
  return r;
}

// The backend's gemm on the view w equals the reference's, bit for bit (y prefilled with a
// canary: columns past N must stay untouched).
void check_view(Backend& be, const tb_strips& w, int64_t m, uint64_t seed) {
  const I8Rows x = quantized(m, w.k, seed);
  const int64_t ldy = w.n + 3;
  std::vector<float> want(static_cast<size_t>(m * ldy), 7.0f), got(want);
  ref::gemm_i8(w, m, x.xq.data(), x.kp, x.xd.data(), x.kp / 32, want.data(), ldy);
  tb_weights_view view{};
  view.kind = TB_WEIGHTS_STRIPS;
  view.strips = w;
  auto bound = be.bind(view);
  REQUIRE(bound.ok());
  tb_gemm_args a{TB_ACT_I8, m, nullptr, 0, x.xq.data(), x.kp, x.xd.data(), x.kp / 32, got.data(), ldy};
  REQUIRE(be.gemm(bound.value(), a).ok());
  CHECK(first_difference(got.data(), want.data(), got.size()) == -1);
}

}  // namespace

TEST_CASE("npu_layout gemm equals the reference bit for bit: K > 8192, N > 4096, M > 256, q8 q4, cores 1..3") {
  struct Shape { int64_t m, n, k; int cores; };
  // Each core count meets a shape whose chunks it cuts differently (N 4130: one core gets two
  // matmuls of 4096 and 64 columns; three cores get 1408 each).
  const Shape shapes[] = {{1, 33, 32, 1},   {33, 4130, 64, 1}, {33, 4130, 64, 3}, {3, 100, 8224, 2},
                          {2, 40, 11008, 3}, {300, 64, 96, 2},  {17, 1000, 2048, 3}};
  for (const Shape& s : shapes) {
    auto be = npu_backend(s.cores);
    REQUIRE(be.ok());
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      INFO("cores " << s.cores << " " << prec_name(prec) << " M " << s.m << " N " << s.n << " K " << s.k);
      OwnedStrips w = random_strips(prec, s.n, s.k, 40 + s.n + prec);
      check_view(be.value(), w.view, s.m, 7 + s.m);
    }
  }
}

TEST_CASE("npu_layout gemm on column ranges folds the projection's plan (N 5000: 4 slices of the whole)") {
  auto be = npu_backend(3);
  REQUIRE(be.ok());
  OwnedStrips w = random_strips(TB_PREC_Q8, 5000, 2048, 11);
  for (auto [begin, count] : {std::pair<int64_t, int64_t>{0, 1024}, {1024, 3200}, {4928, 72}}) {
    auto range = StripLayout::columns(w.view, begin, count);
    REQUIRE(range.ok());
    INFO("columns " << begin << " + " << count);
    check_view(be.value(), range.value(), 2, 3);
  }
}

TEST_CASE("npu_layout bind statistics: Np * Kp native bytes per handle (q4: twice its codes)") {
  auto be = npu_backend(2);
  REQUIRE(be.ok());
  using Stats = tb_code (*)(void*, uint64_t*, uint64_t*, tb_error*);
  auto stats = reinterpret_cast<Stats>(be->proc("npu_layout.bind_stats"));
  REQUIRE(be->proc("npu_layout.bind_stats") != nullptr);
  auto read = [&](uint64_t& bytes, uint64_t& handles) {
    tb_error err{};
    REQUIRE(stats(be->raw().ctx, &bytes, &handles, &err) == TB_OK);
  };
  uint64_t bytes = 1, handles = 1;
  read(bytes, handles);
  CHECK(bytes == 0);
  CHECK(handles == 0);
  OwnedStrips q4 = random_strips(TB_PREC_Q4, 40, 64, 1), q8 = random_strips(TB_PREC_Q8, 100, 96, 2);
  tb_weights_view view{};
  view.kind = TB_WEIGHTS_STRIPS;
  view.strips = q4.view;
  {
    auto b4 = be->bind(view);
    REQUIRE(b4.ok());
    view.strips = q8.view;
    auto b8 = be->bind(view);
    REQUIRE(b8.ok());
    read(bytes, handles);
    CHECK(bytes == 64 * 64 + 128 * 96);  // q4: 2 x its 2048 code bytes; q8: its codes
    CHECK(q4.view.codes_bytes == 2048);
    CHECK(handles == 2);
  }
  read(bytes, handles);
  CHECK(bytes == 0);
  CHECK(handles == 0);
}

TEST_CASE("npu_layout makes the device calls the per-group mapping counts") {
  auto be = npu_backend(3);
  REQUIRE(be.ok());
  OwnedStrips w = random_strips(TB_PREC_Q4, 4200, 320, 5);
  tb_weights_view view{};
  view.kind = TB_WEIGHTS_STRIPS;
  view.strips = w.view;
  auto bound = be->bind(view);
  REQUIRE(bound.ok());
  for (int64_t m : {1, 257}) {
    const I8Rows x = quantized(m, 320, 1);
    std::vector<float> y(static_cast<size_t>(m * 4200));
    tb_gemm_args a{TB_ACT_I8, m, nullptr, 0, x.xq.data(), x.kp, x.xd.data(), x.kp / 32, y.data(), 4200};
    const uint64_t before = npu::runs_so_far();
    REQUIRE(be->gemm(bound.value(), a).ok());
    const npu::MappingCost cost = npu::mapping_cost(npu::Mapping::per_group, m, 4200, 320, 3);
    // 3 chunks (1408, 1408, 1408 columns) x 10 groups x row blocks of <= 256.
    CHECK(cost.calls == 3 * 10 * (m > 256 ? 2 : 1));
    CHECK(npu::runs_so_far() - before == static_cast<uint64_t>(cost.calls));
  }
}

TEST_CASE("npu_layout refuses what the RK3588 int8 matmul cannot do, with the reason") {
  auto be = npu_backend(2);
  REQUIRE(be.ok());
  tb_op_desc d = gemm_op_desc(TB_PREC_Q8, TB_ACT_I8, 1, 64, 64);
  CHECK(be->supports(d).ok());
  d.prec = TB_PREC_Q4;
  CHECK(be->supports(d).ok());
  d.mode = TB_ACT_F32;
  Status s = be->supports(d);
  CHECK(s.code() == TB_UNIMPLEMENTED);
  CHECK(s.message().find("takes no float activations") != std::string::npos);
  d.mode = TB_ACT_I8;
  d.k = 100;
  s = be->supports(d);
  CHECK(s.code() == TB_UNIMPLEMENTED);
  CHECK(s.message().find("K = 100 is not a multiple of 32") != std::string::npos);
  for (tb_op op : {TB_OP_GEMV_F32, TB_OP_GEMV_F32_PAIR, TB_OP_GDN_DELTA}) {
    tb_op_desc o{};
    o.op = op;
    o.n = o.k = o.vh = o.kh = o.kd = o.vd = 4;
    s = be->supports(o);
    CHECK(s.code() == TB_UNIMPLEMENTED);
    CHECK(s.message().find("takes no float activations") != std::string::npos);
  }
  // The strips of a K % 32 != 0 projection are refused at bind too; so is an f32 matrix.
  OwnedStrips w = random_strips(TB_PREC_Q8, 40, 100, 1);
  tb_weights_view view{};
  view.kind = TB_WEIGHTS_STRIPS;
  view.strips = w.view;
  CHECK(be->bind(view).status().code() == TB_UNIMPLEMENTED);
  // F32 mode on bound strips: UNIMPLEMENTED from the operation as well.
  OwnedStrips w2 = random_strips(TB_PREC_Q8, 40, 64, 1);
  view.strips = w2.view;
  auto bound = be->bind(view);
  REQUIRE(bound.ok());
  std::vector<float> x(64, 1.0f), y(40);
  tb_gemm_args a{TB_ACT_F32, 1, x.data(), 64, nullptr, 0, nullptr, 0, y.data(), 40};
  CHECK(be->gemm(bound.value(), a).code() == TB_UNIMPLEMENTED);
}

TEST_CASE("npu_layout creation parameters: cores 1..3, one device, after cpu (and cuda) in the registry") {
  for (const char* bad : {"npu_layout,cores=0", "npu_layout,cores=4", "npu_layout,cores=x",
                          "npu_layout,threads=2"}) {
    INFO(bad);
    auto b = create_backend(std::string_view(bad));
    CHECK(b.status().code() == TB_INVALID_ARGUMENT);
  }
  CHECK(create_backend(std::string_view("npu_layout:1")).status().code() == TB_UNAVAILABLE);
  auto b = create_backend(std::string_view("npu_layout,cores=2"));
  REQUIRE(b.ok());
  CHECK(b->features().find("cores.2") != std::string::npos);
  std::vector<std::string> order;
  for (const BackendEntry& e : builtin_backends()) order.push_back(e.name);
  const auto at = [&](const char* n) { return std::find(order.begin(), order.end(), std::string(n)) - order.begin(); };
  REQUIRE(at("npu_layout") < static_cast<long>(order.size()));
  CHECK(at("cpu") < at("npu_layout"));
  if (at("cuda") < static_cast<long>(order.size())) CHECK(at("cuda") < at("npu_layout"));
}

}  // namespace twinbit::test
