// Source tensor rows -> float rows: the reference decoding of every SourceType twinbit converts.
//
// A tensor's rows are its innermost dimension (tensor_source.h: dims outermost first, a row is
// dims.back() consecutive elements); a tensor of more than two dims has the product of the outer
// dims as its row count. Block types decode a row block by block, so a row must be a whole
// number of blocks (GGUF guarantees it; a tensor that breaks it is refused).
//
// The arithmetic is the formats' own reference decoding (llama.cpp's dequantize_row_* and
// gguf-py's dequantize, which agree): in float32, each product and sum rounded on its own (no
// fused multiply-add: the build's numerics flags forbid contraction), so the values equal
// gguf-py's bit for bit (tests/import_gguf_dequantize.cpp checks every type against it):
//   f32 as is; f16 and bf16 widened exactly;
//   q8_0: d * q;  q4_0: d * (nibble - 8);  q5_0: d * (q5 - 16);
//   q4_1: d * nibble + m;  q5_1: d * q5 + m   (d, m: the block's fp16 scale and minimum);
//   q2_k: (d * sc) * q - (dmin * m)  per 16 values;  q3_k: (d * (sc - 32)) * q  (q in -4 .. 3);
//   q4_k, q5_k: (d * sc) * q - (dmin * m)  per 32 values (6-bit sc, m);
//   q6_k: (d * sc) * (q - 32)  per 16 values (int8 sc).
#pragma once

#include <cstdint>
#include <span>

#include "artifacts/import/tensor_source.h"
#include <twinbit/status.hpp>

namespace twinbit::import {

// Rows of `t`: the product of its dims but the innermost (1 for a vector).
int64_t source_rows(const SourceTensor& t);

// Decodes rows [row0, row0 + rows) of `t`, whose bytes are `bytes` (all of the tensor, e.g.
// TensorFile::bytes(t)), into out[rows][dims.back()]. INVALID_ARGUMENT when the type is `other`,
// the bytes are not t.bytes long, a row is not whole blocks, or the rows are out of range.
// Thread-safe; callers decode disjoint row ranges concurrently.
Status to_float_rows(const SourceTensor& t, std::span<const uint8_t> bytes, int64_t row0,
                     int64_t rows, float* out);

}  // namespace twinbit::import
