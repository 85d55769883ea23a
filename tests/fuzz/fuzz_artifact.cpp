// libFuzzer target over twinbit::artifact::parse: any byte string must give either a valid
// Artifact or a clean error - never a crash, a hang, or a read outside the input (ASan checks).
// On success every view is exercised (and every payload hashed), so a manifest that passed the
// checks but points outside the input would be caught here.
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTWINBIT_FUZZ=ON
//   build-fuzz/tests/fuzz/fuzz_artifact -max_total_time=180 corpus/ tests/fuzz/seeds/
#include <cstddef>
#include <cstdint>

#include "artifacts/artifact.h"
#include "core/op_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto a = twinbit::artifact::parse({data, size}, "fuzz");
  if (!a.ok()) return 0;
  const twinbit::artifact::Artifact& art = **a;
  for (const auto& e : art.entries()) {
    const tb_weights_view v = art.view(e);
    if (e.kind == TB_WEIGHTS_STRIPS) {
      if (!twinbit::check_strips(v.strips).ok()) __builtin_trap();  // parse let a bad shape in
    } else if (!twinbit::check_matrix(v.matrix).ok()) {
      __builtin_trap();
    }
    (void)art.view_verified(e);
  }
  return 0;
}
