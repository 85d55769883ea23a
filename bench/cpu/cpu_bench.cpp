// twinbit-bench --backend cpu: the CPU backend on the Qwen3-VL-2B projections (bench.h's
// kProjectionShapes; results: docs/results/cpu-2026-11-29.md),
// per case: the median time of one gemm call with cold weights (rotating over copies past
// 1 GiB), effective GB/s over the weight bytes, the floor measured in the same run (a pure read
// of the same bytes with the same threads and partition - the backend's read_floor - and, for
// F32 mode at M > 1, the FMA-peak time of the M*N*K multiply-adds, whichever is larger), the
// ratio to that floor, and an Eigen float GEMV/GEMM of the same shape as a peer (also cold,
// same threads: the N axis split across the arena).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "artifacts/huge_pages.h"
#include "backends/cpu/cpu_amx.h"
#include "bench/bench.h"
#include "bench/cpu/cpu_peak.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/registry.h"
#include "core/strip_layout.h"

namespace twinbit::bench {
namespace {

constexpr int64_t kColdBytes = int64_t{1} << 30;  // rotate copies past 1 GiB: nothing stays cached

// Memory for weight copies: ordinary 4 KiB pages (what a mapped artifact gets), or 2 MiB
// transparent huge pages asked for (what an artifact read with --read copy gets;
// artifacts/huge_pages.h). Both page-aligned.
struct PageDeleter {
  size_t bytes = 0;
  bool huge = false;
  void operator()(uint8_t* p) const {
    if (huge) {
      artifact::unmap_huge(p, bytes);
    } else {
      std::free(p);
    }
  }
};
using Buffer = std::unique_ptr<uint8_t, PageDeleter>;

Buffer alloc_pages(int64_t bytes, bool huge) {
  const auto rounded = static_cast<size_t>((bytes + 4095) / 4096 * 4096);
  void* p = huge ? artifact::map_huge(rounded) : std::aligned_alloc(4096, rounded);
  return Buffer(static_cast<uint8_t*>(p), PageDeleter{rounded, huge});
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Fills bytes [0, count) with pseudo-random bits, in parallel (touches every page once).
void fill_random(tbb::task_arena& arena, uint8_t* p, int64_t count, uint64_t seed) {
  constexpr int64_t kBlock = 1 << 20;
  arena.execute([&] {
    tbb::parallel_for(int64_t{0}, (count + kBlock - 1) / kBlock, [&](int64_t b) {
      uint64_t s = seed ^ (static_cast<uint64_t>(b) * 0x632be59bd9b4e019ull);
      const int64_t end = std::min(count, (b + 1) * kBlock);
      int64_t i = b * kBlock;
      for (; i + 8 <= end; i += 8) {
        const uint64_t v = splitmix(s);
        std::memcpy(p + i, &v, 8);
      }
      for (; i < end; ++i) p[i] = static_cast<uint8_t>(splitmix(s));
    });
  });
}

// Copies of one strip set, each copy's codes then scales in one page-aligned block.
struct StripPool {
  Buffer mem;
  int64_t mem_bytes = 0;
  std::vector<tb_strips> views;
  std::vector<BoundWeights> bound;
  int64_t weight_bytes = 0;  // codes + scales of one copy
};

Result<StripPool> make_pool(const Backend& be, tbb::task_arena& arena, tb_prec prec, int64_t n,
                            int64_t k, bool huge) {
  StripPool pool;
  const int64_t codes = static_cast<int64_t>(strip_codes_bytes(prec, n, k));
  const int64_t scales = static_cast<int64_t>(strip_scales_bytes(n, k));
  const int64_t stride = (codes + scales + 4095) / 4096 * 4096;
  const int64_t copies = std::max<int64_t>(2, (kColdBytes + stride - 1) / stride);
  pool.mem = alloc_pages(stride * copies, huge);
  pool.mem_bytes = stride * copies;
  if (!pool.mem) {
    return Error(TB_RESOURCE_EXHAUSTED, "bench: cannot allocate %lld bytes of weight copies",
                 static_cast<long long>(stride * copies));
  }
  uint8_t* base = pool.mem.get();
  fill_random(arena, base, stride * copies, 0x7717b17 + prec);
  arena.execute([&] {
    tbb::parallel_for(int64_t{0}, copies, [&](int64_t c) {
      uint8_t* cp = base + c * stride;
      if (prec == TB_PREC_Q8) {  // codes in [-127, 127]: -128 is not a q8 code
        for (int64_t i = 0; i < codes; ++i) cp[i] = cp[i] == 0x80 ? 0x81 : cp[i];
      }
      // Normal binary16 scales of moderate size (no subnormal float results: those would cost
      // microcode assists that real weights do not cause).
      auto* sc = reinterpret_cast<uint16_t*>(cp + codes);
      for (int64_t i = 0; i < scales / 2; ++i) sc[i] = static_cast<uint16_t>(0x1c00 | (sc[i] & 0x03ff));
    });
  });
  for (int64_t c = 0; c < copies; ++c) {
    const tb_strips s = StripLayout{prec, n, k}.view(
        base + c * stride, reinterpret_cast<const uint16_t*>(base + c * stride + codes));
    tb_weights_view v{};
    v.kind = TB_WEIGHTS_STRIPS;
    v.strips = s;
    auto b = be.bind(v);
    if (!b.ok()) return b.status();
    pool.views.push_back(s);
    pool.bound.push_back(std::move(b.value()));
  }
  pool.weight_bytes = codes + scales;
  return pool;
}

// Median over `samples` of the mean time of one call within a full rotation over `copies`.
template <class Call>
Result<double> median_us(int64_t copies, int samples, const Call& call) {
  for (int64_t c = 0; c < copies; ++c) TB_RETURN_IF_ERROR(call(c));  // warm-up rotation
  std::vector<double> per_call;
  for (int s = 0; s < samples; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < copies; ++c) TB_RETURN_IF_ERROR(call(c));
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    per_call.push_back(us / static_cast<double>(copies));
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

// Settings of one tuning switch (cpu_backend.h: cpu.set_prefetch_bytes) measured in one process,
// interleaved: each sample is a rotation with each setting in turn, so all see the same machine
// state. The list ends on the default, which stays set afterwards.
constexpr int64_t kPrefetchDistances[5] = {0, 2048, 4096, 16384, 8192};
template <int N, class Call>
Status ab_variants_us(const Backend& be, const char* name, const int64_t (&values)[N], int64_t copies,
                      int samples, const Call& call, double (&out_us)[N]) {
  std::vector<double> t[N];
  for (int s = -1; s < samples; ++s) {  // s = -1: a warm-up rotation of each
    for (int v = 0; v < N; ++v) {
      TB_RETURN_IF_ERROR(be.set_switch(name, values[v]));
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t c = 0; c < copies; ++c) TB_RETURN_IF_ERROR(call(c));
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (s >= 0) t[v].push_back(us / static_cast<double>(copies));
    }
  }
  for (int v = 0; v < N; ++v) {
    std::sort(t[v].begin(), t[v].end());
    out_us[v] = t[v][t[v].size() / 2];
  }
  return Status();
}

// Calls timed rotation by rotation (each sample a rotation of each in turn, so all see the same
// machine state): --vs-isa's floor, default tag and forced tag; --pages ab's floor and default
// tag on each page size. Medians in out_us.
Status interleaved_us(int64_t copies, int samples, const std::vector<std::function<Status(int64_t)>>& calls,
                      std::vector<double>& out_us) {
  std::vector<std::vector<double>> t(calls.size());
  for (int s = -1; s < samples; ++s) {  // s = -1: a warm-up rotation of each
    for (size_t v = 0; v < calls.size(); ++v) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t c = 0; c < copies; ++c) TB_RETURN_IF_ERROR(calls[v](c));
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (s >= 0) t[v].push_back(us / static_cast<double>(copies));
    }
  }
  out_us.clear();
  for (std::vector<double>& v : t) {
    std::sort(v.begin(), v.end());
    out_us.push_back(v[v.size() / 2]);
  }
  return Status();
}

// Eigen float peer: Y (N x M) = W (N x K) X (K x M), W column-major, rotating copies past 1 GiB,
// the N axis split over the arena's threads (Eigen itself runs single-threaded here).
Result<double> eigen_peer_us(tbb::task_arena& arena, int threads, int64_t n, int64_t k, int64_t m, bool huge,
                             int samples) {
  const int64_t bytes = n * k * 4;
  const int64_t copies = std::max<int64_t>(1, (kColdBytes + bytes - 1) / bytes);
  Buffer mem = alloc_pages(bytes * copies, huge);
  if (!mem) return Error(TB_RESOURCE_EXHAUSTED, "bench: cannot allocate the Eigen peer's weights");
  fill_random(arena, mem.get(), bytes * copies, 42);
  auto* f = reinterpret_cast<float*>(mem.get());
  const int64_t total = n * k * copies;
  arena.execute([&] {  // random bits -> floats in [-1, 1)
    tbb::parallel_for(int64_t{0}, (total + 65535) / 65536, [&](int64_t b) {
      for (int64_t i = b * 65536; i < std::min(total, (b + 1) * 65536); ++i) {
        uint32_t u;
        std::memcpy(&u, f + i, 4);
        f[i] = static_cast<float>(static_cast<int32_t>(u)) * 4.656612873e-10f;
      }
    });
  });
  Eigen::MatrixXf x = Eigen::MatrixXf::Random(k, m);
  Eigen::MatrixXf y(n, m);
  const int64_t chunk = (n + threads - 1) / threads;
  return median_us(copies, samples, [&](int64_t c) -> Status {
    Eigen::Map<const Eigen::MatrixXf> w(f + c * n * k, n, k);
    arena.execute([&] {
      tbb::parallel_for(0, threads, [&](int t) {
        const int64_t n0 = t * chunk, nb = std::min(n, n0 + chunk) - n0;
        if (nb > 0) y.middleRows(n0, nb).noalias() = w.middleRows(n0, nb) * x;
      }, tbb::static_partitioner());
    });
    return Status();
  });
}

void print_header() {
  std::printf("%-8s %5s %6s %3s %4s %4s %10s %7s %10s %6s %10s  %s\n", "shape", "K", "N", "M",
              "prec", "mode", "us", "GB/s", "floor_us", "ratio", "eigen_us", "note");
}
void print_case(const Case& c) {
  std::printf("%-8s %5lld %6lld %3lld %4s %4s %10.1f %7.2f %10.1f %6.2f %10.1f  %s\n",
              c.shape.c_str(), (long long)c.k, (long long)c.n, (long long)c.m, c.prec.c_str(),
              c.mode.c_str(), c.us, c.gbps, c.floor_us, c.ratio, c.peer_us, c.note.c_str());
  std::fflush(stdout);
}

}  // namespace

Status run_cpu(const Options& opt, std::vector<Case>& out) {
  // The arena of the backend and the peer's have the same thread count: --threads, unless the
  // spec gives threads= itself (then the peer follows it).
  BackendSpec spec = opt.spec;
  int threads = opt.threads;
  if (const std::string* t = spec.param("threads")) {
    threads = std::atoi(t->c_str());
  } else {
    spec.params.push_back({"threads", std::to_string(opt.threads)});
  }
  Result<Backend> be = create_backend(spec);
  if (!be.ok()) return be.status();
  std::optional<Backend> vs;  // --vs-isa: the same backend forced to another tag
  if (!opt.vs_isa.empty()) {
    BackendSpec vspec = spec;
    std::erase_if(vspec.params, [](const BackendParam& p) { return p.key == "isa"; });
    vspec.params.push_back({"isa", opt.vs_isa});
    Result<Backend> v = create_backend(vspec);
    if (!v.ok()) return v.status();
    vs.emplace(std::move(v.value()));
  }
  tb_backend_info info{};
  tb_error err{};
  be->raw().iface->describe(be->raw().ctx, &info, &err);
  const int samples = opt.reps > 0 ? opt.reps : (opt.quick ? 3 : 9);
  tbb::task_arena arena(threads);
  const double fma_rate = fma_peak_per_second(threads, opt.quick ? 3 : 5);
  std::printf("twinbit-bench cpu: %s; %d threads; median of %d rotations over >= 1 GiB of weight "
              "copies on %s; FMA peak %.1f GFMA/s (%.1f GFLOP/s)\n", info.device, threads, samples,
              opt.pages == "4k" ? "4 KiB pages" : opt.pages == "2m" ? "2 MiB pages" : "4 KiB pages (and 2 MiB, interleaved)",
              fma_rate * 1e-9, 2 * fma_rate * 1e-9);
  print_header();
  for (const ShapeDef& sh : kProjectionShapes) {
    if (!wanted(opt.shapes, sh.name)) continue;
    std::vector<double> peer(opt.ms.size());
    for (size_t i = 0; i < opt.ms.size(); ++i) {
      auto p = eigen_peer_us(arena, threads, sh.n, sh.k, opt.ms[i], opt.pages == "2m", samples);
      if (!p.ok()) return p.status();
      peer[i] = p.value();
    }
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      if (!wanted(opt.precs, prec_name(prec))) continue;
      auto pool = make_pool(be.value(), arena, prec, sh.n, sh.k, opt.pages == "2m");
      if (!pool.ok()) return pool.status();
      std::optional<StripPool> huge;  // --pages ab: the same copies on 2 MiB pages
      if (opt.pages == "ab") {
        auto h = make_pool(be.value(), arena, prec, sh.n, sh.k, true);
        if (!h.ok()) return h.status();
        huge.emplace(std::move(h.value()));
      }
      // What the kernel gave the 2 MiB-page copies (a hint it may refuse), told in every case's note.
      std::string pages_note;
      if (opt.pages != "4k") {
        const StripPool& hp = huge ? *huge : pool.value();
        const int64_t got = artifact::huge_page_bytes(hp.mem.get(), static_cast<size_t>(hp.mem_bytes));
        pages_note = Format("; copies on 2 MiB pages: %.1f%%", 100.0 * static_cast<double>(got) / static_cast<double>(hp.mem_bytes));
      }
      const int64_t copies = static_cast<int64_t>(pool->bound.size());
      std::vector<BoundWeights> vs_bound;
      for (int64_t c = 0; vs && c < copies; ++c) {
        tb_weights_view v{};
        v.kind = TB_WEIGHTS_STRIPS;
        v.strips = pool->views[static_cast<size_t>(c)];
        auto b = vs->bind(v);
        if (!b.ok()) return b.status();
        vs_bound.push_back(std::move(b.value()));
      }
      const int64_t kp = pad32(sh.k), ng = kp / 32;
      for (size_t mi = 0; mi < opt.ms.size(); ++mi) {
        const int64_t m = opt.ms[mi];
        auto rf = median_us(copies, samples, [&](int64_t c) { return be->read_floor(pool->bound[c], m); });
        if (!rf.ok()) return rf.status();
        std::vector<float> x(static_cast<size_t>(m * sh.k));
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) * 1e-3f - 1.0f;
        std::vector<int8_t> xq(static_cast<size_t>(m * kp));
        std::vector<float> xd(static_cast<size_t>(m * ng)), y(static_cast<size_t>(m * sh.n));
        ref::quantize_activations(m, sh.k, x.data(), sh.k, xq.data(), kp, xd.data(), ng);
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
          if (!wanted(opt.modes, act_mode_name(mode))) continue;
          const tb_gemm_args a{mode, m, x.data(), sh.k, xq.data(), kp, xd.data(), ng, y.data(), sh.n};
          const auto gemm = [&](int64_t c) { return be->gemm(pool->bound[c], a); };
          const bool vnni = std::string(info.device).find("avx512vnni") != std::string::npos;
          Result<double> t = median_us(copies, samples, gemm);
          if (!t.ok()) return t.status();
          std::vector<double> three = {-1, -1, -1};  // --vs-isa: floor, default tag, forced tag
          if (vs) {
            TB_RETURN_IF_ERROR(interleaved_us(
                copies, samples,
                {[&](int64_t c) { return be->read_floor(pool->bound[c], m); }, gemm,
                 [&](int64_t c) { return vs->gemm(vs_bound[static_cast<size_t>(c)], a); }},
                three));
          }
          std::vector<double> pages_ab;  // --pages ab: floor and tag on 4 KiB, then on 2 MiB pages
          if (huge) {
            TB_RETURN_IF_ERROR(interleaved_us(
                copies, samples,
                {[&](int64_t c) { return be->read_floor(pool->bound[c], m); }, gemm,
                 [&](int64_t c) { return be->read_floor(huge->bound[c], m); },
                 [&](int64_t c) { return be->gemm(huge->bound[c], a); }},
                pages_ab));
          }
          Case cs;
          cs.shape = sh.name;
          cs.k = sh.k;
          cs.n = sh.n;
          cs.m = m;
          cs.prec = prec_name(prec);
          cs.mode = act_mode_name(mode);
          cs.us = t.value();
          cs.gbps = static_cast<double>(pool->weight_bytes) / cs.us * 1e-3;
          cs.floor_us = rf.value();
          cs.note = "floor=read";
          const double fma_us = fma_rate > 0 ? static_cast<double>(m) * sh.n * sh.k / fma_rate * 1e6 : 0;
          if (mode == TB_ACT_F32 && m > 1 && fma_us > cs.floor_us) {
            cs.floor_us = fma_us;
            char note[96];
            std::snprintf(note, sizeof note, "floor=fma-peak (read %.1f us); %.0f%% of FMA peak",
                          rf.value(), 100.0 * fma_us / cs.us);
            cs.note = note;
          }
          if (mode == TB_ACT_I8) {
            // What an engine pays: the backend's quantize_i8 of the activations, then the gemm.
            std::vector<int8_t> own_q(xq.size());
            std::vector<float> own_d(xd.size());
            const tb_quantize_args qa{m, sh.k, x.data(), sh.k, own_q.data(), kp, own_d.data(), ng};
            Result<double> tq = median_us(copies, samples, [&](int64_t c) {
              TB_RETURN_IF_ERROR(be->quantize_i8(qa));
              return be->gemm(pool->bound[c], a);
            });
            if (!tq.ok()) return tq.status();
            char note[160];
            std::snprintf(note, sizeof note, "%s; %.0f GOPS; with quantize_i8 %.1f us",
                          cs.note.c_str(), 2.0 * m * sh.n * sh.k / cs.us * 1e-3, tq.value());
            cs.note = note;
          }
          cs.ratio = cs.us / cs.floor_us;
          if (vs) {
            cs.vs_us = three[2];
            char note[400];
            std::snprintf(note, sizeof note, "%s; interleaved: floor %.1f us, this tag %.1f us (%.2fx), isa=%s %.1f us (%.2fx)",
                          cs.note.c_str(), three[0], three[1], three[1] / three[0], opt.vs_isa.c_str(),
                          three[2], three[2] / three[0]);
            cs.note = note;
          }
          if (mode == TB_ACT_I8 && m >= 16 && std::string(info.device).find(", amx)") != std::string::npos) {
            // The amx tag's two tile schedules (cpu.set_amx_schedule), interleaved; then back to
            // 2, the backend's default (by rows), so the cases after this one time the default.
            constexpr int64_t kSchedules[2] = {0, 1};
            double sched_us[2] = {-1, -1};
            TB_RETURN_IF_ERROR(ab_variants_us(be.value(), "cpu.set_amx_schedule", kSchedules, copies, samples,
                                              gemm, sched_us));
            TB_RETURN_IF_ERROR(be->set_switch("cpu.set_amx_schedule", cpu::kAmxScheduleAuto));
            char note[520];
            std::snprintf(note, sizeof note, "%s; amx schedule quadrants / shared: %.1f / %.1f us",
                          cs.note.c_str(), sched_us[0], sched_us[1]);
            cs.note = note;
          }
          if (mode == TB_ACT_I8 && m >= 16 && !opt.amx_tunings.empty() &&
              std::string(info.device).find(", amx)") != std::string::npos) {
            // --amx-tuning: the quadrant schedule at each tuning, cold and interleaved; then the
            // floor and the default with warm weights (copy 0 every call: in L2/L3 where they fit).
            TB_RETURN_IF_ERROR(be->set_switch("cpu.set_amx_schedule", 0));
            std::vector<double> tuned;
            std::vector<std::function<Status(int64_t)>> calls;
            for (int64_t v : opt.amx_tunings) {
              calls.push_back([&, v](int64_t c) {
                TB_RETURN_IF_ERROR(be->set_switch("cpu.set_amx_tuning", v));
                return be->gemm(pool->bound[c], a);
              });
            }
            TB_RETURN_IF_ERROR(interleaved_us(copies, samples, calls, tuned));
            calls.clear();
            for (int64_t v : opt.amx_tunings) {
              calls.push_back([&, v](int64_t) {
                TB_RETURN_IF_ERROR(be->set_switch("cpu.set_amx_tuning", v));
                return be->gemm(pool->bound[0], a);
              });
            }
            calls.push_back([&](int64_t) { return be->read_floor(pool->bound[0], m); });
            std::vector<double> warm;
            TB_RETURN_IF_ERROR(interleaved_us(copies, samples, calls, warm));
            TB_RETURN_IF_ERROR(be->set_switch("cpu.set_amx_tuning", cpu::kAmxTuningAuto));
            TB_RETURN_IF_ERROR(be->set_switch("cpu.set_amx_schedule", cpu::kAmxScheduleAuto));
            cs.note += Format("; quadrants by tuning, cold / warm:");
            for (size_t i = 0; i < opt.amx_tunings.size(); ++i) {
              cs.note += Format(" %#llx %.1f / %.1f us;", static_cast<long long>(opt.amx_tunings[i]), tuned[i], warm[i]);
            }
            cs.note += Format(" warm floor %.1f us", warm.back());
          }
          if (m == 1 && vnni) {  // the software prefetch distance, default 8 KiB
            double dist_us[5] = {-1, -1, -1, -1, -1};
            TB_RETURN_IF_ERROR(ab_variants_us(be.value(), "cpu.set_prefetch_bytes", kPrefetchDistances, copies,
                                              samples, gemm, dist_us));
            char note[240];
            std::snprintf(note, sizeof note, "%s; prefetch distance none / 2 / 4 / 8 / 16 KiB: %.1f / %.1f / %.1f / %.1f / %.1f us",
                          cs.note.c_str(), dist_us[0], dist_us[1], dist_us[2], dist_us[4], dist_us[3]);
            cs.note = note;
          }
          cs.note += pages_note;
          if (huge) {
            cs.note += Format("; pages, interleaved: 4 KiB floor %.1f us, this tag %.1f us (%.2fx); 2 MiB floor %.1f us, "
                              "this tag %.1f us (%.2fx)", pages_ab[0], pages_ab[1], pages_ab[1] / pages_ab[0], pages_ab[2],
                              pages_ab[3], pages_ab[3] / pages_ab[2]);
          }
          cs.peer_us = peer[mi];
          print_case(cs);
          out.push_back(cs);
        }
      }
    }
  }
  return Status();
}

}  // namespace twinbit::bench
