#include "core/strip_layout.h"

#include "core/op_checks.h"

namespace twinbit {

Result<tb_strips> StripLayout::columns(const tb_strips& w, int64_t begin, int64_t count) {
  TB_RETURN_IF_ERROR(check_strips(w));
  if (begin < 0 || begin % 32 != 0 || count < 1 || count > w.n - begin) {
    return Error(TB_INVALID_ARGUMENT, "column range [%lld, %lld) of a view of N = %lld columns "
                 "(expected 0 <= begin < end <= N, begin a multiple of 32: ranges start at a strip)",
                 static_cast<long long>(begin), static_cast<long long>(begin + count),
                 static_cast<long long>(w.n));
  }
  const StripLayout whole = of(w);
  const int64_t first_strip = begin / 32;
  tb_strips s = StripLayout{w.prec, count, w.k}.view(
      static_cast<const uint8_t*>(w.codes) + first_strip * whole.strip_code_bytes(),
      w.scales + first_strip * whole.strip_scales());
  s.n_total = w.n_total;
  s.n_begin = w.n_begin + begin;
  return s;
}

}  // namespace twinbit
