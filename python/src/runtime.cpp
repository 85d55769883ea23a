// twinbit.Runtime: the runtime (core/runtime/runtime.h) - one artifact, several backends, every
// gemm placed by overrides, a calibrated profile or the default plan, with the reference's bits.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "core/runtime/runtime.h"
#include "objects.h"

namespace twinbit::py {
namespace {

struct PyRuntime {
  std::unique_ptr<runtime::Runtime> rt;
};

void open(PyRuntime* self, const std::string& path, const std::vector<std::string>& backends,
          const std::optional<std::vector<std::string>>& overrides, const std::optional<std::string>& profile) {
  runtime::RuntimeOptions o;
  o.backends = backends;
  if (overrides) {
    for (size_t i = 0; i < overrides->size(); ++i) {
      o.overrides.push_back(take(runtime::parse_override_rule((*overrides)[i], "overrides[" + std::to_string(i) + "]")));
    }
  }
  if (profile) o.profile = take(runtime::read_profile(*profile));
  std::unique_ptr<runtime::Runtime> rt;
  {
    nb::gil_scoped_release release;  // creates the backends
    rt = take(runtime::Runtime::open(path, o));
  }
  new (self) PyRuntime{std::move(rt)};
}

const artifact::Entry& strip_entry(const PyRuntime& r, const std::string& name) {
  const artifact::Entry* e = r.rt->artifact().find(name);
  if (!e || e->kind != TB_WEIGHTS_STRIPS) {
    check(Error(TB_INVALID_ARGUMENT, "no strip entry '%s' in %s", name.c_str(), r.rt->artifact().path().c_str()));
  }
  return *e;
}

NumpyF32 gemm(PyRuntime& r, const std::string& entry, const AnyArray& x_in, const std::string& mode_name) {
  const tb_act_mode mode = parse_mode(mode_name);
  const artifact::Entry& e = strip_entry(r, entry);
  FloatRows x = float_rows(x_in, "x", e.k);
  float* y = nullptr;
  NumpyF32 out = new_f32(x.rows, e.n, x.one_d, &y);
  {
    nb::gil_scoped_release release;
    check(r.rt->gemm(entry, x.rows, mode, x.data, x.cols, y, e.n));
  }
  return out;
}

nb::dict describe(const PyRuntime& r, const std::string& entry, int64_t m, const std::string& mode_name) {
  runtime::Decision d = take(r.rt->decide(entry, m, parse_mode(mode_name)));
  nb::dict out;
  out["placement"] = runtime::placement_text(d.placement, r.rt->backend_labels());
  out["why"] = d.why;
  out["fallbacks"] = d.fallbacks;
  nb::list predicted;
  for (const auto& p : d.predicted_us) predicted.append(p ? nb::object(nb::float_(*p)) : nb::none());
  out["predicted_us"] = predicted;
  out["predicted_choice_us"] = d.predicted_choice_us ? nb::object(nb::float_(*d.predicted_choice_us)) : nb::none();
  return out;
}

nb::list report(const PyRuntime& r) {
  nb::list out;
  for (const auto& e : r.rt->report()) {
    nb::dict d;
    d["entry"] = e.entry;
    d["placement"] = e.placement;
    d["calls"] = e.calls;
    d["fallbacks"] = e.fallbacks;
    out.append(d);
  }
  return out;
}
}  // namespace

void init_runtime(nb::module_& m) {
  nb::class_<PyRuntime>(m, "Runtime", "An artifact run on several backends, each gemm placed by overrides, a "
                                      "profile or the default plan (docs/RUNTIME.md), with the reference's bits.")
      .def("__init__", &open, nb::arg("artifact_path"), nb::arg("backends") = std::vector<std::string>{"cpu"},
           nb::arg("overrides") = nb::none(), nb::arg("profile") = nb::none(),
           "backends: specs ('cpu', 'cuda:0', ...); overrides: 'PATTERN=TARGET' rules, first match wins; "
           "profile: the path of a `twinbit calibrate` profile.")
      .def_prop_ro("backends", [](const PyRuntime& r) { return r.rt->backend_labels(); })
      .def("gemm", &gemm, nb::arg("entry"), nb::arg("x"), nb::arg("mode") = "f32",
           "The entry's gemm of x (M, K) or (K,) float32, placed by the runtime; a new float32 array.")
      .def("describe", &describe, nb::arg("entry"), nb::arg("m"), nb::arg("mode") = "f32",
           "Where a gemm of m rows would run and why: placement, why, fallbacks, predicted_us, predicted_choice_us.")
      .def("report", &report, "Per strip entry: the latest placement, calls and fallbacks so far.");
}

}  // namespace twinbit::py
