// Writes a small valid artifact (every entry kind, a fused range) as the fuzzer's seed input:
//   make_seed <path>
#include <cstdio>
#include <random>
#include <vector>

#include "artifacts/artifact.h"
#include "artifacts/quantize.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  using namespace twinbit;
  std::mt19937_64 g(1);
  std::vector<float> w(40 * 40);
  for (float& v : w) v = static_cast<float>(static_cast<int32_t>(g() >> 40) - (1 << 23)) * 0x1p-26f;
  const auto q8 = quant::pack_strips(w.data(), 40, 40, TB_PREC_Q8);
  const auto q4 = quant::pack_strips(w.data(), 33, 32, TB_PREC_Q4);
  artifact::Writer wr;
  Status s = wr.add_strips("qkv", TB_PREC_Q8, 40, 40, q8.codes, q8.scales, {{"q", 0, 20}, {"k", 20, 40}}, {"a", "b"});
  if (s.ok()) s = wr.add_strips("down", TB_PREC_Q4, 33, 32, q4.codes, q4.scales);
  if (s.ok()) s = wr.add_matrix("m", 2, 3, std::vector<float>(6, 1.5f));
  if (s.ok()) s = wr.write(argv[1], {"seed", "twinbit fuzz"});
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return s.ok() ? 0 : 1;
}
