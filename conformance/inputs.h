// Inputs of the conformance cases, drawn from a seed: quantised weights over the full code range
// with awkward fp16 scales, and float vectors that include signed zeros and subnormals.
//
// Deterministic: the same (seed, case name) always gives the same bytes, on every machine
// (integer generator only; floats are built from bits, never from libm calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <twinbit/backend.h>

namespace twinbit::conformance {

// splitmix64: small, fast, and fully specified (no dependence on the standard library's engines).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  // Uniform in [lo, hi] (inclusive); hi - lo < 2^32.
  int64_t range(int64_t lo, int64_t hi);
  bool chance(int per_mille);  // true with probability per_mille / 1000

 private:
  uint64_t s_;
};

// The seed of one case: a hash of the suite seed and the case name.
uint64_t case_seed(uint64_t suite_seed, const std::string& case_name);

// A strip set in the canonical layout (twinbit/backend.h) that owns its payloads.
struct OwnedStrips {
  tb_prec prec = TB_PREC_Q8;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  tb_strips view() const;
};

// Random codes over the whole range (q8 -128..127, q4 -8..7) for every real (n, k); padding
// columns and padding k hold code 0 and padding columns scale 0, as the format requires. Scales
// are a mix of normal halves of both signs over a wide exponent range, subnormal halves and a
// few zeros.
OwnedStrips random_strips(Rng& rng, tb_prec prec, int64_t n, int64_t k);

// `count` floats: mostly normal values of both signs across several binades, with +0, -0 and
// subnormals sprinkled in. Never all zero. `scale_log2` shifts the magnitudes.
std::vector<float> random_floats(Rng& rng, int64_t count, int scale_log2 = 0);

// rows x cols floats (row-major) at the bottom of the range, for the subnormal input profile
// (InputProfile): about a third subnormal, spread over every binade below 2^-126, the rest normal
// up to a ceiling drawn per row between 2^-125 and 2^-103, a few +0 and -0; about one row in four
// entirely subnormal or zero. Products with weights and partial sums then fall below 2^-126, so
// a computation that flushes subnormals (FTZ/DAZ) loses terms or gives zero where the exact one
// does not. Never all zero.
std::vector<float> subnormal_floats(Rng& rng, int64_t rows, int64_t cols);

// Rewrites some activation groups of x [m][ldx] (k values per row) so that their largest
// magnitude makes the I8 scale d = amax / 127 subnormal or zero: about one row in four entirely
// (its outputs then depend on nothing else), and about one group in sixteen of the other rows.
// The maxima include the edges of the range where rint(amax / d) exceeds 127 and the quantiser
// saturates (NUMERICS.md "gemm, activation mode I8"): 63, 64, 127, 128, 190, 191 and 16065 units
// of 2^-149, and d's return to normal at 127 * 2^-126; values include exact ties x / d = j + 1/2.
void tiny_activation_groups(Rng& rng, std::vector<float>& x, int64_t m, int64_t k, int64_t ldx);

// A gdn gate g: negative log-decays in (-8, 0.5), so exp(g) spans (0, 1.65).
std::vector<float> random_gates(Rng& rng, int64_t count);
// beta in [0, 1].
std::vector<float> random_unit(Rng& rng, int64_t count);

}  // namespace twinbit::conformance
