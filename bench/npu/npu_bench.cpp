// twinbit-bench --backend npu_layout: the emulated NPU-layout backend next to the CPU backend
// (I8 mode, the same bound strips, interleaved A B A B in one process), and per projection what a
// real RK3588 would see under each mapping of docs/NPU.md: matmul calls, multiply-adds, bytes and
// the modelled chip time (backends/npu_layout/npu_mapping.h: 30 us per call, 10 G multiply-adds/s
// per core). The emulator's speed is not the chip's: it is measured so that tests and the demo
// stay usable; the chip's numbers are the model's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/npu_layout/npu_mapping.h"
#include "bench/bench.h"
#include "core/numerics.h"
#include "core/reference.h"
#include "core/registry.h"
#include "core/strip_layout.h"

namespace twinbit::bench {
namespace {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int cores_of(const BackendSpec& spec) {
  for (const BackendParam& p : spec.params) {
    if (p.key == "cores") return std::atoi(p.value.c_str());
  }
  return 3;
}

}  // namespace

Status run_npu(const Options& o, std::vector<Case>& out) {
  auto npu_made = create_backend(o.spec);
  if (!npu_made.ok()) return npu_made.status();
  Backend& npu = npu_made.value();
  BackendSpec cpu_spec;
  cpu_spec.name = "cpu";
  cpu_spec.params = {{"threads", std::to_string(o.threads)}};
  auto cpu_made = create_backend(cpu_spec);
  if (!cpu_made.ok()) return cpu_made.status();
  Backend& cpu = cpu_made.value();
  const int cores = cores_of(o.spec);
  const int reps = o.reps > 0 ? o.reps : (o.quick ? 1 : 3);
  std::printf("npu_layout (%s) vs cpu (%s), I8 mode, q8, %d interleaved reps, median us\n",
              npu.device().c_str(), cpu.device().c_str(), reps);
  std::printf("%-8s %4s | %10s %10s %6s | per-group: %6s %9s %8s %8s %9s | expanded: %5s %9s %9s\n",
              "shape", "M", "npu_emu", "cpu", "ratio", "calls", "MAC", "B MB", "A+C MB", "chip us",
              "calls", "MAC", "chip us");
  std::mt19937_64 rng(1);
  for (const ShapeDef& sh : kProjectionShapes) {
    if (!o.shapes.empty() && std::find(o.shapes.begin(), o.shapes.end(), sh.name) == o.shapes.end()) continue;
    const StripLayout layout{TB_PREC_Q8, sh.n, sh.k};
    std::vector<uint8_t> codes(layout.codes_bytes());
    std::vector<uint16_t> scales(layout.scales_bytes() / 2);
    for (auto& c : codes) c = static_cast<uint8_t>(rng());
    for (auto& s : scales) s = static_cast<uint16_t>(0x2000 + rng() % 0x1000);  // small normal halves
    tb_weights_view view{};
    view.kind = TB_WEIGHTS_STRIPS;
    view.strips = layout.view(codes.data(), scales.data());
    auto bn = npu.bind(view);
    if (!bn.ok()) return bn.status();
    auto bc = cpu.bind(view);
    if (!bc.ok()) return bc.status();
    const BoundWeights& wn = bn.value();
    const BoundWeights& wc = bc.value();
    for (int64_t m : o.ms) {
      const int64_t kp = layout.kp(), groups = kp / 32;
      std::vector<float> x(static_cast<size_t>(m * sh.k));
      for (auto& v : x) v = static_cast<float>(static_cast<int64_t>(rng() % 2001) - 1000) / 1000.0f;
      std::vector<int8_t> xq(static_cast<size_t>(m * kp));
      std::vector<float> xd(static_cast<size_t>(m * groups)), yn(static_cast<size_t>(m * sh.n)), yc(yn);
      ref::quantize_activations(m, sh.k, x.data(), sh.k, xq.data(), kp, xd.data(), groups);
      tb_gemm_args an{TB_ACT_I8, m, nullptr, 0, xq.data(), kp, xd.data(), groups, yn.data(), sh.n};
      tb_gemm_args ac = an;
      ac.y = yc.data();
      std::vector<double> tn, tc;
      for (int r = 0; r < reps; ++r) {  // interleaved: A B A B
        double t0 = now_us();
        TB_RETURN_IF_ERROR(npu.gemm(wn, an));
        tn.push_back(now_us() - t0);
        t0 = now_us();
        TB_RETURN_IF_ERROR(cpu.gemm(wc, ac));
        tc.push_back(now_us() - t0);
      }
      if (yn != yc) {
        return Error(TB_INTERNAL, "%s M %lld: npu_layout and cpu outputs differ", sh.name, (long long)m);
      }
      const npu::MappingCost pg = npu::mapping_cost(npu::Mapping::per_group, m, sh.n, sh.k, cores);
      const npu::MappingCost ex = npu::mapping_cost(npu::Mapping::expanded, m, sh.n, sh.k, cores);
      Case c;
      c.shape = sh.name;
      c.k = sh.k;
      c.n = sh.n;
      c.m = m;
      c.prec = "q8";
      c.mode = "i8";
      c.us = median(tn);
      c.peer_us = median(tc);
      c.ratio = c.us / c.peer_us;
      c.gbps = static_cast<double>(layout.codes_bytes()) / c.us / 1e3;
      char note[256];
      std::snprintf(note, sizeof note, "per-group %lld calls %.3g MAC %.1f us chip; expanded %lld calls %.3g MAC %.1f us chip",
                    (long long)pg.calls, pg.macs, pg.model_us, (long long)ex.calls, ex.macs, ex.model_us);
      c.note = note;
      std::printf("%-8s %4lld | %10.0f %10.0f %6.1f | %17lld %9.3g %8.1f %8.1f %9.0f | %15lld %9.3g %9.0f\n",
                  sh.name, (long long)m, c.us, c.peer_us, c.ratio, (long long)pg.calls, pg.macs,
                  pg.b_bytes / 1e6, pg.ac_bytes / 1e6, pg.model_us, (long long)ex.calls, ex.macs, ex.model_us);
      out.push_back(c);
    }
  }
  return Status();
}

}  // namespace twinbit::bench
