// twinbit.backends() and twinbit.Backend: creating a backend from a spec and binding entries.
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "core/registry.h"
#include "objects.h"

namespace twinbit::py {
namespace {

// "plugin:PATH" names a plugin by path whatever the path looks like; anything else is a backend
// spec (core/backend_spec.h: "cpu", "cpu,threads=8", "cuda:0", "./libmine.so").
PyBackend create(const std::string& spec) {
  const std::string prefix = "plugin:";
  Result<Backend> b = spec.rfind(prefix, 0) == 0 ? load_plugin(spec.substr(prefix.size())) : create_backend(spec);
  return PyBackend{std::make_shared<Backend>(take(std::move(b))), spec};
}

nb::list backends() {
  std::vector<BackendListing> listing;
  {
    nb::gil_scoped_release release;  // creates each device once (a GPU context takes a while)
    listing = list_backends();
  }
  nb::list out;
  for (const auto& b : listing) {
    nb::list devices;
    for (const auto& d : b.devices) {
      nb::dict dd;
      dd["index"] = d.index;
      dd["name"] = d.name;
      dd["available"] = d.available;
      dd["why_not"] = d.why_not;
      dd["description"] = d.description;
      dd["features"] = d.features;
      devices.append(dd);
    }
    nb::dict bd;
    bd["name"] = b.name;
    bd["available"] = b.available;
    bd["why_not"] = b.why_not;
    bd["devices"] = devices;
    out.append(bd);
  }
  return out;
}

// `entry`: a name, or an Entry of artifact.entries (anything with a .name).
std::unique_ptr<PyBound> bind(const PyBackend& b, const PyArtifact& a, nb::handle entry) {
  const std::string name = nb::isinstance<nb::str>(entry) ? nb::cast<std::string>(entry)
                                                          : nb::cast<std::string>(entry.attr("name"));
  const artifact::Entry& e = a.entry(name);
  artifact::Weights w;
  BoundWeights bound;
  {
    std::shared_ptr<const artifact::Artifact> art = a.hold();
    nb::gil_scoped_release release;  // verifies the entry and may upload it to a device
    w = take(art->weights(e));
    bound = take(b.backend->bind(w.view, w.keep_alive));
  }
  return std::unique_ptr<PyBound>(new PyBound{b.backend, e, std::move(bound)});
}
}  // namespace

void init_backend(nb::module_& m) {
  m.def("backends", &backends,
        "The registered backends and their devices: a list of dicts (name, available, why_not, devices: "
        "[{index, name, available, why_not, description, features}]).");

  nb::class_<PyBackend>(m, "Backend", "A backend created from a spec: 'cpu', 'cuda:0', 'cpu,threads=8', "
                                      "'plugin:PATH' or a plugin's path.")
      .def("__init__", [](PyBackend* self, const std::string& spec) { new (self) PyBackend(create(spec)); },
           nb::arg("spec") = "cpu")
      .def_prop_ro("spec", [](const PyBackend& b) { return b.spec; })
      .def_prop_ro("name", [](const PyBackend& b) { return b.backend->name(); })
      .def_prop_ro("device", [](const PyBackend& b) { return b.backend->device(); })
      .def_prop_ro("features", [](const PyBackend& b) { return b.backend->features(); })
      .def("bind", &bind, nb::arg("artifact"), nb::arg("entry"),
           "Binds an entry (a name or an Entry) of the artifact; the Bound keeps the artifact's memory and this "
           "backend alive.")
      .def("gdn_delta", [](const PyBackend& b, const AnyArray& state, const AnyArray& q, const AnyArray& k,
                           const AnyArray& v, const AnyArray& g, const AnyArray& beta) {
             return gdn_delta(b.backend.get(), state, q, k, v, g, beta);
           }, nb::arg("state"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g"), nb::arg("beta"),
           "One gated-delta step: state (vh, kd, vd), q and k (kh, kd), v (vh, vd), g and beta (vh,) -> "
           "(new state, o (vh, vd)). The inputs are not modified.")
      .def("__repr__", [](const PyBackend& b) {
        return "Backend('" + b.spec + "': " + b.backend->name() + ", " + b.backend->device() + ")";
      });
}

}  // namespace twinbit::py
