// The weight quantisers of one group of 32 values, and float -> binary16.
//
// They follow llama.cpp's reference quantisers (quantize_row_q8_0_ref, quantize_row_q4_0_ref)
// bit for bit, so a strip set packed from float weights holds the same codes and scales as a
// GGUF converted by llama.cpp (NUMERICS.md "Weight quantisation"):
//   q8_0: d = amax / 127, id = d ? 1/d : 0, code = roundf(x * id)          (ties away from 0)
//   q4_0: max = the value of largest magnitude (signed), d = max / -8, id = d ? 1/d : 0,
//         nibble = min(15, (int8)(x * id + 8.5f)), code = nibble - 8
// Where llama.cpp's int8 cast is undefined (x * id is inf or NaN: a nonzero block so small that
// 1/d overflows, or non-finite weights) the code is 0 / the nibble 0, as gguf-py writes them; so
// q8 codes are always within [-127, 127] (docs/FORMAT.md).
// Scales are stored as fp16 (round to nearest even).
// The precision table (core/precision.h) points at these; packers reach them through it.
#pragma once

#include <cstdint>

namespace twinbit {

// IEEE binary32 -> binary16, round to nearest even (overflow -> inf, NaN stays NaN).
uint16_t float_to_fp16(float f);

// One block of 32 values. q8: codes[32]. q4: qs[16] in GGUF order (byte j: low nibble k = j,
// high nibble k = j + 16, each code + 8).
void quantize_block_q8_0(const float* x, int8_t* codes, uint16_t* d);
void quantize_block_q4_0(const float* x, uint8_t* qs, uint16_t* d);

}  // namespace twinbit
