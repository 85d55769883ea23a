// Packing float weights and GGUF blocks into the canonical strip layout.
//
// The block quantisers themselves live with the precision table (core/block_quantizers.h:
// llama.cpp's reference quantisers bit for bit); packing reaches them through the table's row,
// and the strip layout through core/strip_layout.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <twinbit/backend.h>
#include "core/block_quantizers.h"
#include <twinbit/status.hpp>

namespace twinbit::quant {

// The block quantisers under their packing names (defined in core/block_quantizers.h).
using twinbit::float_to_fp16;
using twinbit::quantize_block_q4_0;
using twinbit::quantize_block_q8_0;

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
