// The strip-cache file format, version 1: the byte layout, field by field, with its constants.
//
// A file is: a fixed 64-byte HEADER, then the MANIFEST (a length-prefixed binary description of
// every entry), then the PAYLOADS, each starting at a multiple of 4096 bytes from the start of
// the file so that a mapped file can be handed to a CPU kernel, cudaHostRegister or a DMA engine
// in place. All integers are little-endian; signed integers are two's complement.
//
// HEADER (64 bytes, offsets from the start of the file)
//   off  size  field
//     0     8  magic            "TWINBIT\0" (54 57 49 4E 42 49 54 00)
//     8     4  u32 version      kFormatVersion (1). A reader refuses versions above its own.
//    12     4  u32 header_bytes kHeaderBytes (64)
//    16     8  u64 file_bytes   the size of the whole file; a truncated or extended file fails
//    24     8  u64 manifest_off kHeaderBytes: the manifest follows the header
//    32     8  u64 manifest_bytes  1 .. kMaxManifestBytes
//    40     4  u32 entry_count  0 .. kMaxEntries
//    44     4  u32 flags        0 (no flags defined in version 1; any set bit is refused)
//    48     8  u64 reserved     0
//    56     8  u64 checksum     XXH64(seed 0) of header bytes [0, 56) followed by the manifest
//                               bytes: every bit of the header and manifest is covered.
//
// MANIFEST (manifest_bytes bytes at manifest_off). Scalars are u32/u64/i64 as named; a `str` is
// a u32 byte length followed by that many bytes (no terminator). The manifest is read strictly
// sequentially and must be consumed exactly (trailing bytes are an error).
//   str  provenance.source_file   text: 0 .. kMaxTextBytes bytes (the TEXT rule below)
//   str  provenance.packer        text: 0 .. kMaxTextBytes bytes
//   entry_count times an ENTRY:
//     str  name                   1 .. kMaxNameBytes bytes of printable ASCII 0x21..0x7E
//                                 (no spaces); unique within the file
//     u32  kind                   tb_weights_kind: 0 = strips, 1 = f32 matrix
//     u32  prec                   strips: tb_prec (0 = q8, 1 = q4); f32 matrix: 0
//     i64  n                      strips: N outputs; matrix: rows.   1 .. kMaxDim
//     i64  k                      strips: K inputs;  matrix: cols.   1 .. kMaxDim
//     i64  np                     strips: 32*ceil(N/32); matrix: rows (stored for tools that
//     i64  kp                     strips: 32*ceil(K/32); matrix: cols  read the manifest alone;
//                                 the reader recomputes and compares them)
//     u32  range_count            0 .. kMaxRanges; must be 0 for a matrix
//     range_count times:  str name (entry-name rules, unique within the entry),
//                         i64 begin, i64 end    0 <= begin < end <= N, ascending, disjoint
//     u32  source_count           0 .. kMaxSources
//     source_count times: str source tensor name (text, 0 .. kMaxTextBytes)
//     u32  payload_count          strips: 2 (codes, scales); matrix: 1 (data)
//     payload_count times: u64 offset, u64 bytes, u64 xxh64 (XXH64, seed 0, of the payload)
//
// TEXT (artifacts/text_rule.h): UTF-8 as RFC 3629 defines it (shortest form, no surrogates, at
// most U+10FFFF) without control characters (U+0000..U+001F, U+007F, U+0080..U+009F). No
// normalisation is applied or required; no byte-order mark is stripped.
//
// PAYLOADS AND PADDING. Payloads follow the manifest in manifest order (entry by entry, codes
// before scales), each at the first multiple of kPayloadAlign at or after the end of what precedes
// it (the manifest, then the previous payload), so each GAP is 0 .. kPayloadAlign - 1 bytes. The
// file ends exactly at the end of the last payload (at the end of the manifest when there is
// none): there is no tail. Byte counts are exactly what the shape implies (core/op_checks.h):
// strip codes = strip_codes_bytes(prec, N, K), strip scales = strip_scales_bytes(N, K), matrix
// data = rows * cols * 4. Strip payloads hold the canonical layout of twinbit/backend.h (tb_strips);
// a matrix payload is row-major float32 [rows][cols]. Padding, all of which must hold zero:
//   - header `flags` and `reserved`: 0;
//   - every gap byte: 0x00 (gaps are not covered by any checksum, so this is their only check);
//   - strip padding (artifacts/strip_padding.h): padding columns (n >= N) and padding k (k >= K)
//     hold code 0 (q8 byte 0x00, q4 nibble 8) and padding columns hold scale 0x0000.
//
// WHAT THE READER ENFORCES. At open (header and manifest only; no payload or gap byte is read):
// file at least kHeaderBytes long; magic; version <= kFormatVersion (and >= 1); header_bytes,
// manifest_off, flags, reserved as above; file_bytes == the real size; manifest within the file
// and within kMaxManifestBytes; entry_count <= kMaxEntries; header checksum; then every manifest
// field against the bounds above, text fields against the text rule, the shapes against kMaxDim,
// payload sizes against the computed sizes, payload placement (aligned, inside the file, in
// manifest order at the next aligned offset: hence disjoint), no tail, fused ranges, name
// uniqueness. On demand, per entry (Artifact::verify, view_verified): the payload checksums, the
// gap before each payload, the strip padding - reading every byte of a multi-GB file at open
// would defeat mapping it. Any failure is TB_DATA_LOSS naming the field and the value
// found/expected.
#pragma once

#include <cstdint>
#include <string_view>

namespace twinbit::artifact {

inline constexpr char kMagic[8] = {'T', 'W', 'I', 'N', 'B', 'I', 'T', '\0'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kHeaderBytes = 64;
inline constexpr uint64_t kPayloadAlign = 4096;

// Header field offsets.
inline constexpr uint64_t kOffMagic = 0;
inline constexpr uint64_t kOffVersion = 8;
inline constexpr uint64_t kOffHeaderBytes = 12;
inline constexpr uint64_t kOffFileBytes = 16;
inline constexpr uint64_t kOffManifestOff = 24;
inline constexpr uint64_t kOffManifestBytes = 32;
inline constexpr uint64_t kOffEntryCount = 40;
inline constexpr uint64_t kOffFlags = 44;
inline constexpr uint64_t kOffReserved = 48;
inline constexpr uint64_t kOffChecksum = 56;

// Bounds: far above any real model (Qwen3-VL-2B has ~300 projections), small enough that a
// hostile count cannot make the reader allocate or loop without limit.
inline constexpr uint32_t kMaxEntries = 1u << 16;
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
inline constexpr uint32_t kMaxNameBytes = 255;
inline constexpr uint32_t kMaxTextBytes = 4096;
inline constexpr uint32_t kMaxRanges = 64;
inline constexpr uint32_t kMaxSources = 64;

// Payload slots.
inline constexpr uint32_t kStripCodes = 0;
inline constexpr uint32_t kStripScales = 1;
inline constexpr uint32_t kMatrixData = 0;

// The name rule (entry and fused-range names): 1 .. kMaxNameBytes bytes of printable ASCII
// without spaces, so a name can be printed in any error message or shell safely.
inline bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes) return false;
  for (unsigned char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace twinbit::artifact
