// twinbit-bench-ggml: llama.cpp's ggml CPU mul_mat timed at twinbit's benchmark shapes, so
// twinbit-bench's numbers have a peer measured on the same machine, run just before or after them.
// Built only when ggml is given (bench/CMakeLists.txt: TWINBIT_GGML_SOURCE, TWINBIT_GGML_BUILD).
//
// What it times, per case: one graph y = mul_mat(W, x) (W: N x K in Q8_0 or Q4_0, x: K x M f32,
// which ggml quantises to Q8 itself, as its I8 path) computed on the CPU backend with a persistent
// threadpool of --threads, W placed in the buffer type llama.cpp would pick (--buft: "AMX" =
// ggml's AMX extra buffer, which repacks W at upload for its tile kernels; "CPU" = the plain
// buffer). Distinct copies of W rotate past 1 GiB, so every call reads cold weights, like
// twinbit-bench; the median over --reps rotations of the mean time per call. GB/s count the
// GGUF bytes (Q8_0 34 B, Q4_0 18 B per 32 weights).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

struct Args {
  std::vector<std::string> shapes = {"lm_head", "gate_up"};
  std::vector<int> ms = {32};
  std::vector<std::string> precs = {"q8", "q4"};
  std::string buft = "AMX";
  int threads = 16, reps = 9;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

int usage(const char* why) {
  std::fprintf(stderr, "twinbit-bench-ggml: %s\n"
               "usage: twinbit-bench-ggml [--shape lm_head,gate_up] [--m 32] [--prec q8,q4]\n"
               "                          [--buft AMX|CPU] [--threads 16] [--reps 9]\n"
               "example: twinbit-bench-ggml --shape lm_head --m 1,32 --threads 16\n", why);
  return 2;
}

ggml_backend_buffer_type_t find_buft(ggml_backend_dev_t dev, const std::string& name) {
  if (name == "CPU") return ggml_backend_dev_buffer_type(dev);
  auto get = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts"));
  if (!get) return nullptr;
  for (ggml_backend_buffer_type_t* b = get(dev); b && *b; ++b) {
    if (name == ggml_backend_buft_name(*b)) return *b;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") return usage("ggml's CPU mul_mat at twinbit's shapes"), 0;
    if (i + 1 >= argc) return usage(("missing value after " + k).c_str());
    const std::string v = argv[++i];
    if (k == "--shape") a.shapes = split(v);
    else if (k == "--prec") a.precs = split(v);
    else if (k == "--buft") a.buft = v;
    else if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--reps") a.reps = std::atoi(v.c_str());
    else if (k == "--m") { a.ms.clear(); for (auto& s : split(v)) a.ms.push_back(std::atoi(s.c_str())); }
    else return usage(("unknown option " + k).c_str());
  }
  if (a.threads < 1 || a.reps < 1) return usage("--threads and --reps must be >= 1");
  ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  ggml_backend_t be = dev ? ggml_backend_dev_init(dev, nullptr) : nullptr;
  if (!be) { std::fprintf(stderr, "twinbit-bench-ggml: no ggml CPU backend\n"); return 1; }
  ggml_backend_buffer_type_t wbuft = find_buft(dev, a.buft);
  if (!wbuft) {
    std::fprintf(stderr, "twinbit-bench-ggml: buffer type %s is not offered here (an AMX buffer "
                 "needs AMX-INT8 and a ggml built with it)\n", a.buft.c_str());
    return 77;
  }
  ggml_threadpool_params tpp = ggml_threadpool_params_default(a.threads);
  ggml_threadpool_t tp = ggml_threadpool_new(&tpp);
  ggml_backend_cpu_set_n_threads(be, a.threads);
  ggml_backend_cpu_set_threadpool(be, tp);
  struct Shape { const char* name; int64_t k, n; };
  const Shape shapes[] = {{"q_o", 2048, 2048}, {"k_v", 2048, 1024}, {"gate", 2048, 6144},
                          {"gate_up", 2048, 12288}, {"down", 6144, 2048}, {"qkv", 2048, 4096},
                          {"lm_head", 2048, 151936}};
  for (const std::string& sname : a.shapes) {
    const Shape* sh = nullptr;
    for (const Shape& s : shapes) if (sname == s.name) sh = &s;
    if (!sh) return usage(("unknown shape " + sname).c_str());
    for (const std::string& prec : a.precs) {
      if (prec != "q8" && prec != "q4") return usage(("unknown precision " + prec).c_str());
      const ggml_type type = prec == "q8" ? GGML_TYPE_Q8_0 : GGML_TYPE_Q4_0;
      const size_t wbytes = ggml_row_size(type, sh->k) * static_cast<size_t>(sh->n);
      const int64_t copies = std::max<int64_t>(2, ((int64_t{1} << 30) + wbytes - 1) / wbytes);
      // Random weights in [-1, 1), quantised once by ggml, uploaded into every copy.
      std::vector<uint8_t> q(wbytes);
      {
        std::vector<float> f(static_cast<size_t>(sh->n * sh->k));
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (auto& v : f) v = u(rng);
        ggml_quantize_chunk(type, f.data(), q.data(), 0, sh->n, sh->k, nullptr);
      }
      std::vector<ggml_context*> wctx(copies);
      std::vector<ggml_backend_buffer_t> wbuf(copies);
      std::vector<ggml_tensor*> w(copies);
      for (int64_t c = 0; c < copies; ++c) {
        ggml_init_params ip = {ggml_tensor_overhead() * 2, nullptr, true};
        wctx[c] = ggml_init(ip);
        w[c] = ggml_new_tensor_2d(wctx[c], type, sh->k, sh->n);
        wbuf[c] = ggml_backend_alloc_ctx_tensors_from_buft(wctx[c], wbuft);
        if (!wbuf[c]) { std::fprintf(stderr, "twinbit-bench-ggml: cannot allocate weights\n"); return 1; }
        ggml_backend_buffer_set_usage(wbuf[c], GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        ggml_backend_tensor_set(w[c], q.data(), 0, wbytes);
      }
      for (int m : a.ms) {
        // One graph per copy: x and y in a plain CPU buffer.
        std::vector<ggml_context*> gctx(copies);
        std::vector<ggml_backend_buffer_t> gbuf(copies);
        std::vector<ggml_cgraph*> graphs(copies);
        std::vector<float> x(static_cast<size_t>(sh->k * m));
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) * 1e-3f - 1.0f;
        for (int64_t c = 0; c < copies; ++c) {
          ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
          gctx[c] = ggml_init(ip);
          ggml_tensor* xt = ggml_new_tensor_2d(gctx[c], GGML_TYPE_F32, sh->k, m);
          ggml_tensor* y = ggml_mul_mat(gctx[c], w[c], xt);
          graphs[c] = ggml_new_graph(gctx[c]);
          ggml_build_forward_expand(graphs[c], y);
          gbuf[c] = ggml_backend_alloc_ctx_tensors(gctx[c], be);
          ggml_backend_tensor_set(xt, x.data(), 0, x.size() * sizeof(float));
        }
        auto rotation = [&]() {
          const auto t0 = std::chrono::steady_clock::now();
          for (int64_t c = 0; c < copies; ++c) {
            if (ggml_backend_graph_compute(be, graphs[c]) != GGML_STATUS_SUCCESS) return -1.0;
          }
          return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / copies;
        };
        if (rotation() < 0) { std::fprintf(stderr, "twinbit-bench-ggml: graph compute failed\n"); return 1; }
        std::vector<double> t;
        for (int r = 0; r < a.reps; ++r) t.push_back(rotation());
        std::sort(t.begin(), t.end());
        const double us = t[t.size() / 2];
        std::printf("ggml %-5s %-4s K=%lld N=%lld M=%d threads=%d copies=%lld median %.1f us  %.2f GB/s "
                    "(gguf bytes %.1f MB)  %.0f GOPS\n", ggml_type_name(type), a.buft.c_str(),
                    (long long)sh->k, (long long)sh->n, m, a.threads, (long long)copies, us,
                    wbytes / us * 1e-3, wbytes * 1e-6, 2.0 * m * sh->n * sh->k / us * 1e-3);
        std::fflush(stdout);
        for (int64_t c = 0; c < copies; ++c) { ggml_backend_buffer_free(gbuf[c]); ggml_free(gctx[c]); }
      }
      for (int64_t c = 0; c < copies; ++c) { ggml_backend_buffer_free(wbuf[c]); ggml_free(wctx[c]); }
    }
  }
  ggml_threadpool_free(tp);
  ggml_backend_free(be);
  return 0;
}
