// libFuzzer target over twinbit::artifact::parse: any byte string must give either a valid
// Artifact or a clean error - never a crash, a hang, or a read outside the input (ASan checks).
// On success every view is exercised and every entry verified (payload hashes, gaps, strip
// padding), so a manifest that passed the checks but points outside the input would be caught
// here. Each input is parsed up to three times: as given; with the header checksum recomputed, so
// that mutations reach the structural and text checks behind the checksum (as a forger's file
// would); and, when that parses, with every payload checksum recomputed too, so that mutations of
// gap and padding bytes reach verify's zero-padding checks instead of stopping at a hash.
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTWINBIT_FUZZ=ON
//   build-fuzz/tests/fuzz/fuzz_artifact -max_total_time=180 corpus/ tests/fuzz/seeds/
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../test_artifact_util.h"  // walk(): field offsets of a manifest that parsed
#include "artifacts/artifact.h"
#include "artifacts/format.h"
#include "core/op_checks.h"

namespace {

// True when the input parsed.
bool parse_and_use(const uint8_t* data, size_t size) {
  auto a = twinbit::artifact::parse({data, size}, "fuzz");
  if (!a.ok()) return false;
  const twinbit::artifact::Artifact& art = **a;
  for (const auto& e : art.entries()) {
    const tb_weights_view v = art.view(e);
    if (e.kind == TB_WEIGHTS_STRIPS) {
      if (!twinbit::check_strips(v.strips).ok()) __builtin_trap();  // parse let a bad shape in
    } else if (!twinbit::check_matrix(v.matrix).ok()) {
      __builtin_trap();
    }
    const twinbit::Status st = art.verify(e);
    if (!st.ok() && st.code() != TB_DATA_LOSS) __builtin_trap();  // corruption is DATA_LOSS
    (void)art.view_verified(e);
  }
  return true;
}

void seal_header(std::vector<uint8_t>& b, uint64_t mbytes) {
  using namespace twinbit::artifact;
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, b.data(), kOffChecksum);
  XXH64_update(st, b.data() + kHeaderBytes, mbytes);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  std::memcpy(b.data() + kOffChecksum, &h, 8);  // little-endian host
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
  seal_header(sealed, mbytes);
  if (!parse_and_use(sealed.data(), sealed.size())) return 0;
  // It parsed, so walk() stays inside the manifest and each payload inside the input.
  for (const testart::EntryFields& f : testart::walk(sealed)) {
    for (size_t pf : f.payload) {
      const uint64_t off = testart::get_u64(sealed, pf), bytes = testart::get_u64(sealed, pf + 8);
      testart::put_u64(sealed, pf + 16, XXH64(sealed.data() + off, bytes, 0));
    }
  }
  seal_header(sealed, mbytes);
  parse_and_use(sealed.data(), sealed.size());
  return 0;
}
