// The layer measurement of twinbit-bench (layer_bench.h).
#include "bench/cuda/layer_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "bench/cuda/source_mapping.h"
#include "bench/cuda/timing.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/reference.h"
#include "core/strip_layout.h"
#include <twinbit/cuda_device.h>

namespace twinbit::bench {
namespace {

constexpr const char* kLayerShapes[] = {"qkv", "q_o", "gate_up", "down"};  // in step order
constexpr int kMaxLayers = 16;

const ShapeDef& shape_named(const char* name) {
  for (const ShapeDef& s : kProjectionShapes) {
    if (std::strcmp(s.name, name) == 0) return s;
  }
  return kProjectionShapes[0];  // unreachable: kLayerShapes names shapes of the table
}


// Random strips in the canonical layout: codes over the precision's range, scales near 2^-7 of
// both signs (the values do not change the time; they keep the outputs finite).
struct HostStrips {
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  tb_strips view{};
};
HostStrips random_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  HostStrips h;
  const StripLayout layout{prec, n, k};
  h.codes.resize(layout.codes_bytes());
  h.scales.resize(layout.scales_bytes() / 2);
  uint64_t s = seed | 1;
  const auto next = [&s] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (auto& c : h.codes) {
    c = static_cast<uint8_t>(next());
    if (prec == TB_PREC_Q8 && c == 0x80) c = 0x81;  // the packer's q8 codes are -127 .. 127
  }
  for (auto& v : h.scales) v = static_cast<uint16_t>(0x2000 | (next() & 0x83ff));
  h.view = layout.view(h.codes.data(), h.scales.data());
  return h;
}

struct DeviceBuffer {
  void* p = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  Status alloc(size_t bytes) {
    TB_CUDA_TRY(cudaMalloc(&p, bytes));
    return Status();
  }
};

// One projection's activations and output, on the host (for the host calls) and on the device
// (for the device calls), for up to max_m rows. Every layer's call of this projection uses them.
struct ProjectionIo {
  const ShapeDef* shape = nullptr;
  std::vector<float> x, y;
  std::vector<int8_t> xq;
  std::vector<float> xd;
  DeviceBuffer dx, dxq, dxd, dy;
};

Status make_io(const ShapeDef& sh, int64_t max_m, uint64_t seed, ProjectionIo& io) {
  io.shape = &sh;
  const size_t mk = static_cast<size_t>(max_m * sh.k), mn = static_cast<size_t>(max_m * sh.n);
  io.x.resize(mk);
  uint64_t s = seed | 1;
  for (auto& v : io.x) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v = static_cast<float>(static_cast<int64_t>(s % 4001) - 2000) / 1000.0f;
  }
  io.xq.resize(mk);
  io.xd.resize(mk / 32);
  io.y.resize(mn);
  ref::quantize_activations(max_m, sh.k, io.x.data(), sh.k, io.xq.data(), sh.k, io.xd.data(), sh.k / 32);
  TB_RETURN_IF_ERROR(io.dx.alloc(mk * 4));
  TB_RETURN_IF_ERROR(io.dxq.alloc(mk));
  TB_RETURN_IF_ERROR(io.dxd.alloc(mk / 32 * 4));
  TB_RETURN_IF_ERROR(io.dy.alloc(mn * 4));
  TB_CUDA_TRY(cudaMemcpy(io.dx.p, io.x.data(), mk * 4, cudaMemcpyHostToDevice));
  TB_CUDA_TRY(cudaMemcpy(io.dxq.p, io.xq.data(), mk, cudaMemcpyHostToDevice));
  TB_CUDA_TRY(cudaMemcpy(io.dxd.p, io.xd.data(), mk / 32 * 4, cudaMemcpyHostToDevice));
  return Status();
}

tb_gemm_args host_args(ProjectionIo& io, tb_act_mode mode, int64_t m) {
  tb_gemm_args a{};
  a.mode = mode;
  a.m = m;
  a.x = io.x.data();
  a.ldx = io.shape->k;
  a.xq = io.xq.data();
  a.ldxq = io.shape->k;
  a.xd = io.xd.data();
  a.ldxd = io.shape->k / 32;
  a.y = io.y.data();
  a.ldy = io.shape->n;
  return a;
}

tb_gemm_args device_args(const ProjectionIo& io, tb_act_mode mode, int64_t m) {
  tb_gemm_args a{};
  a.mode = mode;
  a.m = m;
  a.x = static_cast<const float*>(io.dx.p);
  a.ldx = io.shape->k;
  a.xq = static_cast<const int8_t*>(io.dxq.p);
  a.ldxq = io.shape->k;
  a.xd = static_cast<const float*>(io.dxd.p);
  a.ldxd = io.shape->k / 32;
  a.y = static_cast<float*>(io.dy.p);
  a.ldy = io.shape->n;
  return a;
}

tb_quantize_args device_quantize_args(const ProjectionIo& io, int64_t m) {
  const int64_t k = io.shape->k;
  return tb_quantize_args{m, k, static_cast<const float*>(io.dx.p), k, static_cast<int8_t*>(io.dxq.p), k,
                          static_cast<float*>(io.dxd.p), k / 32};
}

// The extras of the backend (twinbit/cuda_device.h).
struct DeviceCalls {
  void* ctx = nullptr;
  tb_cuda_workspace_create_fn create = nullptr;
  tb_cuda_workspace_destroy_fn destroy = nullptr;
  tb_cuda_gemm_device_fn gemm = nullptr;
  tb_cuda_quantize_i8_device_fn quantize = nullptr;
};

// Medians (µs per replay) of graphs a and b, timed in four alternating rounds of reps / 4.
Result<std::pair<double, double>> time_graphs_alternating(cudaGraphExec_t a, cudaGraphExec_t b, cudaStream_t s,
                                                          int reps) {
  constexpr int kRounds = 4;
  std::vector<double> ta, tb;
  for (int r = 0; r < kRounds; ++r) {
    auto x = time_graph(a, s, std::max(3, reps / kRounds));
    if (!x.ok()) return x.status();
    auto y = time_graph(b, s, std::max(3, reps / kRounds));
    if (!y.ok()) return y.status();
    ta.push_back(*x);
    tb.push_back(*y);
  }
  return std::make_pair(median(ta), median(tb));
}

}  // namespace

Status run_layer(const Options& opt, const Backend& cuda, cudaStream_t s, size_t l2, double copy_gbps,
                 std::vector<Case>& out) {
  DeviceCalls calls;
  calls.ctx = cuda.raw().ctx;
  calls.create = reinterpret_cast<tb_cuda_workspace_create_fn>(cuda.proc(TB_CUDA_WORKSPACE_CREATE));
  calls.destroy = reinterpret_cast<tb_cuda_workspace_destroy_fn>(cuda.proc(TB_CUDA_WORKSPACE_DESTROY));
  calls.gemm = reinterpret_cast<tb_cuda_gemm_device_fn>(cuda.proc(TB_CUDA_GEMM_DEVICE));
  calls.quantize = reinterpret_cast<tb_cuda_quantize_i8_device_fn>(cuda.proc(TB_CUDA_QUANTIZE_I8_DEVICE));
  if (!calls.create || !calls.destroy || !calls.gemm || !calls.quantize) {
    return Error(TB_UNIMPLEMENTED, "--layer: the backend has no device-resident calls (%s)", TB_CUDA_GEMM_DEVICE);
  }
  if (opt.ms.empty()) return Error(TB_INVALID_ARGUMENT, "--layer: no --m given");
  const int reps = opt.reps > 0 ? opt.reps : (opt.quick ? 20 : 200);
  const int64_t max_m = *std::max_element(opt.ms.begin(), opt.ms.end());

  std::vector<std::unique_ptr<ProjectionIo>> ios;
  for (const char* name : kLayerShapes) {
    ios.push_back(std::make_unique<ProjectionIo>());
    TB_RETURN_IF_ERROR(make_io(shape_named(name), max_m, 17 + ios.size(), *ios.back()));
  }
  std::printf("layer: %s, %s, %s, %s per decode step; device calls captured in one CUDA graph of L "
              "layers of distinct weights (together > 3x the L2), times per layer (median)\n",
              kLayerShapes[0], kLayerShapes[1], kLayerShapes[2], kLayerShapes[3]);
  std::printf("%-3s %-3s %3s %2s %9s %9s %7s %13s %13s %13s  %s\n", "prc", "act", "M", "L", "graph_us",
              "floor_us", "%copy", "graph_host_us", "stream_us", "host_calls_us", "note");

  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    if (!wanted(opt.precs, prec_name(prec))) continue;
    // One layer's weights, then as many layers as exceed 3x the L2.
    std::vector<HostStrips> host;
    size_t layer_bytes = 0;
    for (const auto& io : ios) {
      host.push_back(random_strips(prec, io->shape->n, io->shape->k, 1000 + io->shape->n + prec));
      layer_bytes += host.back().codes.size() + host.back().scales.size() * 2;
    }
    const int layers = static_cast<int>(std::clamp<size_t>(3 * l2 / layer_bytes + 2, 2, kMaxLayers));
    std::vector<BoundWeights> bound;  // layer-major: bound[4 * layer + projection]
    std::vector<void*> handles;
    for (int l = 0; l < layers; ++l) {
      for (const HostStrips& h : host) {
        tb_weights_view v{};
        v.kind = TB_WEIGHTS_STRIPS;
        v.strips = h.view;
        auto b = cuda.bind(v);
        if (!b.ok()) return b.status();
        handles.push_back(b->handle());
        bound.push_back(std::move(b).value());
      }
    }
    tb_cuda_workspace* ws = nullptr;
    {
      tb_error err{};
      const tb_code c = calls.create(calls.ctx, handles.data(), handles.size(), max_m, &ws, &err);
      if (c != TB_OK) return Status::from_c(c, err);
    }
    const std::unique_ptr<tb_cuda_workspace, std::function<void(tb_cuda_workspace*)>> ws_guard(
        ws, [&calls](tb_cuda_workspace* w) { calls.destroy(calls.ctx, w); });

    for (int64_t m : opt.ms) {
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        if (!wanted(opt.modes, act_mode_name(mode))) continue;
        // The step's device calls on s: every layer's four projections; in mode I8 optionally
        // each projection's activations quantised on the device first.
        const auto enqueue = [&](bool quantize) -> Status {
          for (int l = 0; l < layers; ++l) {
            for (size_t p = 0; p < ios.size(); ++p) {
              tb_error err{};
              if (quantize) {
                const tb_quantize_args q = device_quantize_args(*ios[p], m);
                const tb_code c = calls.quantize(calls.ctx, &q, s, &err);
                if (c != TB_OK) return Status::from_c(c, err);
              }
              const tb_gemm_args a = device_args(*ios[p], mode, m);
              const tb_code c = calls.gemm(calls.ctx, handles[4 * l + p], ws, &a, s, &err);
              if (c != TB_OK) return Status::from_c(c, err);
            }
          }
          return Status();
        };
        // The product's step (launches overlapping the kernel before them where the plan says
        // so) and the same step captured with the switch off, timed in alternation.
        GraphGuard graph, serial;
        TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_dependent_launch", 0));
        const Status serial_captured = capture(s, [&] { return enqueue(false); }, serial);
        TB_RETURN_IF_ERROR(cuda.set_switch("cuda.set_dependent_launch", 1));
        TB_RETURN_IF_ERROR(serial_captured);
        TB_RETURN_IF_ERROR(capture(s, [&] { return enqueue(false); }, graph));
        auto graph_ab = time_graphs_alternating(graph.exec, serial.exec, s, reps);
        if (!graph_ab.ok()) return graph_ab.status();
        const auto graph_us = graph_ab->first;
        auto graph_host = time_host(3, reps, [&] {
          TB_CUDA_TRY(cudaGraphLaunch(graph.exec, s));
          TB_CUDA_TRY(cudaStreamSynchronize(s));
          return Status();
        });
        if (!graph_host.ok()) return graph_host.status();
        auto stream_us = time_host(3, reps, [&] {
          TB_RETURN_IF_ERROR(enqueue(false));
          TB_CUDA_TRY(cudaStreamSynchronize(s));
          return Status();
        });
        if (!stream_us.ok()) return stream_us.status();
        auto host_calls = time_host(2, std::max(5, reps / 4), [&] {
          for (int l = 0; l < layers; ++l) {
            for (size_t p = 0; p < ios.size(); ++p) {
              TB_RETURN_IF_ERROR(cuda.gemm(bound[4 * l + p], host_args(*ios[p], mode, m)));
            }
          }
          return Status();
        });
        if (!host_calls.ok()) return host_calls.status();
        // Both sequences end with the last layer's four calls on the same inputs: their outputs
        // must be the same bits (a measurement of wrong work is no measurement).
        TB_CUDA_TRY(cudaStreamSynchronize(s));
        bool same_bits = true;
        for (const auto& io : ios) {
          const size_t count = static_cast<size_t>(m * io->shape->n);
          std::vector<float> dev(count);
          TB_CUDA_TRY(cudaMemcpy(dev.data(), io->dy.p, count * 4, cudaMemcpyDeviceToHost));
          same_bits = same_bits && std::memcmp(dev.data(), io->y.data(), count * 4) == 0;
        }
        if (!same_bits) {
          return Error(TB_INTERNAL, "--layer: the device-resident calls and the host calls gave "
                       "different bits (%s %s M = %lld)", prec_name(prec), act_mode_name(mode),
                       static_cast<long long>(m));
        }
        Case c;
        c.shape = "layer";
        c.m = m;
        c.prec = prec_name(prec);
        c.mode = act_mode_name(mode);
        c.us = graph_us / layers;
        c.floor_us = layer_bytes / (copy_gbps * 1e3);
        c.ratio = c.us / c.floor_us;
        c.gbps = layer_bytes / (c.us * 1e3);
        const double graph_host_us = *graph_host / layers, stream_layer_us = *stream_us / layers,
                     host_calls_us = *host_calls / layers;
        c.note = Format("projections=%s+%s+%s+%s layers=%d graph_host_us=%.2f stream_us=%.2f "
                        "host_calls_us=%.2f ", kLayerShapes[0], kLayerShapes[1], kLayerShapes[2],
                        kLayerShapes[3], layers, graph_host_us, stream_layer_us, host_calls_us);
        c.note += Format("graph_serial_us=%.2f ", graph_ab->second / layers);
        if (mode == TB_ACT_I8) {  // what an engine with float activations pays: quantise + gemm
          GraphGuard with_q;
          TB_RETURN_IF_ERROR(capture(s, [&] { return enqueue(true); }, with_q));
          auto q_us = time_graph(with_q.exec, s, reps);
          if (!q_us.ok()) return q_us.status();
          c.note += Format("graph_with_quantize_i8_us=%.2f ", *q_us / layers);
        }
        std::printf("%-3s %-3s %3lld %2d %9.2f %9.2f %6.1f%% %13.2f %13.2f %13.2f  %s\n", c.prec.c_str(),
                    c.mode.c_str(), static_cast<long long>(m), layers, c.us, c.floor_us,
                    100.0 * c.floor_us / c.us, graph_host_us, stream_layer_us, host_calls_us,
                    c.note.c_str());
        std::fflush(stdout);
        out.push_back(c);
      }
    }
  }
  return Status();
}

}  // namespace twinbit::bench
