// Writes a small valid artifact as the fuzzer's seed input: every entry kind, a fused range,
// multi-byte UTF-8 text (2-, 3- and 4-byte sequences for the text rule to be mutated around),
// and strip padding of every kind (padding columns, q8 padding k, q4 padding k in low and high
// nibbles) for the padding rule:
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
  const auto q4k = quant::pack_strips(w.data(), 3, 40, TB_PREC_Q4);  // K % 32 = 8
  artifact::Writer wr;
  Status s = wr.add_strips("qkv", TB_PREC_Q8, 40, 40, q8.codes, q8.scales, {{"q", 0, 20}, {"k", 20, 40}},
                     {"a", "blk.0.é.日本.\xf0\x9f\x98\x80"});
  if (s.ok()) s = wr.add_strips("down", TB_PREC_Q4, 33, 32, q4.codes, q4.scales);
  if (s.ok()) s = wr.add_strips("down_k40", TB_PREC_Q4, 3, 40, q4k.codes, q4k.scales);
  if (s.ok()) s = wr.add_matrix("m", 2, 3, std::vector<float>(6, 1.5f));
  if (s.ok()) s = wr.write(argv[1], {"/data/modèle-€.gguf", "twinbit fuzz"});
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return s.ok() ? 0 : 1;
}
