// libFuzzer target over twinbit::artifact::parse: any byte string must give either a valid
// Artifact or a clean error - never a crash, a hang, or a read outside the input (ASan checks).
// On success every view is exercised (and every payload hashed), so a manifest that passed the
// checks but points outside the input would be caught here. Each input is parsed twice: as given,
// and with the header checksum recomputed, so that mutations reach the structural checks behind
// the checksum (as a forger's file would).
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTWINBIT_FUZZ=ON
//   build-fuzz/tests/fuzz/fuzz_artifact -max_total_time=180 corpus/ tests/fuzz/seeds/
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "core/op_checks.h"

namespace {

void parse_and_use(const uint8_t* data, size_t size) {
  auto a = twinbit::artifact::parse({data, size}, "fuzz");
  if (!a.ok()) return;
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
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace twinbit::artifact;
  parse_and_use(data, size);
  if (size < kHeaderBytes) return 0;
  uint64_t mbytes = 0;
  std::memcpy(&mbytes, data + kOffManifestBytes, 8);  // little-endian host
  if (mbytes > size - kHeaderBytes) return 0;
  std::vector<uint8_t> sealed(data, data + size);
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, sealed.data(), kOffChecksum);
  XXH64_update(st, sealed.data() + kHeaderBytes, mbytes);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  std::memcpy(sealed.data() + kOffChecksum, &h, 8);
  parse_and_use(sealed.data(), sealed.size());
  return 0;
}
