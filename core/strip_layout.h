// The canonical strip layout (twinbit/backend.h, docs/FORMAT.md) as one accessor: sizes, where a
// column's group of codes and its scale live, and the tb_strips view of a payload. Packers,
// readers, backends' bind code and tests go through it, so the layout is written down once.
//
// A tb_strips is built here and nowhere else: view() for a whole projection, columns() for a
// range of its columns (a share for one backend or one device; twinbit/backend.h n_total/n_begin).
#pragma once

#include <cstdint>

#include <twinbit/backend.h>
#include "core/numerics.h"
#include "core/precision.h"
#include <twinbit/status.hpp>

namespace twinbit {

struct StripLayout {
  tb_prec prec = TB_PREC_Q8;
  int64_t n = 0, k = 0;  // logical sizes

  static StripLayout of(const tb_strips& w) { return StripLayout{w.prec, w.n, w.k}; }

  const PrecisionTraits& traits() const { return precision_traits(prec); }
  int64_t np() const { return pad32(n); }
  int64_t kp() const { return pad32(k); }
  int64_t strips() const { return np() / 32; }   // strips of 32 columns
  int64_t groups() const { return kp() / 32; }   // groups of 32 k per column
  // One (strip, group) tile of codes: 32 columns, each a run of group_code_bytes.
  int64_t run_bytes() const { return traits().group_code_bytes; }
  int64_t tile_code_bytes() const { return 32 * run_bytes(); }
  uint64_t codes_bytes() const {
    return static_cast<uint64_t>(strips()) * static_cast<uint64_t>(groups()) *
           static_cast<uint64_t>(tile_code_bytes());
  }
  uint64_t scales_bytes() const {
    return static_cast<uint64_t>(np()) * static_cast<uint64_t>(groups()) * sizeof(uint16_t);
  }
  // Codes of one strip (all its groups) and scales of one strip.
  int64_t strip_code_bytes() const { return groups() * tile_code_bytes(); }
  int64_t strip_scales() const { return groups() * 32; }

  // Byte offset of column col's run of codes for group g: tile (col / 32, g), run col % 32.
  int64_t code_offset(int64_t col, int64_t g) const {
    return ((col / 32) * groups() + g) * tile_code_bytes() + (col % 32) * run_bytes();
  }
  // Index (in halves) of the scale of column col, group g.
  int64_t scale_index(int64_t col, int64_t g) const {
    return ((col / 32) * groups() + g) * 32 + col % 32;
  }

  // Code w[col][kk] of a payload in this layout, and writing it.
  int code(const void* codes, int64_t col, int64_t kk) const {
    const auto* run = static_cast<const uint8_t*>(codes) + code_offset(col, kk / 32);
    return traits().load_code(run, static_cast<int>(kk % 32));
  }
  void set_code(void* codes, int64_t col, int64_t kk, int code) const {
    auto* run = static_cast<uint8_t*>(codes) + code_offset(col, kk / 32);
    traits().store_code(run, static_cast<int>(kk % 32), code);
  }

  // The view of a whole projection whose payloads are `codes` (codes_bytes()) and `scales`
  // (scales_bytes() / 2 halves).
  tb_strips view(const void* codes, const uint16_t* scales) const {
    tb_strips s{};
    s.prec = prec;
    s.n = n;
    s.k = k;
    s.np = np();
    s.kp = kp();
    s.codes = codes;
    s.codes_bytes = codes_bytes();
    s.scales = scales;
    s.scales_bytes = scales_bytes();
    s.n_total = n;
    s.n_begin = 0;
    return s;
  }

  // Columns [begin, begin + count) of the view `w` (itself a projection or a range of one): the
  // payload pointers advance by whole strips, n = count (ragged only where the range ends at the
  // end of w), n_total is kept and n_begin = w.n_begin + begin. begin must be a multiple of 32;
  // anything else is INVALID_ARGUMENT naming the range. The result lives as long as w's payloads.
  static Result<tb_strips> columns(const tb_strips& w, int64_t begin, int64_t count);
};

}  // namespace twinbit
