// The CUDA backend's device-resident calls (twinbit/cuda_device.h): the argument checks on the
// host without a device (suite default), and on the GPU (suite "gpu", SKIPPED without a device)
// the gemm and the quantiser on device pointers against the reference by memcmp, the same calls
// captured in a CUDA graph and replayed on fresh inputs, and hostile arguments through get_proc.
#include <doctest/doctest.h>

#ifdef TWINBIT_HAS_CUDA_BACKEND
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_calls.h"
#include "backends/cuda/gemm_kernels.h"
#include "backends/cuda/quantize_kernels.h"
#include "core/numerics.h"
#include "core/op_checks.h"
#include "tests/test_c_api_util.h"
#include "tests/test_cuda_support.h"
#include <twinbit/cuda_device.h>
#include <twinbit/twinbit.h>

namespace twinbit::cuda_test {
namespace {

// ---- host-side checks (no device) -----------------------------------------------------------

cuda::DeviceStrips fake_strips(int64_t n, int64_t k) {
  static const uint8_t bytes[16] = {};  // never read: the checks only test the pointers for null
  cuda::DeviceStrips w;
  w.n = n;
  w.k = k;
  w.np = pad32(n);
  w.kp = pad32(k);
  w.n_total = n;
  w.codes = bytes;
  w.scales = reinterpret_cast<const uint16_t*>(bytes);
  return w;
}

// A workspace as create_workspace would size it for w up to max_m rows (no device memory: the
// checks never touch its buffers).
tb_cuda_workspace fake_workspace(const void* owner, const cuda::DeviceStrips& w, int64_t max_m) {
  tb_cuda_workspace ws;
  ws.magic = cuda::kWorkspaceMagic;
  ws.owner = owner;
  ws.max_m = max_m;
  const auto one = cuda::workspace_need(w, 1), most = cuda::workspace_need(w, max_m);
  ws.partial_floats = std::max(one.partial_floats, most.partial_floats);
  ws.counter_count = std::max(one.counter_count, most.counter_count);
  return ws;
}

// Dense gemm arguments with non-null stand-in pointers (never dereferenced by the checks).
tb_gemm_args dense_args(tb_act_mode mode, int64_t m, const cuda::DeviceStrips& w) {
  alignas(16) static float f[4];
  alignas(16) static int8_t q[16];
  tb_gemm_args a{};
  a.mode = mode;
  a.m = m;
  a.x = f;
  a.ldx = w.kp;
  a.xq = q;
  a.ldxq = w.kp;
  a.xd = f;
  a.ldxd = w.kp / 32;
  a.y = f;
  a.ldy = w.n;
  return a;
}

void check_refused(const Status& s, tb_code code, const char* needle) {
  CHECK_MESSAGE(s.code() == code, s.to_string());
  CHECK_MESSAGE(s.message().find(needle) != std::string::npos, "missing '" << needle << "' in " << s.to_string());
  CHECK_MESSAGE(s.message().find("cuda.gemm_device") != std::string::npos, s.to_string());
}

TEST_CASE("cuda gemm_device argument checks without a device: valid calls pass; null args, workspace and pointers, stray or foreign workspace, K100, unknown mode, M0 and M above max_m, strided rows, misaligned x, xq and y, workspace too small are refused") {
  const int owner = 0, other = 0;
  const cuda::DeviceStrips w = fake_strips(2048, 2048);  // split into many slices: partials needed
  tb_cuda_workspace ws = fake_workspace(&owner, w, 33);
  REQUIRE(ws.partial_floats > 0);
  for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
    for (int64_t m : {1, 2, 7, 33}) {
      const tb_gemm_args a = dense_args(mode, m, w);
      const Status s = cuda::check_gemm_device_args(&owner, w, &ws, &a);
      CHECK_MESSAGE(s.ok(), act_mode_name(mode) << " M=" << m << ": " << s.to_string());
    }
  }
  const tb_gemm_args ok = dense_args(TB_ACT_F32, 1, w);
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, nullptr), TB_INVALID_ARGUMENT, "args is null");
  check_refused(cuda::check_gemm_device_args(&owner, w, nullptr, &ok), TB_INVALID_ARGUMENT, "workspace is null");
  tb_cuda_workspace stray = ws;
  stray.magic = 0;
  check_refused(cuda::check_gemm_device_args(&owner, w, &stray, &ok), TB_INVALID_ARGUMENT, "not one cuda.workspace_create made");
  check_refused(cuda::check_gemm_device_args(&other, w, &ws, &ok), TB_INVALID_ARGUMENT, "another CUDA backend");

  const cuda::DeviceStrips k100 = fake_strips(64, 100);
  tb_cuda_workspace ws100 = fake_workspace(&owner, k100, 4);
  tb_gemm_args a100 = dense_args(TB_ACT_F32, 1, k100);
  check_refused(cuda::check_gemm_device_args(&owner, k100, &ws100, &a100), TB_UNIMPLEMENTED, "K % 32 != 0");

  tb_gemm_args a = ok;
  const int bad_mode = 7;
  std::memcpy(&a.mode, &bad_mode, sizeof bad_mode);  // a C caller may store any int there
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "activation mode 7 is unknown");
  a = ok;
  a.m = 0;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "out of range");
  a.m = 34;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "max_m = 33");
  a = ok;
  a.x = nullptr;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "needs x");
  a = dense_args(TB_ACT_I8, 2, w);
  a.xd = nullptr;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "needs xq and xd");
  a = ok;
  a.y = nullptr;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "output y is null");
  a = ok;
  a.ldx = w.kp + 32;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "dense rows");
  a = ok;
  a.ldy = w.n + 1;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "dense rows");
  a = dense_args(TB_ACT_I8, 2, w);
  a.ldxd = w.kp / 32 + 1;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "dense rows");

  // The kernels load activations 16 bytes at a time and store floats.
  a = ok;
  a.x = ok.x + 1;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "x = ");
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "16-byte aligned");
  a = dense_args(TB_ACT_I8, 2, w);
  a.xq = a.xq + 8;
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "xq = ");
  a = ok;
  a.y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + 2);
  check_refused(cuda::check_gemm_device_args(&owner, w, &ws, &a), TB_INVALID_ARGUMENT, "4-byte aligned");

  // A workspace sized for a small projection is too small for a large one at the same M.
  const cuda::DeviceStrips big = fake_strips(12288, 2048);
  const tb_gemm_args abig = dense_args(TB_ACT_F32, 33, big);
  check_refused(cuda::check_gemm_device_args(&owner, big, &ws, &abig), TB_INVALID_ARGUMENT, "the workspace holds");
}

TEST_CASE("cuda workspace_create request checks without a device: null weights, count 0, a null entry, max_m 0 and 2^20+1 refused; a valid request passes") {
  const cuda::DeviceStrips w = fake_strips(2048, 2048);
  const cuda::DeviceStrips* one[] = {&w};
  const cuda::DeviceStrips* with_null[] = {&w, nullptr};
  CHECK(cuda::check_workspace_request(one, 1, 33).ok());
  CHECK(cuda::check_workspace_request(one, 1, cuda::kMaxRowsPerLaunch).ok());
  const auto refused = [](const Status& s, const char* needle) {
    CHECK_MESSAGE(s.code() == TB_INVALID_ARGUMENT, s.to_string());
    CHECK_MESSAGE(s.message().find(needle) != std::string::npos, "missing '" << needle << "' in " << s.to_string());
  };
  refused(cuda::check_workspace_request(nullptr, 1, 33), "weights null");
  refused(cuda::check_workspace_request(one, 0, 33), "count 0");
  refused(cuda::check_workspace_request(with_null, 2, 33), "weights[1] is null");
  refused(cuda::check_workspace_request(one, 1, 0), "max_m = 0");
  refused(cuda::check_workspace_request(one, 1, cuda::kMaxRowsPerLaunch + 1), "max_m = 1048577");
}

// ---- on the device -------------------------------------------------------------------------------

// The extras of a live CUDA backend, by name.
struct DeviceCalls {
  tb_cuda_workspace_create_fn create = nullptr;
  tb_cuda_workspace_destroy_fn destroy = nullptr;
  tb_cuda_gemm_device_fn gemm = nullptr;
  tb_cuda_quantize_i8_device_fn quantize = nullptr;
  void* ctx = nullptr;

  explicit DeviceCalls(const Backend& b) : ctx(b.raw().ctx) {
    create = reinterpret_cast<tb_cuda_workspace_create_fn>(b.proc(TB_CUDA_WORKSPACE_CREATE));
    destroy = reinterpret_cast<tb_cuda_workspace_destroy_fn>(b.proc(TB_CUDA_WORKSPACE_DESTROY));
    gemm = reinterpret_cast<tb_cuda_gemm_device_fn>(b.proc(TB_CUDA_GEMM_DEVICE));
    quantize = reinterpret_cast<tb_cuda_quantize_i8_device_fn>(b.proc(TB_CUDA_QUANTIZE_I8_DEVICE));
  }
  bool all() const { return create && destroy && gemm && quantize; }
};

// A live CUDA backend, its device calls and a non-blocking stream, destroyed with the session
// (also when a REQUIRE ends the test early); no backend where no device is present (the test
// then returns: SKIPPED).
struct DeviceSession {
  std::optional<Backend> cuda = cuda_or_skip();
  std::optional<DeviceCalls> calls;
  cudaStream_t stream = nullptr;
  DeviceSession() {
    if (!cuda) return;
    calls.emplace(*cuda);
    REQUIRE(calls->all());
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  }
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;
  ~DeviceSession() {
    if (stream) cudaStreamDestroy(stream);
  }
};

// A workspace destroyed at scope exit (declared after the bound weights: freed before them).
struct Workspace {
  const DeviceCalls& calls;
  tb_cuda_workspace* ws = nullptr;
  ~Workspace() { calls.destroy(calls.ctx, ws); }
};

Status make_workspace(const DeviceCalls& calls, std::vector<void*> handles, int64_t max_m, Workspace& out) {
  tb_error err{};
  const tb_code c = calls.create(calls.ctx, handles.data(), handles.size(), max_m, &out.ws, &err);
  return Status::from_c(c, err);
}

struct DeviceBuffer {
  void* p = nullptr;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
    if (p) cudaMemset(p, 0xff, bytes);  // NaN floats: an unwritten output never passes
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  template <class T>
  T* as() const { return static_cast<T*>(p); }
};

template <class T>
void upload(DeviceBuffer& d, const std::vector<T>& h) {
  REQUIRE(cudaMemcpy(d.p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
}

// One projection's device buffers for up to m rows: activations in, codes and scales, output.
struct DeviceCase {
  DeviceBuffer x, xq, xd, y;
  DeviceCase(int64_t m, int64_t k, int64_t n)
      : x(static_cast<size_t>(m * k) * 4), xq(static_cast<size_t>(m * k)),
        xd(static_cast<size_t>(m * k / 32) * 4), y(static_cast<size_t>(m * n) * 4) {}
  tb_gemm_args args(tb_act_mode mode, int64_t m, int64_t k, int64_t n) const {
    tb_gemm_args a{};
    a.mode = mode;
    a.m = m;
    a.x = x.as<float>();
    a.ldx = k;
    a.xq = xq.as<int8_t>();
    a.ldxq = k;
    a.xd = xd.as<float>();
    a.ldxd = k / 32;
    a.y = y.as<float>();
    a.ldy = n;
    return a;
  }
};

Status gemm_on(const DeviceCalls& calls, void* handle, tb_cuda_workspace* ws, const tb_gemm_args& a,
               cudaStream_t s) {
  tb_error err{};
  return Status::from_c(calls.gemm(calls.ctx, handle, ws, &a, s, &err), err);
}

Status quantize_on(const DeviceCalls& calls, const tb_quantize_args& a, cudaStream_t s) {
  tb_error err{};
  return Status::from_c(calls.quantize(calls.ctx, &a, s, &err), err);
}

std::vector<float> download(const DeviceBuffer& d, size_t count) {
  std::vector<float> h(count);
  REQUIRE(cudaMemcpy(h.data(), d.p, count * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  return h;
}

struct ShapeNK {
  int64_t n, k;
};
// q/o (decode in strip blocks), gate (decode in slice blocks: global partials and counters), a
// ragged N with one slice of three groups.
constexpr ShapeNK kShapes[] = {{2048, 2048}, {6144, 2048}, {1000, 96}};

TEST_SUITE("gpu") {

TEST_CASE("gpu gemm_device equals reference bits: q8 q4 x f32 i8, M{1,2,7,33}, N2048 K2048, N6144 K2048, N1000 K96, one workspace for all three") {
  DeviceSession session;
  if (!session.cuda) return;
  auto& cuda = session.cuda;
  const DeviceCalls& calls = *session.calls;
  cudaStream_t s = session.stream;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    std::vector<HostStrips> hosts;
    std::vector<BoundWeights> bound;
    std::vector<void*> handles;
    for (const ShapeNK& sh : kShapes) {
      hosts.push_back(random_strips(prec, sh.n, sh.k, 300 + sh.n + sh.k + prec));
    }
    for (const HostStrips& h : hosts) {
      auto b = cuda->bind(strips_view(h));
      REQUIRE_MESSAGE(b.ok(), b.status().to_string());
      handles.push_back(b->handle());
      bound.push_back(std::move(b).value());
    }
    Workspace ws{calls};
    const Status made = make_workspace(calls, handles, 33, ws);
    REQUIRE_MESSAGE(made.ok(), made.to_string());
    for (size_t i = 0; i < hosts.size(); ++i) {
      const tb_strips& w = hosts[i].view;
      for (int64_t m : {1, 2, 7, 33}) {
        Activations act = make_activations(m, w.k, 40 + m + w.n);
        DeviceCase d(m, w.k, w.n);
        upload(d.x, act.x);
        upload(d.xq, act.xq);
        upload(d.xd, act.xd);
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
          REQUIRE(cudaMemset(d.y.p, 0xff, static_cast<size_t>(m * w.n) * 4) == cudaSuccess);
          const Status st = gemm_on(calls, handles[i], ws.ws, d.args(mode, m, w.k, w.n), s);
          REQUIRE_MESSAGE(st.ok(), st.to_string());
          REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
          const auto want = reference(mode, m, w, act);
          const auto got = download(d.y, want.size());
          const auto diff = bit_diff(want.data(), got.data(), static_cast<int64_t>(want.size()));
          CHECK_MESSAGE(diff.first == 0, prec_name(prec) << " " << act_mode_name(mode) << " N=" << w.n
                                             << " K=" << w.k << " M=" << m << ": " << diff.first
                                             << " floats differ, first at " << diff.second);
        }
      }
    }
  }
}

TEST_CASE("gpu gemm_device captured in a CUDA graph (global capture mode) and replayed 3 times on fresh inputs equals reference bits: q8 q4, f32 gemms and i8 quantise + gemm, M1 and M7 sharing one workspace") {
  DeviceSession session;
  if (!session.cuda) return;
  auto& cuda = session.cuda;
  const DeviceCalls& calls = *session.calls;
  cudaStream_t s = session.stream;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    HostStrips h0 = random_strips(prec, 2048, 2048, 501 + prec);   // q/o
    HostStrips h1 = random_strips(prec, 6144, 2048, 502 + prec);   // gate: partials and counters
    auto b0 = cuda->bind(strips_view(h0));
    auto b1 = cuda->bind(strips_view(h1));
    REQUIRE(b0.ok());
    REQUIRE(b1.ok());
    Workspace ws{calls};
    REQUIRE(make_workspace(calls, {b0->handle(), b1->handle()}, 7, ws).ok());
    // The step: for M in {1, 7} and each projection, an F32 gemm, then the I8 quantiser on the
    // same x and the I8 gemm on its codes. Every call shares the workspace, in stream order.
    struct Call {
      const HostStrips* h;
      void* handle;
      int64_t m;
      DeviceCase d;
      DeviceBuffer y_i8;
    };
    std::vector<std::unique_ptr<Call>> steps;
    for (int64_t m : {1, 7}) {
      for (auto [h, handle] : {std::pair<const HostStrips*, void*>{&h0, b0->handle()}, {&h1, b1->handle()}}) {
        const int64_t n = h->view.n, k = h->view.k;
        steps.push_back(std::unique_ptr<Call>(new Call{h, handle, m, DeviceCase(m, k, n),
                                                       DeviceBuffer(static_cast<size_t>(m * n) * 4)}));
      }
    }
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    Status enq;
    for (auto& c : steps) {
      const int64_t n = c->h->view.n, k = c->h->view.k;
      if (enq.ok()) enq = gemm_on(calls, c->handle, ws.ws, c->d.args(TB_ACT_F32, c->m, k, n), s);
      const tb_quantize_args q{c->m, k, c->d.x.as<float>(), k, c->d.xq.as<int8_t>(), k, c->d.xd.as<float>(), k / 32};
      if (enq.ok()) enq = quantize_on(calls, q, s);
      tb_gemm_args a = c->d.args(TB_ACT_I8, c->m, k, n);
      a.y = c->y_i8.as<float>();
      if (enq.ok()) enq = gemm_on(calls, c->handle, ws.ws, a, s);
    }
    // A refused call during the capture enqueues nothing and leaves the capture valid.
    tb_gemm_args bad = steps[0]->d.args(TB_ACT_F32, 1, 2048, 2048);
    bad.y = nullptr;
    const Status refused = gemm_on(calls, b0->handle(), ws.ws, bad, s);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    REQUIRE_MESSAGE(enq.ok(), enq.to_string());
    CHECK(refused.code() == TB_INVALID_ARGUMENT);
    REQUIRE_MESSAGE(end == cudaSuccess, cudaGetErrorString(end));
    cudaGraphExec_t exec = nullptr;
    REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    for (int replay = 0; replay < 3; ++replay) {
      std::vector<Activations> acts;
      for (auto& c : steps) {  // fresh inputs in the same buffers: the graph reads live data
        acts.push_back(make_activations(c->m, c->h->view.k, 900 + 31 * replay + c->m + c->h->view.n));
        upload(c->d.x, acts.back().x);
        REQUIRE(cudaMemset(c->d.y.p, 0xff, static_cast<size_t>(c->m * c->h->view.n) * 4) == cudaSuccess);
        REQUIRE(cudaMemset(c->y_i8.p, 0xff, static_cast<size_t>(c->m * c->h->view.n) * 4) == cudaSuccess);
      }
      REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
      REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
      for (size_t i = 0; i < steps.size(); ++i) {
        const Call& c = *steps[i];
        const tb_strips& w = c.h->view;
        for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
          const auto want = reference(mode, c.m, w, acts[i]);  // I8: the reference's own quantiser
          const auto got = download(mode == TB_ACT_F32 ? c.d.y : c.y_i8, want.size());
          const auto diff = bit_diff(want.data(), got.data(), static_cast<int64_t>(want.size()));
          CHECK_MESSAGE(diff.first == 0, "replay " << replay << " " << prec_name(prec) << " "
                                                   << act_mode_name(mode) << " N=" << w.n << " M=" << c.m
                                                   << ": " << diff.first << " floats differ, first at " << diff.second);
        }
      }
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

TEST_CASE("gpu quantise + gemm pairs back to back on one stream, every pair's codes in the same buffers, equal reference bits: the tensor-core gemm starts during the quantiser (dependent launch) and must still read the new codes; q8, N8448 K1024, M 2 and 24") {
  DeviceSession session;
  if (!session.cuda) return;
  auto& cuda = session.cuda;
  const DeviceCalls& calls = *session.calls;
  cudaStream_t s = session.stream;
  // 8 slices, 264 strips: 8-row strip blocks at M 2; at M 24 (on 132 SMs) 16-row blocks staging
  // their activations, two strips each.
  HostStrips h = random_strips(TB_PREC_Q8, 8448, 1024, 611);
  auto b = cuda->bind(strips_view(h));
  REQUIRE(b.ok());
  Workspace ws{calls};
  REQUIRE(make_workspace(calls, {b->handle()}, 24, ws).ok());
  const int64_t n = h.view.n, k = h.view.k;
  constexpr int kPairs = 4;
  for (int64_t m : {2, 24}) {
    DeviceCase shared(m, k, n);  // the codes and scales every pair writes, then reads
    std::vector<std::unique_ptr<DeviceCase>> pairs;
    std::vector<Activations> acts;
    for (int i = 0; i < kPairs; ++i) {
      pairs.push_back(std::make_unique<DeviceCase>(m, k, n));
      acts.push_back(make_activations(m, k, 700 + 13 * i + m));
      upload(pairs.back()->x, acts.back().x);
    }
    std::vector<std::vector<float>> want;
    for (int i = 0; i < kPairs; ++i) want.push_back(reference(TB_ACT_I8, m, h.view, acts[i]));
    const auto check = [&](const char* how) {
      REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
      for (int i = 0; i < kPairs; ++i) {
        const auto got = download(pairs[i]->y, want[i].size());
        const auto diff = bit_diff(want[i].data(), got.data(), static_cast<int64_t>(want[i].size()));
        CHECK_MESSAGE(diff.first == 0, how << ", pair " << i << " M=" << m << ": " << diff.first
                                           << " floats differ, first at " << diff.second);
        REQUIRE(cudaMemset(pairs[i]->y.p, 0xff, want[i].size() * 4) == cudaSuccess);
      }
    };
    for (int i = 0; i < kPairs; ++i) {  // the public device calls
      const tb_quantize_args q{m, k, pairs[i]->x.as<float>(), k, shared.xq.as<int8_t>(), k, shared.xd.as<float>(), k / 32};
      REQUIRE(quantize_on(calls, q, s).ok());
      tb_gemm_args a = shared.args(TB_ACT_I8, m, k, n);
      a.y = pairs[i]->y.as<float>();
      REQUIRE(gemm_on(calls, b->handle(), ws.ws, a, s).ok());
    }
    check("device calls");
    // The launches beneath them, the gemm allowed to start when the quantiser's blocks start or
    // when they end.
    cuda::DeviceStrips dev;
    REQUIRE(cuda::device_strips(cuda->raw(), b->handle(), &dev).ok());
    for (bool at_start : {true, false}) {
      for (int i = 0; i < kPairs; ++i) {
        cuda::QuantizeLaunch q;
        q.m = m;
        q.k = k;
        q.x = pairs[i]->x.as<float>();
        q.ldx = k;
        q.xq = shared.xq.as<int8_t>();
        q.ldxq = k;
        q.xd = shared.xd.as<float>();
        q.ldxd = k / 32;
        q.dependents_at_start = at_start;
        REQUIRE(cuda::launch_quantize_i8(q, s).ok());
        cuda::GemmLaunch g;
        g.mode = TB_ACT_I8;
        g.m = m;
        g.xq = shared.xq.as<int8_t>();
        g.xd = shared.xd.as<float>();
        g.y = pairs[i]->y.as<float>();
        const Status st = cuda::launch_gemm(dev, g, s);
        REQUIRE_MESSAGE(st.ok(), st.to_string());
      }
      check(at_start ? "dependents at the quantiser's start" : "dependents at its end");
    }
  }
}

// Strips of random codes whose nonzero scales all lie in [2^-8, 2^-7) (signs and mantissas kept,
// padding scales still zero): a chain of gemms then stays far from overflow.
HostStrips tame_strips(tb_prec prec, int64_t n, int64_t k, uint64_t seed) {
  HostStrips h = random_strips(prec, n, k, seed);
  for (uint16_t& v : h.owned.scales) {
    if ((v & 0x7fff) != 0) v = static_cast<uint16_t>((v & 0x83ff) | 0x1c00);
  }
  h.view = h.owned.view();
  return h;
}

TEST_CASE("gpu chained gemms back to back on one stream, each reading the output of the call before it, equal reference bits with dependent launch on and off: decode strip and slice blocks, prefill slice blocks, the quantiser then an I8 gemm; q8 q4, M 1 and 5") {
  DeviceSession session;
  if (!session.cuda) return;
  auto& cuda = session.cuda;
  const DeviceCalls& calls = *session.calls;
  cudaStream_t s = session.stream;
  constexpr int kReps = 3;
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    // A: N2048 K2048 (decode in strip blocks), B: N6144 K2048 (decode in slice blocks: partials
    // and counters), C: N2048 K6144 (mode I8 after the quantiser).
    const HostStrips ha = tame_strips(prec, 2048, 2048, 811 + prec);
    const HostStrips hb = tame_strips(prec, 6144, 2048, 812 + prec);
    const HostStrips hc = tame_strips(prec, 2048, 6144, 813 + prec);
    auto ba = cuda->bind(strips_view(ha));
    auto bb = cuda->bind(strips_view(hb));
    auto bc = cuda->bind(strips_view(hc));
    REQUIRE(ba.ok());
    REQUIRE(bb.ok());
    REQUIRE(bc.ok());
    Workspace ws{calls};
    REQUIRE(make_workspace(calls, {ba->handle(), bb->handle(), bc->handle()}, 5, ws).ok());
    for (int64_t m : {1, 5}) {
      // Every rep: x0 -> A -> ya -> B -> yb -> quantise -> C (I8) -> yc -> A -> out[rep]. The
      // buffers between the calls are shared by the reps, so a call that read its input before
      // the call writing it had finished would read the previous rep's values.
      std::vector<Activations> x0;
      std::vector<std::unique_ptr<DeviceBuffer>> dx0, dout;
      std::vector<std::vector<float>> want;
      for (int r = 0; r < kReps; ++r) {
        x0.push_back(make_activations(m, 2048, 830 + 7 * r + m + prec));
        dx0.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(m * 2048) * 4));
        dout.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(m * 2048) * 4));
        upload(*dx0.back(), x0.back().x);
        Activations a;
        a.x = reference(TB_ACT_F32, m, ha.view, x0.back());
        Activations b;
        b.x = reference(TB_ACT_F32, m, hb.view, a);
        b.xq.resize(static_cast<size_t>(m * 6144));
        b.xd.resize(static_cast<size_t>(m * 6144 / 32));
        ref::quantize_activations(m, 6144, b.x.data(), 6144, b.xq.data(), 6144, b.xd.data(), 6144 / 32);
        Activations c;
        c.x = reference(TB_ACT_I8, m, hc.view, b);
        want.push_back(reference(TB_ACT_F32, m, ha.view, c));
      }
      DeviceCase da(m, 2048, 2048), db(m, 2048, 6144), dc(m, 6144, 2048);
      for (int dependent : {1, 0}) {
        REQUIRE(cuda->set_switch("cuda.set_dependent_launch", dependent).ok());
        for (int r = 0; r < kReps; ++r) {
          tb_gemm_args a = da.args(TB_ACT_F32, m, 2048, 2048);
          a.x = dx0[r]->as<float>();
          a.y = db.x.as<float>();
          REQUIRE(gemm_on(calls, ba->handle(), ws.ws, a, s).ok());
          tb_gemm_args b = db.args(TB_ACT_F32, m, 2048, 6144);
          b.y = dc.x.as<float>();
          REQUIRE(gemm_on(calls, bb->handle(), ws.ws, b, s).ok());
          const tb_quantize_args q{m, 6144, dc.x.as<float>(), 6144, dc.xq.as<int8_t>(), 6144, dc.xd.as<float>(), 6144 / 32};
          REQUIRE(quantize_on(calls, q, s).ok());
          tb_gemm_args c = dc.args(TB_ACT_I8, m, 6144, 2048);
          c.y = da.x.as<float>();
          REQUIRE(gemm_on(calls, bc->handle(), ws.ws, c, s).ok());
          tb_gemm_args d = da.args(TB_ACT_F32, m, 2048, 2048);
          d.y = dout[r]->as<float>();
          REQUIRE(gemm_on(calls, ba->handle(), ws.ws, d, s).ok());
        }
        REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
        for (int r = 0; r < kReps; ++r) {
          const auto got = download(*dout[r], want[r].size());
          const auto diff = bit_diff(want[r].data(), got.data(), static_cast<int64_t>(want[r].size()));
          CHECK_MESSAGE(diff.first == 0, prec_name(prec) << " M=" << m << " rep " << r << " dependent launch "
                                                         << dependent << ": " << diff.first
                                                         << " floats differ, first at " << diff.second);
          REQUIRE(cudaMemset(dout[r]->p, 0xff, want[r].size() * 4) == cudaSuccess);
        }
      }
      REQUIRE(cuda->set_switch("cuda.set_dependent_launch", 1).ok());  // the default
    }
  }
}

TEST_CASE("gpu device calls refuse hostile arguments through get_proc: host pointers, foreign handles and workspaces, a float-matrix handle, K100, M above max_m; the quantiser equals reference bits on device pointers") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  const DeviceCalls calls(*cuda);
  REQUIRE(calls.all());
  CHECK(cuda->proc("cuda.gemm_devic") == nullptr);
  auto other = cuda_or_skip();  // a second backend instance on the same device
  REQUIRE(other.has_value());
  const DeviceCalls other_calls(*other);

  HostStrips h = random_strips(TB_PREC_Q8, 2048, 2048, 77);
  HostStrips h100 = random_strips(TB_PREC_Q8, 64, 100, 78);
  auto b = cuda->bind(strips_view(h));
  auto b100 = cuda->bind(strips_view(h100));
  auto b_other = other->bind(strips_view(h));
  std::vector<float> mat(64 * 32, 0.5f);
  tb_weights_view mv{};
  mv.kind = TB_WEIGHTS_F32;
  mv.matrix = tb_matrix_f32{64, 32, mat.data()};
  auto bm = cuda->bind(mv);
  REQUIRE(b.ok());
  REQUIRE(b100.ok());
  REQUIRE(b_other.ok());
  REQUIRE(bm.ok());
  const auto refused = [](const Status& s, tb_code code, const char* needle) {
    CHECK_MESSAGE(s.code() == code, s.to_string());
    CHECK_MESSAGE(s.message().find(needle) != std::string::npos, "missing '" << needle << "' in " << s.to_string());
  };

  // workspace_create
  Workspace bad_ws{calls};
  refused(make_workspace(calls, {bm->handle()}, 4, bad_ws), TB_FAILED_PRECONDITION, "float matrix");
  refused(make_workspace(calls, {b_other->handle()}, 4, bad_ws), TB_INVALID_ARGUMENT, "not bound on this CUDA backend");
  refused(make_workspace(calls, {b->handle(), nullptr}, 4, bad_ws), TB_INVALID_ARGUMENT, "handle is null");
  refused(make_workspace(calls, {b->handle()}, 0, bad_ws), TB_INVALID_ARGUMENT, "max_m = 0");
  CHECK(bad_ws.ws == nullptr);
  {
    tb_error err{};
    CHECK(calls.create(calls.ctx, nullptr, 1, 4, &bad_ws.ws, &err) == TB_INVALID_ARGUMENT);
    CHECK(calls.create(calls.ctx, nullptr, 1, 4, nullptr, &err) == TB_INVALID_ARGUMENT);
  }
  calls.destroy(calls.ctx, nullptr);  // ignored

  Workspace ws{calls};
  REQUIRE(make_workspace(calls, {b->handle(), b100->handle()}, 4, ws).ok());
  Workspace ws_other{other_calls};
  REQUIRE(make_workspace(other_calls, {b_other->handle()}, 4, ws_other).ok());

  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  DeviceCase d(4, 2048, 2048);
  const tb_gemm_args good = d.args(TB_ACT_F32, 4, 2048, 2048);
  std::vector<float> host_x(4 * 2048), host_y(4 * 2048);

  tb_gemm_args a = good;
  a.x = host_x.data();
  refused(gemm_on(calls, b->handle(), ws.ws, a, s), TB_INVALID_ARGUMENT, "x = ");
  refused(gemm_on(calls, b->handle(), ws.ws, a, s), TB_INVALID_ARGUMENT, "host memory");
  a = good;
  a.y = host_y.data();
  refused(gemm_on(calls, b->handle(), ws.ws, a, s), TB_INVALID_ARGUMENT, "y = ");
  refused(gemm_on(calls, b->handle(), ws_other.ws, good, s), TB_INVALID_ARGUMENT, "another CUDA backend");
  refused(gemm_on(calls, b_other->handle(), ws.ws, good, s), TB_INVALID_ARGUMENT, "not bound on this CUDA backend");
  refused(gemm_on(calls, nullptr, ws.ws, good, s), TB_INVALID_ARGUMENT, "handle is null");
  refused(gemm_on(calls, bm->handle(), ws.ws, good, s), TB_FAILED_PRECONDITION, "float matrix");
  refused(gemm_on(calls, b100->handle(), ws.ws, d.args(TB_ACT_F32, 1, 100, 64), s), TB_UNIMPLEMENTED, "K % 32 != 0");
  a = good;
  a.m = 5;
  refused(gemm_on(calls, b->handle(), ws.ws, a, s), TB_INVALID_ARGUMENT, "max_m = 4");
  {
    tb_error err{};
    CHECK(calls.gemm(calls.ctx, b->handle(), ws.ws, nullptr, s, &err) == TB_INVALID_ARGUMENT);
    CHECK(calls.gemm(nullptr, b->handle(), ws.ws, &good, s, &err) == TB_INVALID_ARGUMENT);
  }

  // After every refusal the context is clean: a valid call gives the reference's bits.
  Activations act = make_activations(4, 2048, 79);
  upload(d.x, act.x);
  const Status st = gemm_on(calls, b->handle(), ws.ws, good, s);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  const auto want = reference(TB_ACT_F32, 4, h.view, act);
  const auto got = download(d.y, want.size());
  CHECK(bit_diff(want.data(), got.data(), static_cast<int64_t>(want.size())).first == 0);

  // The quantiser on device pointers: host pointers refused, wide leading dims and a ragged K
  // give the reference's codes and scales.
  const int64_t m = 5, k = 33, kp = 64, ldx = k + 3, ldxq = kp + 32, ldxd = kp / 32 + 1;
  const std::vector<float> x = random_floats(static_cast<size_t>(m * ldx), 80);
  std::vector<int8_t> want_q(static_cast<size_t>(m * ldxq), 0x55);
  std::vector<float> want_d(static_cast<size_t>(m * ldxd), -2.0f);
  DeviceBuffer dx(x.size() * 4), dq(want_q.size()), dd(want_d.size() * 4);
  upload(dx, x);
  upload(dq, want_q);
  upload(dd, want_d);
  ref::quantize_activations(m, k, x.data(), ldx, want_q.data(), ldxq, want_d.data(), ldxd);
  const tb_quantize_args q_host{m, k, x.data(), ldx, dq.as<int8_t>(), ldxq, dd.as<float>(), ldxd};
  const Status qh = quantize_on(calls, q_host, s);
  CHECK(qh.code() == TB_INVALID_ARGUMENT);
  CHECK_MESSAGE(qh.message().find("cuda.quantize_i8_device: x = ") != std::string::npos, qh.to_string());
  const tb_quantize_args q{m, k, dx.as<float>(), ldx, dq.as<int8_t>(), ldxq, dd.as<float>(), ldxd};
  REQUIRE(quantize_on(calls, q, s).ok());
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  std::vector<int8_t> got_q(want_q.size());
  std::vector<float> got_d(want_d.size());
  REQUIRE(cudaMemcpy(got_q.data(), dq.p, got_q.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(got_d.data(), dd.p, got_d.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(std::memcmp(got_q.data(), want_q.data(), got_q.size()) == 0);
  CHECK(std::memcmp(got_d.data(), want_d.data(), got_d.size() * 4) == 0);
  cudaStreamDestroy(s);
}

TEST_CASE("gpu gemm_device through the host C API (tb_backend_proc, tb_bound_backend_handle) equals reference bits: entries s6 (q8) and s7 (q4), f32 and i8, M{1,3}") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  const std::string& path = test::c_api_random_artifact();
  auto art_cpp = artifact::Artifact::open(path);  // the reference reads the same entries
  REQUIRE(art_cpp.ok());
  tb_artifact* art = nullptr;
  tb_engine* engine = nullptr;
  REQUIRE(tb_artifact_open(path.c_str(), &art) == TB_OK);
  REQUIRE_MESSAGE(tb_backend_open("cuda", &engine) == TB_OK, std::string(tb_last_error()));
  void* fn_create = nullptr;
  void* fn_destroy = nullptr;
  void* fn_gemm = nullptr;
  void* ctx = nullptr;
  REQUIRE(tb_backend_proc(engine, TB_CUDA_WORKSPACE_CREATE, &fn_create, &ctx) == TB_OK);
  REQUIRE(tb_backend_proc(engine, TB_CUDA_WORKSPACE_DESTROY, &fn_destroy, &ctx) == TB_OK);
  REQUIRE(tb_backend_proc(engine, TB_CUDA_GEMM_DEVICE, &fn_gemm, &ctx) == TB_OK);
  const auto create = reinterpret_cast<tb_cuda_workspace_create_fn>(fn_create);
  const auto destroy = reinterpret_cast<tb_cuda_workspace_destroy_fn>(fn_destroy);
  const auto gemm = reinterpret_cast<tb_cuda_gemm_device_fn>(fn_gemm);
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  for (const char* entry : {"s6", "s7"}) {
    tb_bound* bound = nullptr;
    REQUIRE(tb_bind(engine, art, entry, &bound) == TB_OK);
    void* handle = nullptr;
    REQUIRE(tb_bound_backend_handle(bound, &handle) == TB_OK);
    tb_cuda_workspace* ws = nullptr;
    tb_error err{};
    REQUIRE_MESSAGE(create(ctx, &handle, 1, 3, &ws, &err) == TB_OK, err.message);
    const tb_strips w = art_cpp.value()->view(*art_cpp.value()->find(entry)).strips;
    REQUIRE(w.k % 32 == 0);
    for (int64_t m : {1, 3}) {
      Activations act = make_activations(m, w.k, 60 + m);
      DeviceCase d(m, w.k, w.n);
      upload(d.x, act.x);
      upload(d.xq, act.xq);
      upload(d.xd, act.xd);
      for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
        const tb_gemm_args a = d.args(mode, m, w.k, w.n);
        REQUIRE_MESSAGE(gemm(ctx, handle, ws, &a, s, &err) == TB_OK, err.message);
        REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
        const auto want = reference(mode, m, w, act);
        const auto got = download(d.y, want.size());
        CHECK_MESSAGE(bit_diff(want.data(), got.data(), static_cast<int64_t>(want.size())).first == 0,
                      entry << " " << act_mode_name(mode) << " M=" << m);
      }
    }
    destroy(ctx, ws);
    tb_unbind(bound);
  }
  cudaStreamDestroy(s);
  tb_backend_close(engine);
  tb_artifact_close(art);
}

}  // TEST_SUITE

}  // namespace
}  // namespace twinbit::cuda_test

#endif  // TWINBIT_HAS_CUDA_BACKEND
