// libFuzzer target over twinbit::npy::parse (artifacts/npy.h): any byte string must give either an
// array whose payload is exactly its shape's float32 bytes inside the input, or a clean error -
// never a crash, a hang, or a read outside the input (ASan checks). An accepted array is read
// whole, and its shape must survive a round trip through npy::header.
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTWINBIT_FUZZ=ON
//   build-fuzz/tests/fuzz/fuzz_npy -max_total_time=180 -dict=tests/fuzz/npy.dict corpus-npy/
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace twinbit;
  auto a = npy::parse({data, size}, "fuzz");
  if (!a.ok()) {
    if (a.status().code() != TB_INVALID_ARGUMENT && a.status().code() != TB_DATA_LOSS) __builtin_trap();
    return 0;
  }
  const npy::Array& arr = a.value();
  if (arr.payload.size() != static_cast<size_t>(arr.count()) * 4) __builtin_trap();
  if (arr.payload.data() + arr.payload.size() != data + size) __builtin_trap();
  volatile uint8_t sink = 0;
  for (uint8_t b : arr.payload) sink = sink ^ b;
  std::string again = npy::header(arr.shape);
  again.append(reinterpret_cast<const char*>(arr.payload.data()), arr.payload.size());
  auto b = npy::parse({reinterpret_cast<const uint8_t*>(again.data()), again.size()}, "fuzz-again");
  if (!b.ok() || b.value().shape != arr.shape) __builtin_trap();
  return 0;
}
