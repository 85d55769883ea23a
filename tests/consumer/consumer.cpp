// The C++ side of the consumer: the same C API from C++20, linked statically, in the I8 mode.
// Usage: consumer_cpp ARTIFACT ENTRY X.f32 Y.f32   (X as written by consumer_c)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include <twinbit/twinbit.h>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: " << argv[0] << " ARTIFACT ENTRY X.f32 Y.f32\n";
    return 2;
  }
  const char* entry = argv[2];
  tb_runtime* opened = nullptr;
  if (tb_runtime_open(argv[1], nullptr, 0, nullptr, nullptr, &opened) != TB_OK) {
    std::cerr << tb_runtime_last_error() << "\n";
    return 1;
  }
  std::unique_ptr<tb_runtime, decltype(&tb_runtime_close)> rt(opened, &tb_runtime_close);
  int64_t n = 0, k = 0;
  if (tb_runtime_entry_shape(rt.get(), entry, &n, &k) != TB_OK) {
    std::cerr << tb_runtime_last_error() << "\n";
    return 1;
  }
  std::ifstream in(argv[3], std::ios::binary | std::ios::ate);
  const auto bytes = static_cast<int64_t>(in.tellg());
  if (!in || bytes <= 0 || bytes % (4 * k) != 0) {
    std::cerr << argv[3] << ": not rows of " << k << " floats\n";
    return 1;
  }
  const int64_t m = bytes / (4 * k);
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  in.seekg(0).read(reinterpret_cast<char*>(x.data()), bytes);
  if (tb_runtime_gemm(rt.get(), entry, m, TB_ACT_I8, x.data(), k, y.data(), n) != TB_OK) {
    std::cerr << tb_runtime_last_error() << "\n";
    return 1;
  }
  std::ofstream out(argv[4], std::ios::binary);
  out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(y.size() * 4));
  if (!out.flush()) {
    std::cerr << "cannot write " << argv[4] << "\n";
    return 1;
  }
  std::printf("%s (i8): y[%lld][%lld] = %g\n", entry, static_cast<long long>(m), static_cast<long long>(n), y[0]);
  return 0;
}
