// Packing into the canonical tiling: every offset comes from core/strip_layout.h, every
// precision-dependent step (padding byte, run size, quantiser) from the precision table.
#include "artifacts/quantize.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/numerics.h"
#include "core/op_checks.h"
#include "core/strip_layout.h"
#include "core/tsan_edges.h"

namespace twinbit::quant {

namespace {

using ll = long long;
using ull = unsigned long long;

Status check_shape(tb_prec prec, int64_t n, int64_t k) {
  TB_RETURN_IF_ERROR(check_precision(prec));
  if (n < 1 || n > kMaxDim || k < 1 || k > kMaxDim) {
    return Error(TB_INVALID_ARGUMENT, "shape N = %lld, K = %lld is out of range (expected 1 .. "
                 "%lld each)", (ll)n, (ll)k, (ll)kMaxDim);
  }
  return Status();
}

}  // namespace

tb_strips PackedStrips::view() const {
  return StripLayout{prec, n, k}.view(codes.data(), scales.data());
}

PackedStrips make_strips(tb_prec prec, int64_t n, int64_t k) {
  PackedStrips p;
  p.prec = prec;
  p.n = n;
  p.k = k;
  // q4 padding holds nibble 8 (code 0) in both halves of each byte.
  const StripLayout layout{prec, n, k};
  p.codes.assign(layout.codes_bytes(), layout.traits().padding_byte);
  p.scales.assign(layout.scales_bytes() / 2, 0);
  return p;
}

void pack_rows(PackedStrips& dst, int64_t n0, int64_t rows, const float* w, int64_t ldw) {
  const StripLayout layout{dst.prec, dst.n, dst.k};
  const int64_t ngroups = layout.groups();
  const auto quantize_group = layout.traits().quantize_group;
  float block[32];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = n0 + r;
    const float* row = w + r * ldw;
    for (int64_t g = 0; g < ngroups; ++g) {
      const int64_t k0 = g * 32, valid = dst.k - k0 < 32 ? dst.k - k0 : 32;
      std::memcpy(block, row + k0, static_cast<size_t>(valid) * sizeof(float));
      for (int64_t j = valid; j < 32; ++j) block[j] = 0.0f;  // K padding quantises as zeros
      quantize_group(block, dst.codes.data() + layout.code_offset(n, g),
                     &dst.scales[layout.scale_index(n, g)]);
    }
  }
}

PackedStrips pack_strips(const float* w, int64_t n, int64_t k, tb_prec prec) {
  PackedStrips p = make_strips(prec, n, k);
  const int64_t nstrips = pad32(n) / 32;
  // One strip (32 columns) per task: each writes its own tiles and scales, nothing shared.
  parallel_for_seen_by_tsan(tbb::blocked_range<int64_t>(0, nstrips), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t s = r.begin(); s < r.end(); ++s) {
      const int64_t n0 = s * 32, rows = n - n0 < 32 ? n - n0 : 32;
      pack_rows(p, n0, rows, w + n0 * k, k);
    }
  });
  return p;
}

Result<PackedStrips> retile_gguf(std::span<const uint8_t> blocks, int64_t n, int64_t k,
                                 tb_prec prec) {
  TB_RETURN_IF_ERROR(check_shape(prec, n, k));
  if (k % 32 != 0) {
    return Error(TB_INVALID_ARGUMENT, "GGUF rows hold whole blocks of 32: K = %lld is not a "
                 "multiple of 32", (ll)k);
  }
  const StripLayout layout{prec, n, k};
  const int64_t rb = layout.run_bytes(), block_bytes = 2 + rb, ngroups = k / 32;
  const uint64_t want = static_cast<uint64_t>(n) * static_cast<uint64_t>(ngroups) * block_bytes;
  if (blocks.size() != want) {
    return Error(TB_INVALID_ARGUMENT, "GGUF %s_0 tensor of %lld x %lld needs %llu bytes, got %zu",
                 prec_name(prec), (ll)n, (ll)k, (ull)want, blocks.size());
  }
  PackedStrips p = make_strips(prec, n, k);
  parallel_for_seen_by_tsan(tbb::blocked_range<int64_t>(0, n, 32), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      const uint8_t* src = blocks.data() + row * ngroups * block_bytes;
      for (int64_t g = 0; g < ngroups; ++g, src += block_bytes) {
        p.scales[layout.scale_index(row, g)] = static_cast<uint16_t>(src[0] | (src[1] << 8));
        std::memcpy(p.codes.data() + layout.code_offset(row, g), src + 2, rb);
      }
    }
  });
  return p;
}

Result<PackedStrips> concat_strips(std::span<const PackedStrips* const> parts) {
  if (parts.empty()) return Error(TB_INVALID_ARGUMENT, "concat_strips needs at least one part");
  std::vector<int64_t> first_col;  // fused column where each part starts
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const PackedStrips* q = parts[i];
    if (!q) return Error(TB_INVALID_ARGUMENT, "concat_strips: part %zu is null", i);
    TB_RETURN_IF_ERROR(check_strips(q->view()));
    if (q->prec != parts[0]->prec || q->k != parts[0]->k) {
      return Error(TB_INVALID_ARGUMENT, "concat_strips: part %zu is %s with K = %lld; part 0 is "
                   "%s with K = %lld (parts must share precision and K)", i, prec_name(q->prec),
                   (ll)q->k, prec_name(parts[0]->prec), (ll)parts[0]->k);
    }
    first_col.push_back(total);
    total += q->n;
    if (total > kMaxDim) {
      return Error(TB_INVALID_ARGUMENT, "concat_strips: fused N = %lld exceeds %lld", (ll)total,
                   (ll)kMaxDim);
    }
  }
  const tb_prec prec = parts[0]->prec;
  const int64_t k = parts[0]->k;
  PackedStrips out = make_strips(prec, total, k);
  // Column c of a part sits at the same (group, run) place of its own layout as column n of
  // the fused one: only the tile index differs, so both offsets come from layouts of equal K.
  const StripLayout layout{prec, total, k};
  const int64_t ngroups = layout.groups(), rb = layout.run_bytes();
  parallel_for_seen_by_tsan(tbb::blocked_range<int64_t>(0, total, 32), [&](const tbb::blocked_range<int64_t>& r) {
    size_t part = 0;
    for (int64_t n = r.begin(); n < r.end(); ++n) {
      while (part + 1 < parts.size() && first_col[part + 1] <= n) ++part;
      while (n < first_col[part]) --part;
      const PackedStrips& src = *parts[part];
      const int64_t c = n - first_col[part];
      for (int64_t g = 0; g < ngroups; ++g) {
        std::memcpy(out.codes.data() + layout.code_offset(n, g),
                    src.codes.data() + layout.code_offset(c, g), rb);
        out.scales[layout.scale_index(n, g)] = src.scales[layout.scale_index(c, g)];
      }
    }
  });
  return out;
}

}  // namespace twinbit::quant
