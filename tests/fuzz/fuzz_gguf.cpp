// libFuzzer target over the GGUF reader (artifacts/import/gguf_file.h): any byte string must give
// either a file whose tensors lie inside the input and decode, or a clean error - never a crash,
// a hang, an unbounded allocation, or a read outside the input (ASan checks). gguf_exercise.h
// says what is checked; tests/test_import_gguf_corpus.cpp replays the corpus in the normal build.
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTWINBIT_FUZZ=ON
//   build-fuzz/tests/fuzz/fuzz_gguf -max_total_time=300 -dict=tests/fuzz/gguf.dict \
//       corpus-gguf/ tests/fuzz/corpus/gguf/
#include <cstddef>
#include <cstdint>

#include "gguf_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!twinbit::import::exercise_gguf(data, size)) __builtin_trap();
  return 0;
}
