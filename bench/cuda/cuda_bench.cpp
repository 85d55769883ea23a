// twinbit-bench --backend cuda: per Qwen3-VL-2B shape, M, precision and activation mode, the
// kernel time of twinbit's gemm (CUDA events around each launch, weights rotated over copies
// that together exceed 3x the L2, median), next to the in-run device-to-device copy floor, the
// cuBLAS bf16 GEMM of the same shape (peer), the source engine's mapping (baseline: q8 codes and
// f32 activations, two launches, on the same weights and activations, checked against the
// reference; x_source = source_us / kernel_us) and the offload round trip through the public API.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/quantize_kernels.h"
#include "bench/bench.h"
#include "bench/cuda/gemm_variants.h"
#include "bench/cuda/layer_bench.h"
#include "bench/cuda/offload_bench.h"
#include "bench/cuda/source_check.h"
#include "bench/cuda/source_mapping.h"
#include "bench/cuda/timing.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"
#include "core/reference.h"
#include "core/registry.h"

namespace twinbit::bench {
namespace {

struct Shape {
  const char* name;
  int64_t k, n;
};
const Shape kShapes[] = {{"q_o", 2048, 2048},     {"k_v", 2048, 1024},  {"gate", 2048, 6144},
                         {"gate_up", 2048, 12288}, {"down", 6144, 2048}, {"qkv", 2048, 4096},
                         {"lm_head", 2048, 151936}};

// Median device time (µs) of each variant, interleaved: rep i launches every variant once, in
// turn, each bracketed by its own events (so drift and warm-up hit all variants alike), after a
// hold kernel that keeps the host's enqueue cadence out of the events.
// `launch(v, j)` runs variant v as the j-th launch overall (j picks the weight copy).
Result<std::vector<double>> time_events_interleaved(cudaStream_t s, int warmup, int reps, int variants,
                                                    const std::function<Status(int, int)>& launch) {
  int j = 0;
  for (int i = 0; i < warmup; ++i) {
    for (int v = 0; v < variants; ++v) TB_RETURN_IF_ERROR(launch(v, j++));
  }
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(reps * variants));
  for (auto& e : ev) TB_CUDA_TRY(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    TB_CUDA_TRY(launch_hold(s, hold_us(variants)));
    for (int v = 0; v < variants; ++v) {
      const size_t e = 2 * static_cast<size_t>(i * variants + v);
      TB_CUDA_TRY(cudaEventRecord(ev[e], s));
      TB_RETURN_IF_ERROR(launch(v, j++));
      TB_CUDA_TRY(cudaEventRecord(ev[e + 1], s));
    }
  }
  TB_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<double> out(variants);
  for (int v = 0; v < variants; ++v) {
    std::vector<double> us(reps);
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      const size_t e = 2 * static_cast<size_t>(i * variants + v);
      TB_CUDA_TRY(cudaEventElapsedTime(&ms, ev[e], ev[e + 1]));
      us[i] = ms * 1e3;
    }
    out[v] = median(us);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return out;
}

// Device time (µs) per launch when `batch` launches run back to back between one pair of events
// (the stream held while they are enqueued), median over `batches`: the cost of the kernel inside
// a sequence of kernels, where the next launch's set-up overlaps the previous one's tail.
Result<double> time_back_to_back(cudaStream_t s, int batches, int batch,
                                 const std::function<Status(int)>& launch) {
  int j = 0;
  for (int i = 0; i < batch; ++i) TB_RETURN_IF_ERROR(launch(j++));
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(batches));
  for (auto& e : ev) TB_CUDA_TRY(cudaEventCreate(&e));
  for (int b = 0; b < batches; ++b) {
    TB_CUDA_TRY(launch_hold(s, hold_us(batch)));
    TB_CUDA_TRY(cudaEventRecord(ev[2 * b], s));
    for (int i = 0; i < batch; ++i) TB_RETURN_IF_ERROR(launch(j++));
    TB_CUDA_TRY(cudaEventRecord(ev[2 * b + 1], s));
  }
  TB_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<double> us(batches);
  for (int b = 0; b < batches; ++b) {
    float ms = 0;
    TB_CUDA_TRY(cudaEventElapsedTime(&ms, ev[2 * b], ev[2 * b + 1]));
    us[b] = ms * 1e3 / batch;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return median(us);
}


uint64_t xorshift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Random strips in the canonical layout (all columns valid; padding columns hold zeros).
void fill_strips(tb_prec prec, int64_t n, int64_t k, std::vector<uint8_t>& codes,
                 std::vector<uint16_t>& scales, uint64_t seed) {
  const int64_t np = pad32(n), ng = k / 32;
  codes.resize(StripLayout{prec, n, k}.codes_bytes());
  scales.resize(static_cast<size_t>(np * ng));
  uint64_t s = seed | 1;
  for (size_t i = 0; i < codes.size(); i += 8) {
    uint64_t r = xorshift(s);
    uint8_t b[8];
    std::memcpy(b, &r, 8);
    for (auto& v : b) {
      if (prec == TB_PREC_Q8 && v == 0x80) v = 0x81;  // q8 codes are -127 .. 127
    }
    std::memcpy(&codes[i], b, std::min<size_t>(8, codes.size() - i));
  }
  for (auto& h : scales) h = static_cast<uint16_t>(0x2000 | (xorshift(s) & 0x83ff));  // ~2^-7, +-
}

struct DeviceAlloc {
  void* p = nullptr;
  ~DeviceAlloc() { if (p) cudaFree(p); }
};

Status alloc(DeviceAlloc& a, size_t bytes) {
  TB_CUDA_TRY(cudaMalloc(&a.p, bytes));
  return Status();
}

// How many copies of `bytes` exceed 3x the L2 (at least 2, so consecutive launches differ).
int rotation(size_t bytes, size_t l2) {
  const size_t want = 3 * l2 / std::max<size_t>(bytes, 1) + 2;
  return static_cast<int>(std::min<size_t>(want, 96));
}

Result<double> copy_floor_gbps(cudaStream_t s, int reps) {
  const size_t bytes = size_t{1} << 31;
  DeviceAlloc a, b;
  TB_RETURN_IF_ERROR(alloc(a, bytes));
  TB_RETURN_IF_ERROR(alloc(b, bytes));
  auto t = time_events(s, 2, reps, [&](int) {
    TB_CUDA_TRY(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, s));
    return Status();
  });
  if (!t.ok()) return t.status();
  return 2.0 * bytes / (*t * 1e3);  // read + write, GB/s
}

struct ShapeTimes {
  double peer_us = -1;
  double baseline_us = -1;  // the source mapping, faithful form
  double legacy_us = -1;    // the same, the benchmark's first (legacy) form, interleaved with it
  std::string check;        // how its outputs compare with the reference (both forms: same bits)
};

// Runs the source mapping once in `form` on outputs filled with NaN, brings them back into hy and
// holds them to the reference: a form that writes nothing, or the wrong thing, fails here before
// it is timed.
Result<SourceCheck> check_source_form(cudaStream_t s, const SourceMappingShape& sm, SourceForm form,
                                      const tb_strips& w, const std::vector<float>& hx,
                                      const int8_t* wt, const float* bst, const float* x,
                                      float* part, float* y, std::vector<float>& hy) {
  const size_t ybytes = static_cast<size_t>(sm.m * sm.npad) * 4;
  TB_CUDA_TRY(cudaMemsetAsync(y, 0xff, ybytes, s));
  TB_CUDA_TRY(source_mapping_launch(sm, form, wt, bst, x, part, y, s));
  hy.resize(static_cast<size_t>(sm.m * sm.npad));
  TB_CUDA_TRY(cudaMemcpyAsync(hy.data(), y, ybytes, cudaMemcpyDeviceToHost, s));
  TB_CUDA_TRY(cudaStreamSynchronize(s));
  auto checked = check_source_output(w, sm, hx.data(), hy.data());
  if (!checked.ok()) {
    return Error(TB_INTERNAL, "%s form: %s", form == SourceForm::kLegacy ? "legacy" : "faithful",
                 checked.status().to_string().c_str());
  }
  return checked;
}

// The cuBLAS peer, and the source mapping on the strips `strips` (in its layout, `sw`) and the
// activations hx (m, k).
Result<ShapeTimes> peers(cublasHandle_t h, cudaStream_t s, const Shape& sh, int64_t m, size_t l2,
                         int reps, const tb_strips& strips, const SourceWeights& sw,
                         const std::vector<float>& hx) {
  ShapeTimes out;
  // cuBLAS bf16: Y (m, n) = X (m, k) W^T, W (n, k) row-major, fp32 accumulate, bf16 out.
  const size_t wbytes = static_cast<size_t>(sh.n * sh.k) * 2;
  const int copies = rotation(wbytes, l2);
  DeviceAlloc w, x, y;
  TB_RETURN_IF_ERROR(alloc(w, wbytes * copies));
  TB_RETURN_IF_ERROR(alloc(x, static_cast<size_t>(m * sh.k) * 2));
  TB_RETURN_IF_ERROR(alloc(y, static_cast<size_t>(m * sh.n) * 4));
  {
    std::vector<__nv_bfloat16> hw(static_cast<size_t>(sh.n * sh.k));
    uint64_t st = 99;
    for (auto& v : hw) v = __float2bfloat16(static_cast<float>(static_cast<int>(xorshift(st) % 255) - 127) / 4096.0f);
    for (int c = 0; c < copies; ++c) {
      TB_CUDA_TRY(cudaMemcpy(static_cast<char*>(w.p) + c * wbytes, hw.data(), wbytes, cudaMemcpyHostToDevice));
    }
    std::vector<__nv_bfloat16> hx(static_cast<size_t>(m * sh.k));
    for (auto& v : hx) v = __float2bfloat16(static_cast<float>(static_cast<int>(xorshift(st) % 200) - 100) / 64.0f);
    TB_CUDA_TRY(cudaMemcpy(x.p, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  }
  const float alpha = 1.0f, beta = 0.0f;
  auto peer = time_events(s, 5, reps, [&](int i) {
    const void* wi = static_cast<const char*>(w.p) + (i % copies) * wbytes;
    const cublasStatus_t st = cublasGemmEx(
        h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(sh.n), static_cast<int>(m),
        static_cast<int>(sh.k), &alpha, wi, CUDA_R_16BF, static_cast<int>(sh.k), x.p, CUDA_R_16BF,
        static_cast<int>(sh.k), &beta, y.p, CUDA_R_16BF, static_cast<int>(sh.n),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return Error(TB_INTERNAL, "cublasGemmEx failed: status %d", static_cast<int>(st));
    return Status();
  });
  if (!peer.ok()) return peer.status();
  out.peer_us = *peer;

  // The source engine's mapping (int8 K-major codes, f32 scales and activations) on the same
  // weights and activations as twinbit: both forms checked, then timed interleaved.
  const SourceMappingShape sm = source_mapping_plan(m, sh.n, sh.k);
  if (sm.npad != sw.npad) return Error(TB_INTERNAL, "source weights laid out for npad %lld, plan says %lld",
                                       static_cast<long long>(sw.npad), static_cast<long long>(sm.npad));
  const size_t wt_bytes = static_cast<size_t>(sh.k * sm.npad);
  const size_t bs_bytes = static_cast<size_t>(sh.k / 32 * sm.npad) * 4;
  const int sm_copies = rotation(wt_bytes + bs_bytes, l2);
  DeviceAlloc wt, bs, xf, part, yf;
  TB_RETURN_IF_ERROR(alloc(wt, wt_bytes * sm_copies));
  TB_RETURN_IF_ERROR(alloc(bs, bs_bytes * sm_copies));
  TB_RETURN_IF_ERROR(alloc(xf, static_cast<size_t>(m * sh.k) * 4));
  TB_RETURN_IF_ERROR(alloc(part, static_cast<size_t>(sm.nsplit * m * sm.npad) * 4));
  TB_RETURN_IF_ERROR(alloc(yf, static_cast<size_t>(m * sm.npad) * 4));
  for (int c = 0; c < sm_copies; ++c) {
    TB_CUDA_TRY(cudaMemcpy(static_cast<char*>(wt.p) + c * wt_bytes, sw.wt.data(), wt_bytes, cudaMemcpyHostToDevice));
    TB_CUDA_TRY(cudaMemcpy(static_cast<char*>(bs.p) + c * bs_bytes, sw.bst.data(), bs_bytes, cudaMemcpyHostToDevice));
  }
  TB_CUDA_TRY(cudaMemcpy(xf.p, hx.data(), static_cast<size_t>(m * sh.k) * 4, cudaMemcpyHostToDevice));
  const auto copy_wt = [&](int c) { return static_cast<const int8_t*>(wt.p) + c * wt_bytes; };
  const auto copy_bs = [&](int c) {
    return reinterpret_cast<const float*>(static_cast<const char*>(bs.p) + c * bs_bytes);
  };
  const SourceForm forms[] = {SourceForm::kFaithful, SourceForm::kLegacy};
  SourceCheck fc;
  std::vector<float> hy[2];
  for (int f = 0; f < 2; ++f) {
    auto checked = check_source_form(s, sm, forms[f], strips, hx, copy_wt(f % sm_copies), copy_bs(f % sm_copies),
                                     static_cast<const float*>(xf.p), static_cast<float*>(part.p),
                                     static_cast<float*>(yf.p), hy[f]);
    if (!checked.ok()) return checked.status();
    if (f == 0) fc = *checked;
  }
  // Same arithmetic in the same order: every output, not only the sample, has the same bits.
  if (std::memcmp(hy[0].data(), hy[1].data(), hy[0].size() * 4) != 0) {
    size_t i = 0;
    while (std::memcmp(&hy[0][i], &hy[1][i], 4) == 0) ++i;
    return Error(TB_INTERNAL, "source mapping M %lld %s: faithful and legacy forms differ at row %lld column %lld (%.9g vs %.9g)",
                 static_cast<long long>(m), sh.name, static_cast<long long>(i / sm.npad),
                 static_cast<long long>(i % sm.npad), hy[0][i], hy[1][i]);
  }
  out.check = fc.exact ? Format("exact:%lld/%lld", static_cast<long long>(fc.bit_equal), static_cast<long long>(fc.checked))
                       : Format("maxrel:%.2g,bits_equal:%lld/%lld", fc.worst, static_cast<long long>(fc.bit_equal),
                                static_cast<long long>(fc.checked));
  auto base = time_events_interleaved(s, 3, reps, 2, [&](int f, int j) {
    const int c = j % sm_copies;
    TB_CUDA_TRY(source_mapping_launch(sm, forms[f], copy_wt(c), copy_bs(c), static_cast<const float*>(xf.p),
                                      static_cast<float*>(part.p), static_cast<float*>(yf.p), s));
    return Status();
  });
  if (!base.ok()) return base.status();
  out.baseline_us = (*base)[0];
  out.legacy_us = (*base)[1];
  return out;
}

}  // namespace

Status run_cuda(const Options& opt, std::vector<Case>& out) {
  auto made = create_backend(opt.spec);
  if (!made.ok()) return made.status();
  Backend& cuda = *made;
  // The floor, the cuBLAS peer and the kernels alone run on the backend's device (cuda:N).
  const int device = opt.spec.device.value_or(0);
  TB_CUDA_TRY(cudaSetDevice(device));
  cudaDeviceProp prop{};
  TB_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  const size_t l2 = static_cast<size_t>(prop.l2CacheSize);
  const int reps = opt.reps > 0 ? opt.reps : (opt.quick ? 20 : 200);
  cudaStream_t s = nullptr;
  TB_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return Error(TB_UNAVAILABLE, "cublasCreate failed");
  cublasSetStream(blas, s);

  auto floor = copy_floor_gbps(s, opt.quick ? 5 : 20);
  if (!floor.ok()) return floor.status();
  {
    tb_backend_info info{};
    tb_error derr{};
    cuda.raw().iface->describe(cuda.raw().ctx, &info, &derr);
    std::printf("device: %s\n", info.device ? info.device : prop.name);
  }
  std::printf("device-to-device copy (2 GiB, read + write counted): %.0f GB/s\n", *floor);
  auto empty = time_host(50, opt.quick ? 100 : 1000, [&] {
    TB_CUDA_TRY(launch_empty(s));
    TB_CUDA_TRY(cudaStreamSynchronize(s));
    return Status();
  });
  if (!empty.ok()) return empty.status();
  std::printf("empty launch + synchronise: %.2f us (median)\n", *empty);
  auto empty_dev = time_events(s, 20, opt.quick ? 100 : 1000, [&](int) {
    TB_CUDA_TRY(launch_empty(s));
    return Status();
  });
  if (!empty_dev.ok()) return empty_dev.status();
  std::printf("empty kernel between two events, stream held while enqueuing: %.2f us (median)\n",
              *empty_dev);
  auto empty_b2b = time_back_to_back(s, 20, 20, [&](int) {
    TB_CUDA_TRY(launch_empty(s));
    return Status();
  });
  if (!empty_b2b.ok()) return empty_b2b.status();
  std::printf("empty kernel, 20 back to back between two events: %.2f us per launch (median)\n", *empty_b2b);
  auto rates = measure_pinned_rates(s, opt.quick ? 5 : 20);
  if (!rates.ok()) return rates.status();
  std::printf("pinned copies of 64 MiB: host to device %.1f GB/s, device to host %.1f GB/s (median)\n",
              rates->h2d / 1e3, rates->d2h / 1e3);
  if (opt.layer) {  // --layer: the layer measurement instead of the per-shape cases
    const Status layer = run_layer(opt, cuda, s, l2, *floor, out);
    cublasDestroy(blas);
    cudaStreamDestroy(s);
    return layer;
  }
  std::printf("%-8s %3s %-3s %-3s %10s %9s %7s %8s %9s %10s %8s  %s\n", "shape", "M", "prc", "act",
              "kernel_us", "floor_us", "%copy", "GB/s", "cublas_us", "source_us", "x_source", "note");

  for (const Shape& sh : kShapes) {
    if (!opt.shapes.empty() &&
        std::find(opt.shapes.begin(), opt.shapes.end(), sh.name) == opt.shapes.end()) {
      continue;
    }
    for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
      if (!wanted(opt.precs, prec_name(prec))) continue;
      std::vector<uint8_t> codes;
      std::vector<uint16_t> scales;
      fill_strips(prec, sh.n, sh.k, codes, scales, 12345 + sh.n + prec);
      tb_weights_view view{};
      view.kind = TB_WEIGHTS_STRIPS;
      view.strips = StripLayout{prec, sh.n, sh.k}.view(codes.data(), scales.data());
      auto bound = cuda.bind(view);
      if (!bound.ok()) return bound.status();
      cuda::BindReport br;
      TB_RETURN_IF_ERROR(cuda::bind_report(cuda.raw(), bound->handle(), &br));
      cuda::DeviceStrips dev;
      TB_RETURN_IF_ERROR(cuda::device_strips(cuda.raw(), bound->handle(), &dev));
      // The source mapping's layout of the same weights (it ran q4 as int8 codes: q8 only).
      SourceWeights source_w;
      if (prec == TB_PREC_Q8) source_w = source_weights(view.strips, source_mapping_plan(1, sh.n, sh.k).npad);
      const size_t bytes = codes.size() + scales.size() * 2;
      const int copies = rotation(bytes, l2);
      DeviceAlloc rot;
      TB_RETURN_IF_ERROR(alloc(rot, bytes * copies));
      std::vector<cuda::DeviceStrips> devs(copies, dev);
      for (int c = 0; c < copies; ++c) {
        char* base = static_cast<char*>(rot.p) + c * bytes;
        TB_CUDA_TRY(cudaMemcpy(base, dev.codes, codes.size(), cudaMemcpyDeviceToDevice));
        TB_CUDA_TRY(cudaMemcpy(base + codes.size(), dev.scales, scales.size() * 2, cudaMemcpyDeviceToDevice));
        devs[c].codes = reinterpret_cast<const uint8_t*>(base);
        devs[c].scales = reinterpret_cast<const uint16_t*>(base + codes.size());
      }
      for (int64_t m : opt.ms) {
        // Activations (random floats) and their i8 quantisation.
        std::vector<float> hx(static_cast<size_t>(m * sh.k));
        uint64_t st = 7 + m;
        for (auto& v : hx) v = static_cast<float>(static_cast<int64_t>(xorshift(st) % 4001) - 2000) / 1000.0f;
        ShapeTimes pt;
        if (prec == TB_PREC_Q8) {
          auto p = peers(blas, s, sh, m, l2, std::max(10, reps / 2), view.strips, source_w, hx);
          if (!p.ok()) return p.status();
          pt = *p;
        }
        std::vector<int8_t> hq(hx.size());
        std::vector<float> hd(static_cast<size_t>(m * sh.k / 32));
        ref::quantize_activations(m, sh.k, hx.data(), sh.k, hq.data(), sh.k, hd.data(), sh.k / 32);
        DeviceAlloc dx, dq, dd, dy, dpart, dcnt;
        TB_RETURN_IF_ERROR(alloc(dx, hx.size() * 4));
        TB_RETURN_IF_ERROR(alloc(dq, hq.size()));
        TB_RETURN_IF_ERROR(alloc(dd, hd.size() * 4));
        TB_RETURN_IF_ERROR(alloc(dy, static_cast<size_t>(m * sh.n) * 4));
        TB_RETURN_IF_ERROR(alloc(dpart, std::max<size_t>(4, cuda::gemm_partial_floats(dev, m) * 4)));
        TB_RETURN_IF_ERROR(alloc(dcnt, cuda::gemm_counter_count(dev, m) * 4));
        TB_CUDA_TRY(cudaMemset(dcnt.p, 0, cuda::gemm_counter_count(dev, m) * 4));
        TB_CUDA_TRY(cudaMemcpy(dx.p, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
        TB_CUDA_TRY(cudaMemcpy(dq.p, hq.data(), hq.size(), cudaMemcpyHostToDevice));
        TB_CUDA_TRY(cudaMemcpy(dd.p, hd.data(), hd.size() * 4, cudaMemcpyHostToDevice));
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
          if (!wanted(opt.modes, mode == TB_ACT_F32 ? "f32" : "i8")) continue;
          // The default launch first (the product's plan, launch_gemm), then the alternatives
          // (gemm_variants.h), all timed interleaved.
          struct KernelVariant {
            std::string name;
            GemmVariant v;
            cuda::DecodePath decode = cuda::DecodePath::kAuto;
          };
          std::vector<KernelVariant> vs = {{"", {}}};
          const auto add = [&vs](const char* name, const std::function<void(GemmVariant&)>& set,
                                 cuda::DecodePath decode = cuda::DecodePath::kAuto) {
            KernelVariant kv{name, {}, decode};
            set(kv.v);
            vs.push_back(kv);
          };
          constexpr cuda::DecodePath kSlice = cuda::DecodePath::kSliceBlocks;
          if (m == 1) {
            // The decode kernels: strip blocks, slice blocks (packed, unpacked, depth 2, merged),
            // and the other code conversion (F32, packed slice blocks: q8 I2F, q4 byte permute).
            add("stripblocks", [](GemmVariant&) {}, cuda::DecodePath::kStripBlocks);
            add("stripblocks_other", [](GemmVariant& v) { v.strip_other_form = true; }, cuda::DecodePath::kStripBlocks);
            add("sliceblocks", [](GemmVariant&) {}, kSlice);
            add("sliceblocks_unpacked", [](GemmVariant& v) { v.unpacked = true; }, kSlice);
            add("sliceblocks_prefetch2", [](GemmVariant& v) { v.depth = 2; }, kSlice);
            add("sliceblocks_merged", [](GemmVariant& v) { v.merged = true; }, kSlice);
            if (mode == TB_ACT_F32) {  // the packed kernel converting codes the other way
              add(prec == TB_PREC_Q8 ? "sliceblocks_i2f" : "sliceblocks_permute", [](GemmVariant& v) { v.alt_codes = true; }, kSlice);
            }
          }
          // Candidate split rules with longer slices, at least G groups (other bits than the
          // contract: timing only): nsplit = min(split_plan, max(1, ngroups / G)).
          const int64_t contract = split_plan(sh.n, sh.k);
          for (int64_t g : {8, 16}) {
            const int64_t cand = std::min<int64_t>(contract, std::max<int64_t>(1, sh.k / 32 / g));
            if (cand == contract) continue;
            add(Format("minslice%lld_nsplit%lld", static_cast<long long>(g), static_cast<long long>(cand)).c_str(),
                [cand](GemmVariant& v) { v.nsplit = cand; });
          }
          if (m > 1 && mode == TB_ACT_I8) {
            // Integer tensor cores against the dp4a slice blocks (each forced: the plan picks one
            // per shape), and the tensor cores' own row tiles and slices.
            using cuda::Toggle;
            add("dp4a", [](GemmVariant& v) { v.force.mma = Toggle::kOff; });
            add("mma_allslices", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOff;
              v.force.all_slices = Toggle::kOn;
            });
            add("mma_oneslice", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOff;
              v.force.all_slices = Toggle::kOff;
            });
            if (m > 32) {  // past 32 rows the plan takes 32 or 64 by grid size: both timed
              add("mma_rowtile64", [](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOff;
                v.force.row_tile = 64;
              });
            }
            const int def = m <= 8 ? 8 : m <= 16 ? 16 : m <= 32 ? 32 : 64;
            if (def > 8) {  // half the smallest tile holding M: twice the blocks, each weight tile read twice
              const int rt = def / 2;
              add(Format("mma_rowtile%d", rt).c_str(), [rt](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOff;
                v.force.row_tile = rt;
              });
              // The row-tile blocks (every slice): two warps per strip, ptxas's registers, unbiased mmas.
              const auto rows_kernel = [](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOff;
                v.force.all_slices = Toggle::kOn;
              };
              add("mma_rowwarps2", [&](GemmVariant& v) {
                rows_kernel(v);
                v.mma_row_warps = 2;
                v.mma_rows_min_blocks = 2;
              });
              if (def >= 32) {  // the product holds these registers: ptxas's own choice
                add("mma_rows_free", [&](GemmVariant& v) {
                  rows_kernel(v);
                  v.mma_rows_min_blocks = 0;
                });
                add("mma_regfold", [&](GemmVariant& v) {  // the fold in registers, each 8-row tile tested
                  rows_kernel(v);
                  v.mma_reg_fold = true;
                });
              }
              add("mma_unbiased", [&](GemmVariant& v) {
                rows_kernel(v);
                v.mma_unbiased = true;
              });
            }
            // The plan's kernel in the kLean form the product does not run for it.
            add("mma_otherlean", [](GemmVariant& v) { v.mma_unlean = true; });
            // The plan's strip kernel with one product form replaced (pair loads of the q8 codes,
            // the fold by floats), where the plan runs it on the register ring.
            auto sms = cuda::detail::device_sms();
            if (!sms.ok()) return sms.status();
            cuda::GemmLaunch planned;
            planned.mode = mode;
            planned.m = m;
            const cuda::GemmSchedule plan = cuda::plan_gemm(dev, planned, contract, *sms);
            if (plan.mma && plan.mma_strips && plan.mma_stage == 0) {
              add("mma_pairs", [](GemmVariant& v) { v.mma_pairs = true; });
              add("mma_fold1", [](GemmVariant& v) { v.mma_fold1 = true; });
              if (plan.mma_acts) {  // tiles into L2: none, or other distances than the plan's
                for (int ahead : {-1, 2, 4, 6}) {
                  if (ahead == plan.mma_l2_ahead) continue;
                  add(ahead < 0 ? "mma_l2none" : Format("mma_l2ahead%d", ahead).c_str(),
                      [ahead](GemmVariant& v) { v.mma_l2_ahead = ahead; });
                }
              }
            }
            add("mma_strips_acts", [](GemmVariant& v) {  // the strip blocks with the activations staged
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOn;
              v.mma_acts = true;
            });
            // The tensor-core strip blocks: the plan's row tile, the mmas in program order, other
            // depths of the weight ring, and every row tile.
            add("mma_strips", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOn;
            });
            add("mma_strips_ordered", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOn;
              v.mma_ordered = true;
            });
            for (int d : {4, 6}) {
              add(Format("mma_strips_depth%d", d).c_str(), [d](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOn;
                v.mma_depth = d;
              });
            }
            add("mma_strips_registers", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOn;
              v.force.mma_staged = Toggle::kOff;
            });
            add("mma_strips_rotate", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOn;
              v.mma_ring = cuda::detail::kRingRotate;
            });
            add("mma_strips_early", [](GemmVariant& v) {
              v.force.mma = Toggle::kOn;
              v.force.mma_strips = Toggle::kOn;
              v.mma_ring = cuda::detail::kRingEarly;
            });
            for (int st : {4, 6, 8}) {
              add(Format("mma_strips_stage%d", st).c_str(), [st](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOn;
                v.mma_stage = st;
              });
            }
            for (int ways : {2, 4, 8}) {  // warps per strip: fewer make fewer, longer-lived blocks
              if (ways > std::min<int64_t>(contract, 8)) continue;
              add(Format("mma_strips_ways%d", ways).c_str(), [ways](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOn;
                v.mma_ways = ways;
              });
            }
            if (m > 8 && m <= 32) {  // the strip blocks' forms before the staged activations
              add("mma_strips_noacts", [](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOn;
                v.force.mma_acts = Toggle::kOff;
              });
              add("mma_plan_noacts", [](GemmVariant& v) { v.force.mma_acts = Toggle::kOff; });
            }
            if (m > 8 && m <= 32) {  // 16-row strip blocks held to 3 blocks per SM (one wave more often)
              for (int st : {0, 4}) {
                for (bool acts : {false, true}) {
                  add(Format("mma_strips16_3blocks_stage%d%s", st, acts ? "_acts" : "").c_str(), [st, acts](GemmVariant& v) {
                    v.force.mma = Toggle::kOn;
                    v.force.mma_strips = Toggle::kOn;
                    v.force.row_tile = 16;
                    v.mma_strips_min_blocks = 3;
                    v.mma_stage = st;
                    v.mma_acts = acts;
                  });
                }
              }
            }
            for (int rt : {8, 16, 32}) {
              if (rt > 8 && m <= rt / 2) continue;  // a tile of mostly empty rows
              add(Format("mma_strips_rowtile%d", rt).c_str(), [rt](GemmVariant& v) {
                v.force.mma = Toggle::kOn;
                v.force.mma_strips = Toggle::kOn;
                v.force.row_tile = rt;
              });
            }
          }
          if (m > 1 && mode == TB_ACT_F32) {  // prefill: slices per block, strips per warp, loop order
            using cuda::Toggle;
            add("allslices", [](GemmVariant& v) { v.force.all_slices = Toggle::kOn; });
            add("oneslice", [](GemmVariant& v) { v.force.all_slices = Toggle::kOff; });
            add("onecol", [](GemmVariant& v) { v.force.cols = 1; });
            add("onecol_allslices_on", [](GemmVariant& v) {
              v.force.cols = 1;
              v.force.all_slices = Toggle::kOn;
            });
            add("twocols", [](GemmVariant& v) { v.force.cols = 2; });
            add("twocols_unpacked", [](GemmVariant& v) {
              v.force.cols = 2;
              v.unpacked = true;
            });
            if (mode == TB_ACT_F32) {
              add("onecol_rowsouter", [](GemmVariant& v) {
                v.force.cols = 1;
                v.force.rows_inner = Toggle::kOff;
              });
              add("onecol_rowsinner", [](GemmVariant& v) {
                v.force.cols = 1;
                v.force.rows_inner = Toggle::kOn;
              });
            }
          }
          if (m >= 16 && prec == TB_PREC_Q8 && mode == TB_ACT_F32) {  // both row tiles against the default choice
            for (int rt : {8, 16}) add(Format("rowtile%d", rt).c_str(), [rt](GemmVariant& v) { v.force.row_tile = rt; });
          }
          // The default launch on this case's buffers. Each timed alone (events around it) starts
          // after the kernel before it; in sequences (b2b, the peer's method) it may overlap it
          // as the product's launches do (dependent_launch.cuh).
          const auto base_launch = [&](bool overlap = false) {
            cuda::GemmLaunch a;
            a.overlap_previous = overlap;
            a.mode = mode;
            a.m = m;
            a.x = static_cast<const float*>(dx.p);
            a.xq = static_cast<const int8_t*>(dq.p);
            a.xd = static_cast<const float*>(dd.p);
            a.y = static_cast<float*>(dy.p);
            a.partial = static_cast<float*>(dpart.p);
            a.counters = static_cast<unsigned*>(dcnt.p);
            return a;
          };
          auto times = time_events_interleaved(s, 3, reps, static_cast<int>(vs.size()), [&](int v, int j) {
            if (v == 0) return cuda::launch_gemm(devs[j % copies], base_launch(), s);
            cuda::GemmLaunch a = base_launch();
            a.decode = vs[v].decode;
            return launch_gemm_variant(devs[j % copies], a, vs[v].v, s);
          });
          if (!times.ok()) return times.status();
          Case c;
          c.shape = sh.name;
          c.k = sh.k;
          c.n = sh.n;
          c.m = m;
          c.prec = prec_name(prec);
          c.mode = mode == TB_ACT_F32 ? "f32" : "i8";
          c.us = (*times)[0];
          c.floor_us = bytes / (*floor * 1e3);
          c.ratio = c.us / c.floor_us;
          c.gbps = bytes / (c.us * 1e3);
          // The source engine ran q4 as int8 codes through the same kernel: its q8 time stands.
          c.peer_us = pt.peer_us;
          if (mode == TB_ACT_F32) c.baseline_us = pt.baseline_us;
          if (mode == TB_ACT_F32 && pt.baseline_us > 0) {
            c.note += Format("source_legacy_us=%.2f source_check=%s ", pt.legacy_us, pt.check.c_str());
          }
          for (size_t v = 1; v < vs.size(); ++v) c.note += Format("%s_us=%.2f ", vs[v].name.c_str(), (*times)[v]);
          {  // the default launch inside a sequence of launches (different weight copies), the
             // same sequence with every launch after the kernel before it, and at M = 1 the
             // decode path the plan did not pick (strip or slice blocks), in alternation
            cuda::GemmLaunch other_path = base_launch(true);
            bool has_other = false;
            if (m == 1) {
              auto planned = cuda::device_plan(devs[0], other_path);
              if (!planned.ok()) return planned.status();
              other_path.decode = planned->strip_blocks ? cuda::DecodePath::kSliceBlocks : cuda::DecodePath::kStripBlocks;
              auto forced = cuda::device_plan(devs[0], other_path);
              if (!forced.ok()) return forced.status();
              has_other = forced->strip_blocks != planned->strip_blocks;
            }
            std::vector<double> on, off, other;
            for (int round = 0; round < 2; ++round) {
              for (int form = 0; form < (has_other ? 3 : 2); ++form) {
                auto b2b = time_back_to_back(s, std::max(5, reps / 10), 20, [&](int j) {
                  return cuda::launch_gemm(devs[j % copies], form == 2 ? other_path : base_launch(form == 0), s);
                });
                if (!b2b.ok()) return b2b.status();
                (form == 0 ? on : form == 1 ? off : other).push_back(*b2b);
              }
            }
            c.note += Format("b2b_us=%.2f b2b_serial_us=%.2f ", median(on), median(off));
            if (has_other) c.note += Format("b2b_otherpath_us=%.2f ", median(other));
            if (m == 1) {  // the strip kernel's other form in the same sequence, where the plan runs it
              GemmVariant other;
              other.strip_other_form = true;
              auto planned_decode = cuda::device_plan(devs[0], base_launch(true));
              if (!planned_decode.ok()) return planned_decode.status();
              if (planned_decode->strip_blocks) {
                auto b2b = time_back_to_back(s, std::max(5, reps / 10), 20, [&](int j) {
                  return launch_gemm_variant(devs[j % copies], base_launch(true), other, s);
                });
                if (!b2b.ok()) return b2b.status();
                c.note += Format("b2b_stripother_us=%.2f ", *b2b);
              }
            }
          }
          if (mode == TB_ACT_I8) {  // what an engine pays: the device quantiser, then the gemm
            cuda::QuantizeLaunch q;
            q.m = m;
            q.k = sh.k;
            q.x = static_cast<const float*>(dx.p);
            q.ldx = sh.k;
            q.xq = static_cast<int8_t*>(dq.p);
            q.ldxq = sh.k;
            q.xd = static_cast<float*>(dd.p);
            q.ldxd = sh.k / 32;
            auto with_q = time_back_to_back(s, std::max(5, reps / 5), 20, [&](int j) {
              TB_RETURN_IF_ERROR(cuda::launch_quantize_i8(q, s));
              return cuda::launch_gemm(devs[j % copies], base_launch(true), s);
            });
            if (!with_q.ok()) return with_q.status();
            c.note += Format("with_quantize_i8_b2b_us=%.2f ", *with_q);
            // The peer's way of timing (llama.cpp's test-backend-ops perf mode): F32 activations
            // quantised on the device, then the gemm, over the SAME weights every launch, so a
            // projection smaller than the L2 (gate_up: 26.7 MB of 50) is read from it.
            auto same_w = time_back_to_back(s, std::max(5, reps / 5), 20, [&](int) {
              TB_RETURN_IF_ERROR(cuda::launch_quantize_i8(q, s));
              return cuda::launch_gemm(devs[0], base_launch(true), s);
            });
            if (!same_w.ok()) return same_w.status();
            c.note += Format("peer_method_us=%.2f ", *same_w);
            // The same sequence as one CUDA graph, as the peer's perf mode runs it (graphs on):
            // 20 quantise + gemm pairs captured, replayed; µs per pair. The product's launches
            // (the gemm starting during the quantiser where the plan says so), then the gemm
            // always after the quantiser (no dependent launch).
            constexpr int kGraphPairs = 20;
            struct GraphForm { const char* name; bool overlap; };
            const GraphForm forms[] = {{"peer_method_graph", true}, {"graph_serial", false}};
            for (const GraphForm& f : forms) {
              GraphGuard graph;
              TB_RETURN_IF_ERROR(capture(s, [&]() -> Status {
                const cuda::GemmLaunch a = base_launch(f.overlap);
                for (int i = 0; i < kGraphPairs; ++i) {
                  TB_RETURN_IF_ERROR(cuda::launch_quantize_i8(q, s));
                  TB_RETURN_IF_ERROR(cuda::launch_gemm(devs[0], a, s));
                }
                return Status();
              }, graph));
              auto graph_us = time_graph(graph.exec, s, std::max(5, reps / 2));
              if (!graph_us.ok()) return graph_us.status();
              c.note += Format("%s_us=%.2f ", f.name, *graph_us / kGraphPairs);
            }
          }
          if (mode == TB_ACT_F32 && prec == TB_PREC_Q8) {
            // The offload round trip through the public API (offload_bench.h).
            TB_RETURN_IF_ERROR(offload_round_trip(cuda, *bound, m, sh.k, sh.n, hx, c.us, *rates, opt.quick, s, &c.note));
            c.note += Format("bind=%.1fms ", br.seconds * 1e3);
          }
          // x_source: how many times faster than the source mapping (its time / twinbit's).
          const std::string x_source = c.baseline_us > 0 ? Format("%.2fx", c.baseline_us / c.us) : "-";
          std::printf("%-8s %3lld %-3s %-3s %10.2f %9.2f %6.1f%% %8.0f %9.2f %10.2f %8s  %s\n",
                      c.shape.c_str(), static_cast<long long>(m), c.prec.c_str(), c.mode.c_str(),
                      c.us, c.floor_us, 100.0 * c.floor_us / c.us, c.gbps, c.peer_us,
                      c.baseline_us, x_source.c_str(), c.note.c_str());
          std::fflush(stdout);
          out.push_back(c);
        }
      }
    }
  }
  cublasDestroy(blas);
  cudaStreamDestroy(s);
  return Status();
}

}  // namespace twinbit::bench
