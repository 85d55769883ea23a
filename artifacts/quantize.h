// Weight quantisers and packing into the canonical strip layout.
//
// The block quantisers follow llama.cpp's reference quantisers (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref) bit for bit, so a strip set packed here from float weights holds the
// same codes and scales as a GGUF converted by llama.cpp (NUMERICS.md "Weight quantisation"):
//   q8_0: d = amax / 127, id = d ? 1/d : 0, code = roundf(x * id)          (ties away from 0)
//   q4_0: max = the value of largest magnitude (signed), d = max / -8, id = d ? 1/d : 0,
//         nibble = min(15, (int8)(x * id + 8.5f)), code = nibble - 8
// Where llama.cpp's int8 cast is undefined (x * id is inf or NaN: a nonzero block so small that
// 1/d overflows, or non-finite weights) the code is 0 / the nibble 0, as gguf-py writes them; so
// q8 codes are always within [-127, 127] (docs/FORMAT.md).
// Scales are stored as fp16 (round to nearest even).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/status.hpp"

namespace twinbit::quant {

// IEEE binary32 -> binary16, round to nearest even (overflow -> inf, NaN stays NaN).
uint16_t float_to_fp16(float f);

// One block of 32 values. q8: codes[32]. q4: qs[16] in GGUF order (byte j: low nibble k = j,
// high nibble k = j + 16, each code + 8).
void quantize_block_q8_0(const float* x, int8_t* codes, uint16_t* d);
void quantize_block_q4_0(const float* x, uint8_t* qs, uint16_t* d);

// A strip set that owns its bytes.
struct PackedStrips {
  tb_prec prec = TB_PREC_Q8;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  tb_strips view() const;  // valid while this object lives and is not modified
};

// Packs float weights W [n][k] (row = output column, the GGUF/PyTorch orientation) into the
// canonical layout: quantise each (column, group) block, then place it in its tile. K not a
// multiple of 32 is padded with zeros before quantising (as llama.cpp requires K % 32 == 0,
// those tails have no GGUF equivalent).
// Parallel over strips (oneTBB); the result does not depend on the thread count.
PackedStrips pack_strips(const float* w, int64_t n, int64_t k, tb_prec prec);

// The pieces of pack_strips, for packers that produce rows a block at a time instead of holding
// the whole float matrix (the synthetic model's lm_head):
// An all-padding strip set of the shape (codes 0, q4 nibbles 8, scales 0). The shape must be
// valid (1 <= n, k <= kMaxDim, prec known).
PackedStrips make_strips(tb_prec prec, int64_t n, int64_t k);
// Quantises output columns [n0, n0 + rows) of dst from float rows (row r at w + r * ldw, dst.k
// floats each). Calls for disjoint column sets may run concurrently on the same dst.
void pack_rows(PackedStrips& dst, int64_t n0, int64_t rows, const float* w, int64_t ldw);

// Re-tiles GGUF block rows without re-quantising: `blocks` holds n rows of k/32 blocks
// (q8_0: 2-byte fp16 d + 32 int8; q4_0: 2-byte d + 16 bytes qs). k must be a multiple of 32.
Result<PackedStrips> retile_gguf(std::span<const uint8_t> blocks, int64_t n, int64_t k,
                                 tb_prec prec);

// Concatenates strip sets of the same precision and K along N (fused QKV, gate+up). Each part's
// columns are re-tiled, so the fused set has the same codes and scales column for column.
Result<PackedStrips> concat_strips(std::span<const PackedStrips* const> parts);

}  // namespace twinbit::quant
