// The host C API's artifacts (part of twinbit/twinbit.h, which includes this header; its rules on
// errors, ownership and threads apply): open a .tbc file, verify its checksums, list its entries.
// C11; docs/C_API.md "Artifacts".
#ifndef TWINBIT_ARTIFACT_H
#define TWINBIT_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

#include <twinbit/backend.h>
#include <twinbit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

// An open artifact: its header and manifest, validated, and its file mapped read-only.
typedef struct tb_artifact tb_artifact;

// One manifest entry as a plain C struct. `name` belongs to the artifact handle and stays valid
// until tb_artifact_close. Fields that do not apply to the kind are 0.
typedef struct tb_entry_info {
  const char* name;      // unique in the file: "blk.0.attn_q", "lm_head"
  tb_weights_kind kind;  // TB_WEIGHTS_STRIPS: quantised strips (gemm); TB_WEIGHTS_F32: float rows (gemv)
  tb_prec prec;          // strips: TB_PREC_Q8 or TB_PREC_Q4 (0 for float rows)
  int64_t n, k;          // strips: N output columns, K inputs
  int64_t rows, cols;    // float rows: rows x cols (y[rows] = W x[cols])
  uint64_t bytes;        // the entry's payload bytes in the file
} tb_entry_info;

// Opens the artifact at `path` and validates its header and whole manifest against the file, as
// `twinbit info` does (payload checksums are checked by tb_artifact_verify, or by tb_bind for the
// entry it binds). On success *out is the handle, closed with tb_artifact_close; on failure *out
// is NULL. Errors: TB_INVALID_ARGUMENT (NULL argument, no such file, not a regular file),
// TB_UNAVAILABLE (cannot read it), TB_RESOURCE_EXHAUSTED (cannot map it), TB_DATA_LOSS (not a
// valid artifact: truncated, bad magic, a manifest out of bounds), each naming the path.
TWINBIT_API tb_code tb_artifact_open(const char* path, tb_artifact** out);

// Verifies every entry's payloads in full - the xxh64 checksums, the zero gaps, the strip padding -
// as `twinbit info --verify` does. TB_DATA_LOSS naming the first bad entry, payload and offset
// (also when the file changed size since it was opened). Reads the whole file: seconds for GBs.
TWINBIT_API tb_code tb_artifact_verify(const tb_artifact* art);

// The number of entries (*count), in manifest order.
TWINBIT_API tb_code tb_artifact_entry_count(const tb_artifact* art, size_t* count);

// Entry `index` (0 <= index < count) into *info. TB_INVALID_ARGUMENT naming the index and the count
// when it is out of range.
TWINBIT_API tb_code tb_artifact_entry(const tb_artifact* art, size_t index, tb_entry_info* info);

// The index of the entry called `name` (exact match) into *index. TB_INVALID_ARGUMENT "no entry
// 'NAME' in PATH" when there is none.
TWINBIT_API tb_code tb_artifact_find(const tb_artifact* art, const char* name, size_t* index);

// Closes the handle (NULL, or a handle that is not open, is ignored). Entries bound from it stay
// usable: each binding holds the file's mapping until tb_unbind.
TWINBIT_API void tb_artifact_close(tb_artifact* art);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TWINBIT_ARTIFACT_H
