// The CPU backend's gemv_f32, gemv_f32_pair, gdn_delta and activation quantiser against the
// scalar reference, bit for bit, on every runnable instruction-set tag.
#include <doctest/doctest.h>

#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "core/reference.h"
#include "tests/test_cpu_util.h"

namespace twinbit::test {

TEST_CASE("cpu gemv_f32 and gemv_f32_pair equal ref::gemv_f32 bitwise, rows 1..300 x cols 1..2049, every isa") {
  for (cpu::Isa isa : cpu::runnable_isas()) {
    auto be = cpu_backend_for(isa);
    REQUIRE(be.ok());
    for (int64_t rows : {1, 7, 33, 300}) {
      for (int64_t cols : {1, 5, 31, 32, 33, 64, 100, 2048, 2049}) {
        std::vector<float> wa = random_activations(rows * cols, rows * 100 + cols);
        std::vector<float> wb = random_activations(rows * cols, rows * 100 + cols + 1);
        std::vector<float> x = random_activations(cols, cols);
        // Lanes that end at -0: a row of negative zeros times positive x.
        for (int64_t c = 0; c < cols; ++c) wa[c] = -0.0f;
        for (int64_t c = 0; c < cols; ++c) x[c] = x[c] < 0 ? -x[c] : x[c];
        tb_weights_view va{}, vb{};
        va.kind = vb.kind = TB_WEIGHTS_F32;
        va.matrix = {rows, cols, wa.data()};
        vb.matrix = {rows, cols, wb.data()};
        std::vector<float> ra(rows), rb(rows), ya(rows, 7.0f), yb(rows, 7.0f), y1(rows);
        ref::gemv_f32(va.matrix, x.data(), ra.data());
        ref::gemv_f32(vb.matrix, x.data(), rb.data());
        auto ba = be->bind(va);
        auto bb = be->bind(vb);
        REQUIRE(ba.ok());
        REQUIRE(bb.ok());
        INFO("isa " << std::string(cpu::isa_name(isa)) << " rows " << rows << " cols " << cols);
        REQUIRE(be->gemv_f32(ba.value(), x.data(), y1.data()).ok());
        CHECK(same_bits(y1.data(), ra.data(), rows));
        REQUIRE(be->gemv_f32_pair(ba.value(), bb.value(), x.data(), ya.data(), yb.data()).ok());
        CHECK(same_bits(ya.data(), ra.data(), rows));
        CHECK(same_bits(yb.data(), rb.data(), rows));
      }
    }
  }
}

TEST_CASE("cpu gdn_delta equals ref::gdn_delta bitwise (state and output), kd=vd=128 fast path and generic kd/vd, every isa") {
  struct Dims { int64_t vh, kh, kd, vd; };
  const Dims dims[] = {{4, 2, 128, 128}, {2, 2, 128, 128}, {16, 16, 128, 128},
                       {3, 1, 64, 37}, {2, 1, 5, 3}, {4, 4, 128, 100}, {2, 2, 33, 128}};
  for (cpu::Isa isa : cpu::runnable_isas()) {
    auto be = cpu_backend_for(isa);
    REQUIRE(be.ok());
    for (const Dims& d : dims) {
      const uint64_t seed = d.vh * 1000 + d.kd * 10 + d.vd;
      std::vector<float> state = random_activations(d.vh * d.kd * d.vd, seed);
      std::vector<float> q = random_activations(d.kh * d.kd, seed + 1);
      std::vector<float> k = random_activations(d.kh * d.kd, seed + 2);
      std::vector<float> v = random_activations(d.vh * d.vd, seed + 3);
      std::vector<float> g = random_activations(d.vh, seed + 4);
      std::vector<float> beta = random_activations(d.vh, seed + 5);
      g[0] = -1e30f;  // alpha = +0: the state is zeroed through the multiply
      std::vector<float> state_ref = state, o_ref(d.vh * d.vd), o(d.vh * d.vd);
      tb_gdn_args r{d.vh, d.kh, d.kd, d.vd, state_ref.data(), q.data(), k.data(), v.data(),
                    g.data(), beta.data(), o_ref.data()};
      ref::gdn_delta(r);
      tb_gdn_args a = r;
      a.state = state.data();
      a.o = o.data();
      INFO("isa " << std::string(cpu::isa_name(isa)) << " vh " << d.vh << " kh " << d.kh
                  << " kd " << d.kd << " vd " << d.vd);
      REQUIRE(be->gdn_delta(a).ok());
      CHECK(same_bits(o.data(), o_ref.data(), o.size()));
      CHECK(same_bits(state.data(), state_ref.data(), state.size()));
    }
  }
}

TEST_CASE("cpu quantize kernel equals ref::quantize_activations bitwise (codes, scales), K 1..2049, every isa") {
  for (cpu::Isa isa : cpu::runnable_isas()) {
    const cpu::KernelTable& kt = cpu::kernel_table(isa);
    for (int64_t k : {1, 31, 32, 33, 100, 2048, 2049}) {
      const int64_t m = 5, kp = pad32(k), ng = kp / 32;
      std::vector<float> x = random_activations(m * k, k);
      for (int64_t i = 0; i < 32 && i < k; ++i) x[i] = 0.0f;  // an all-zero group: d = 0
      // Exact ties of x / d at .5: amax = 127 makes d = 1.
      if (k >= 64) {
        for (int64_t i = 32; i < 64; ++i) x[i] = (i % 2 ? 2.5f : -3.5f);
        x[40] = 127.0f;
      }
      std::vector<int8_t> q_ref(m * kp, 1), q(m * kp, 2);
      std::vector<float> d_ref(m * ng), d(m * ng);
      std::vector<int32_t> sums(m * ng);
      ref::quantize_activations(m, k, x.data(), k, q_ref.data(), kp, d_ref.data(), ng);
      kt.quantize(k, x.data(), k, q.data(), kp, d.data(), ng, sums.data(), 0, m);
      INFO("isa " << std::string(cpu::isa_name(isa)) << " K " << k);
      CHECK(std::memcmp(q.data(), q_ref.data(), q.size()) == 0);
      CHECK(same_bits(d.data(), d_ref.data(), d.size()));
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t gi = 0; gi < ng; ++gi) {
          int32_t s = 0;
          for (int kk = 0; kk < 32; ++kk) s += q_ref[r * kp + gi * 32 + kk];
          CHECK(sums[r * ng + gi] == s);
        }
      }
    }
  }
}

}  // namespace twinbit::test
