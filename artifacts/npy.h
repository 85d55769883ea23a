// The .npy array format (NumPy's np.save / np.load), for little-endian float32 arrays only: how
// `twinbit run` takes activations captured from an engine and hands its outputs back.
//
// THE FORMAT, field by field (all integers little-endian):
//   offset  size  field
//   0       6     magic "\x93NUMPY"                                     kNpyMagic
//   6       1     major version: 1, 2 or 3
//   7       1     minor version: 0
//   8       2     HLEN, the header's length: uint16 (version 1)
//           4     HLEN: uint32 (versions 2 and 3); the header then starts at 12
//   10      HLEN  header: a Python dict literal, padded with spaces, ending in '\n':
//                   {'descr': '<f4', 'fortran_order': False, 'shape': (32, 2048), }
//   10+HLEN ...   payload: prod(shape) float32 values in C (row-major) order
//
// WHAT IS ACCEPTED. Nothing in the bytes is trusted. The dict must hold exactly the keys 'descr',
// 'fortran_order' and 'shape', each once, in any order, with Python literal syntax ('...' or
// "..." strings without escapes, True/False, a tuple of decimal integers; a one-element tuple
// needs its comma, "(5,)"). 'descr' must be '<f4' (float32 little-endian: other dtypes are
// refused naming what was found, never converted); 'fortran_order' must be False; the shape has
// at most kNpyMaxDims dimensions of at most kMaxDim each; the payload must be exactly
// prod(shape) * 4 bytes.
//
// ERRORS (status values, messages naming the source, what was found and what was expected):
//   INVALID_ARGUMENT  not a .npy (magic), a version other than 1.0/2.0/3.0, a dtype other than
//                     '<f4', Fortran order, a malformed or incomplete dict, a shape too large.
//   DATA_LOSS         the bytes end inside the preamble, the header or the payload, or more
//                     bytes follow the payload than the shape accounts for.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit::npy {

inline constexpr char kNpyMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
inline constexpr size_t kNpyMaxDims = 32;

struct Array {
  std::vector<int64_t> shape;         // () for a scalar, (K,), (M, K), ...
  std::span<const uint8_t> payload;   // the float32 values: points INTO the parsed bytes, so it
                                      // is valid only as long as they are; not aligned to 4
  int64_t count() const;              // prod(shape)
};

// Parses a whole .npy file held in `bytes`. `source` names it in error messages (a path).
Result<Array> parse(std::span<const uint8_t> bytes, const std::string& source);

// The preamble and header (version 1.0; 2.0 only if the header would not fit in 65535 bytes)
// for a float32 C-order array of `shape`, padded so that the payload starts at a multiple of 64
// bytes, as NumPy writes it. The payload follows it directly.
std::string header(const std::vector<int64_t>& shape);

// "(32, 2048)", "(2048,)", "()": the shape as Python writes a tuple.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace twinbit::npy
