// twinbit.Artifact (open, entries, verify, close) and packing: the block quantisers and a small
// artifact writer (float rows -> strips as `twinbit pack` packs them), for tests and examples.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "artifacts/quantize.h"
#include "core/precision.h"
#include "objects.h"

namespace twinbit::py {

const artifact::Artifact& PyArtifact::get() const {
  if (!art) check(Error(TB_FAILED_PRECONDITION, "artifact %s is closed", path.c_str()));
  return *art;
}

std::shared_ptr<const artifact::Artifact> PyArtifact::hold() const {
  get();
  return art;
}

const artifact::Entry& PyArtifact::entry(const std::string& name) const {
  const artifact::Artifact& a = get();
  if (const artifact::Entry* e = a.find(name)) return *e;
  std::string names;
  for (const auto& e : a.entries()) names += (names.empty() ? "" : ", ") + e.name;
  check(Error(TB_INVALID_ARGUMENT, "no entry '%s' in %s (entries: %s)", name.c_str(), path.c_str(), names.c_str()));
  throw std::logic_error("unreachable");
}

const char* kind_name(tb_weights_kind kind) { return kind == TB_WEIGHTS_STRIPS ? "strips" : "matrix_f32"; }
const char* prec_short_name(tb_prec prec) { return precision_traits(prec).name; }

namespace {
// One entry as Python sees it: a value, valid after the artifact is closed.
struct EntryInfo {
  std::string name, kind;
  nb::object precision;  // "q8" / "q4", None for a float matrix
  std::tuple<int64_t, int64_t> shape;  // strips: (N, K); float matrix: (rows, cols)
};

EntryInfo info_of(const artifact::Entry& e) {
  EntryInfo i;
  i.name = e.name;
  i.kind = kind_name(e.kind);
  i.precision = e.kind == TB_WEIGHTS_STRIPS ? nb::object(nb::str(prec_short_name(e.prec))) : nb::none();
  i.shape = {e.n, e.k};
  return i;
}

// quantize_q8_0 / q4_0: rows [n][k] (k % 32 == 0) -> n rows of k/32 GGUF blocks.
template <int kBlockBytes, bool kQ8>
NumpyU8 quantize_blocks(const AnyArray& rows_in) {
  FloatRows r = float_rows(rows_in, "rows");
  if (r.cols % 32 != 0) {
    throw nb::value_error(("rows must have a multiple of 32 columns (one block is 32 values), got " +
                           std::to_string(r.cols)).c_str());
  }
  const int64_t blocks = r.cols / 32;
  uint8_t* out = nullptr;
  NumpyU8 result = new_u8(r.rows, blocks * kBlockBytes, &out);
  nb::gil_scoped_release release;
  for (int64_t i = 0; i < r.rows * blocks; ++i) {
    uint8_t* blk = out + i * kBlockBytes;  // fp16 d, then the codes (GGUF block layout)
    uint16_t d = 0;
    if constexpr (kQ8) {
      quant::quantize_block_q8_0(r.data + i * 32, reinterpret_cast<int8_t*>(blk + 2), &d);
    } else {
      quant::quantize_block_q4_0(r.data + i * 32, blk + 2, &d);
    }
    std::memcpy(blk, &d, 2);
  }
  return result;
}

// Writes an artifact of float rows packed as `twinbit pack` packs them: entries are (name,
// "q8" | "q4" | "f32", rows [n][k]); "f32" stores a float matrix.
void write_artifact(const std::string& path, const std::vector<std::tuple<std::string, std::string, AnyArray>>& entries) {
  artifact::Writer w;
  for (const auto& [name, prec, rows_in] : entries) {
    FloatRows r = float_rows(rows_in, ("rows of " + name).c_str());
    if (prec == "f32") {
      check(w.add_matrix(name, r.rows, r.cols, {r.data, static_cast<size_t>(r.rows * r.cols)}));
      continue;
    }
    const PrecisionTraits* t = take(find_precision(prec));
    quant::PackedStrips p = quant::pack_strips(r.data, r.rows, r.cols, t->prec);
    check(w.adopt_strips(name, p.prec, p.n, p.k, std::move(p.codes), std::move(p.scales)));
  }
  check(w.write(path, artifact::Provenance{"python:write_artifact", "twinbit " TWINBIT_VERSION}));
}
}  // namespace

void init_artifact(nb::module_& m) {
  nb::class_<EntryInfo>(m, "Entry", "One entry of an artifact: name, kind, shape, precision.")
      .def_ro("name", &EntryInfo::name)
      .def_ro("kind", &EntryInfo::kind, "'strips' (quantised weights) or 'matrix_f32' (float rows)")
      .def_ro("precision", &EntryInfo::precision, "'q8' or 'q4' for strips, None for a float matrix")
      .def_ro("shape", &EntryInfo::shape, "strips: (N, K); a float matrix: (rows, cols)")
      .def("__repr__", [](const EntryInfo& e) {
        return "Entry('" + e.name + "', " + e.kind + ", shape=(" + std::to_string(std::get<0>(e.shape)) + ", " +
               std::to_string(std::get<1>(e.shape)) + ")" +
               (e.precision.is_none() ? std::string() : ", " + nb::cast<std::string>(e.precision)) + ")";
      });

  nb::class_<PyArtifact>(m, "Artifact", "A twinbit weight artifact (.tbsc), opened read-only.")
      .def("__init__", [](PyArtifact* self, const std::string& path, bool copy) {
        artifact::OpenOptions o;
        o.read = copy ? artifact::ReadMode::kCopy : artifact::ReadMode::kMap;
        auto opened = take(artifact::Artifact::open(path, o));
        new (self) PyArtifact{std::shared_ptr<artifact::Artifact>(std::move(opened)), path};
      }, nb::arg("path"), nb::arg("copy") = false,
      "Opens and validates the header and manifest; copy=True reads the whole file into memory.")
      .def_prop_ro("path", [](const PyArtifact& a) { return a.path; })
      .def_prop_ro("closed", [](const PyArtifact& a) { return !a.art; })
      .def_prop_ro("entries", [](const PyArtifact& a) {
        std::vector<EntryInfo> out;
        for (const auto& e : a.get().entries()) out.push_back(info_of(e));
        return out;
      })
      .def("entry", [](const PyArtifact& a, const std::string& name) { return info_of(a.entry(name)); },
           nb::arg("name"))
      .def("verify", [](const PyArtifact& a) {
        std::shared_ptr<const artifact::Artifact> art = a.hold();
        nb::gil_scoped_release release;
        for (const auto& e : art->entries()) check(art->verify(e));
      }, "Checks every payload's checksum and padding; raises TwinbitError (DATA_LOSS) on damage.")
      .def("close", [](PyArtifact& a) { a.art.reset(); },
           "Releases the file; bindings made from it keep working.")
      .def("__enter__", [](PyArtifact& a) -> PyArtifact& { return a; }, nb::rv_policy::reference)
      .def("__exit__", [](PyArtifact& a, nb::args) { a.art.reset(); })
      .def("__repr__", [](const PyArtifact& a) {
        return "Artifact('" + a.path + "'" + (a.art ? "" : ", closed") + ")";
      });

  m.def("quantize_q8_0", &quantize_blocks<34, true>, nb::arg("rows"),
        "Rows [n][k] of float32 (k % 32 == 0) -> uint8 [n][k/32*34]: GGUF q8_0 blocks (fp16 d, 32 int8), "
        "the quantiser `twinbit pack` uses.");
  m.def("quantize_q4_0", &quantize_blocks<18, false>, nb::arg("rows"),
        "Rows [n][k] of float32 (k % 32 == 0) -> uint8 [n][k/32*18]: GGUF q4_0 blocks (fp16 d, 16 bytes "
        "of nibbles), the quantiser `twinbit pack` uses.");
  m.def("write_artifact", &write_artifact, nb::arg("path"), nb::arg("entries"),
        "Writes an artifact from (name, 'q8' | 'q4' | 'f32', rows [n][k]) tuples, packed as `twinbit pack` packs "
        "float weights ('f32': a float matrix).");
}

}  // namespace twinbit::py
