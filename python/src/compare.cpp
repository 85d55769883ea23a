// twinbit.compare: the porter's check - two float32 arrays compared bit for bit, as the
// conformance suite and `twinbit check` compare outputs (conformance/conformance.h compare_bits).
#include <nanobind/stl/string.h>

#include "conformance/conformance.h"
#include "objects.h"

namespace twinbit::py {
namespace {

nb::dict compare(const AnyArray& a_in, const AnyArray& b_in) {
  FloatRows a = float_rows(a_in, "a"), b = float_rows(b_in, "b");
  if (a.rows != b.rows || a.cols != b.cols || a.one_d != b.one_d) {
    throw nb::value_error(("a and b must have the same shape, got (" + std::to_string(a.rows) + ", " +
                           std::to_string(a.cols) + ") and (" + std::to_string(b.rows) + ", " +
                           std::to_string(b.cols) + ")").c_str());
  }
  conformance::Mismatch mm;
  {
    nb::gil_scoped_release release;
    mm = conformance::compare_bits(a.data, a.cols, b.data, b.cols, a.rows, a.cols, {}, "a");
  }
  nb::dict d;
  d["equal"] = mm.differing == 0;
  d["differing"] = mm.differing;
  d["total"] = mm.total;
  if (mm.differing == 0) {
    d["first_index"] = nb::none();
  } else if (a.one_d) {
    d["first_index"] = nb::make_tuple(mm.first_n);
  } else {
    d["first_index"] = nb::make_tuple(mm.first_m, mm.first_n);
  }
  d["max_ulp"] = mm.max_ulp;
  return d;
}
}  // namespace

void init_compare(nb::module_& m) {
  m.def("compare", &compare, nb::arg("a"), nb::arg("b"),
        "Compares two float32 arrays of one shape bit for bit: a dict with equal, differing (count), total, "
        "first_index (a tuple index of the first differing element, None when equal) and max_ulp (-0 and +0 "
        "are 1 ulp apart).");
}

}  // namespace twinbit::py
