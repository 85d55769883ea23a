// Files of float32 rows [rows][cols] - activations going into a projection, outputs coming out -
// in one of two formats:
//   npy  NumPy's .npy (artifacts/npy.h): '<f4', shape (rows, cols), or (cols,) for one row.
//   f32  raw little-endian float32, row-major, nothing else: rows = bytes / (4 * cols).
// Which one: FileFormat::automatic picks npy for a name ending in ".npy" and f32 otherwise.
//
// Reading trusts nothing: the row length must be the caller's `cols` (a projection's K), a raw
// file's size must be a whole number of rows, a .npy file is parsed strictly (npy.h), and a file
// holding more than `max_rows` rows is refused before it is read whole. A raw file that starts
// with the .npy magic is refused (it was meant to be read as .npy).
//
// Errors: UNAVAILABLE the file cannot be opened/read/written (names the path and the system's
// reason); INVALID_ARGUMENT wrong row length, shape, dtype, or no rows; DATA_LOSS a truncated or
// over-long file. Writing is atomic (artifacts/atomic_file.h): a failed write leaves no file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include <twinbit/status.hpp>

namespace twinbit::artifact {

enum class FileFormat { automatic, npy, f32 };

// "auto", "npy", "f32" -> the format; anything else is INVALID_ARGUMENT.
Result<FileFormat> parse_file_format(const std::string& text);
// automatic resolved against `path`; npy and f32 are returned as given.
FileFormat resolve_file_format(FileFormat format, const std::string& path);
const char* file_format_name(FileFormat format);  // "auto", "npy", "f32"

struct FloatRows {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // [rows][cols], row-major
};

// Reads `path` as rows of `cols` floats (1 <= rows <= max_rows).
Result<FloatRows> read_float_rows(const std::string& path, FileFormat format, int64_t cols,
                                  int64_t max_rows);

// Writes values [rows][cols] to `path`: .npy with shape (rows, cols), or raw float32.
// The same, into an output opened (and checked) before the work; commits it.
Status write_float_rows(OutputFile& out, FileFormat format, int64_t rows, int64_t cols,
                        const float* values);
Status write_float_rows(const std::string& path, FileFormat format, int64_t rows, int64_t cols,
                        const float* values);

}  // namespace twinbit::artifact
