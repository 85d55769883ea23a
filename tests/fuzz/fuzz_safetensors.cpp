// libFuzzer target over the safetensors header and index parsers (artifacts/import/
// safetensors_file.h): any byte string must give a header whose tensors tile the data section
// inside the input, or a clean error - never a crash, a hang, a read outside the input (ASan) or
// an allocation sized by a field. The invariants are tests/fuzz/safetensors_check.h, which the
// normal build replays over the committed corpus (tests/test_import_fuzz_corpus.cpp).
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTWINBIT_FUZZ=ON
//   build-fuzz/tests/fuzz/fuzz_safetensors -max_total_time=300 -dict=tests/fuzz/safetensors.dict \
//       corpus-st/ tests/fuzz/corpus/safetensors/
#include <cstddef>
#include <cstdint>

#include "safetensors_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!fuzzcheck::safetensors_input_ok(data, size)) __builtin_trap();
  return 0;
}
