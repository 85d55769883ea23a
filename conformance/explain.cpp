// explain_case / dump_case (explain.h): the op-independent parts. The ops' own searches live with
// their prepared cases (prepared_gemm.cpp, prepared_quantize.cpp).
#include "conformance/explain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "conformance/prepared.h"
#include "core/op_checks.h"

namespace twinbit::conformance {

namespace detail {
Explanation PreparedCase::explain(const Backend&) const {
  Explanation e;
  e.checked = checked_;
  e.not_explained = "only gemm and quantize_i8 cases are explained: this op has no deviation modelled";
  return e;
}
}  // namespace detail

std::string Explanation::reproduced_by() const {
  std::string s;
  for (const DeviationTrial& t : trials) {
    if (t.reproduces) s += (s.empty() ? "" : ", ") + t.deviation.name();
  }
  return s;
}

Explanation explain_case(const Backend& backend, const Case& c, uint64_t seed, double budget) {
  std::unique_ptr<detail::PreparedCase> p = detail::prepare(c, seed, budget);
  Explanation e = p->explain(backend);
  e.case_name = c.name();
  return e;
}

std::string format_explanation(const Explanation& e) {
  std::string s = Format("explain %s (%s)\n", e.case_name.c_str(), e.checked.c_str());
  if (!e.not_explained.empty()) return s + "  not explained: " + e.not_explained + "\n";
  const Mismatch& m = e.backend;
  s += Format("  backend vs reference: %lld/%lld differ, first %s[%lld][%lld], max %llu ulp\n",
              (long long)m.differing, (long long)m.total, m.first_output.c_str(),
              (long long)m.first_m, (long long)m.first_n, (unsigned long long)m.max_ulp);
  for (const DeviationTrial& t : e.trials) {
    s += Format("  %-16s %s: %s\n", t.deviation.name().c_str(),
                t.reproduces ? "REPRODUCES the backend's bits" : ("no, other bits at " + t.first_miss).c_str(),
                t.deviation.detail().c_str());
  }
  const std::string by = e.reproduced_by();
  s += by.empty() ? "  reproduced by: none of the usual deviations (look for an indexing, race or "
                    "input-handling bug)\n"
                  : "  reproduced by: " + by + "\n";
  // Two deviations can coincide on a case: with one group per slice, a split plan's fold rounds
  // each product before adding it, exactly as an unfused multiply-add does.
  if (by.find(',') != std::string::npos) {
    s += "  (these give the same bits on this case; explain a larger-K case to tell them apart)\n";
  }
  return s;
}

namespace {

// NumPy's .npy format, version 1.0: magic, version, header length, a dict padded to 64 bytes.
std::string npy_header(const std::string& dtype, const std::vector<int64_t>& shape) {
  std::string tuple = "(";
  for (size_t i = 0; i < shape.size(); ++i) tuple += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  tuple += ")";
  std::string dict = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': " + tuple + ", }";
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string h("\x93NUMPY\x01\x00", 8);
  h += static_cast<char>(dict.size() & 0xff);
  h += static_cast<char>(dict.size() >> 8);
  return h + dict;
}

Status write_file(const std::string& path, const std::string& head, const std::vector<uint8_t>& body) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Error(TB_INVALID_ARGUMENT, "cannot create %s: %s", tmp.c_str(), std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size() &&
            (body.empty() || std::fwrite(body.data(), 1, body.size(), f) == body.size());
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Error(TB_INTERNAL, "cannot write %s: %s", path.c_str(), std::strerror(err));
  }
  return Status();
}

}  // namespace

Status dump_case(const Case& c, uint64_t seed, double budget, const std::string& dir) {
  std::unique_ptr<detail::PreparedCase> p = detail::prepare(c, seed, budget);
  const std::vector<DumpArray> arrays = p->arrays();
  if (arrays.empty()) {
    return Error(TB_UNIMPLEMENTED, "case %s: only gemm and quantize_i8 cases can be dumped",
                 c.name().c_str());
  }
  struct stat st{};
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Error(TB_INVALID_ARGUMENT, "--dump: %s is not a directory", dir.c_str());
  } else if (mkdir(dir.c_str(), 0777) != 0) {
    return Error(TB_INVALID_ARGUMENT, "--dump: cannot create the directory %s: %s", dir.c_str(),
                 std::strerror(errno));
  }
  // Checked before anything is written: a dump never replaces a file (an earlier dump included).
  std::vector<std::string> names = {"case.json"};
  for (const DumpArray& a : arrays) names.push_back(a.name + ".npy");
  for (const std::string& name : names) {
    if (stat((dir + "/" + name).c_str(), &st) == 0) {
      return Error(TB_INVALID_ARGUMENT, "--dump: %s/%s already exists; give a new or empty directory",
                   dir.c_str(), name.c_str());
    }
  }
  nlohmann::json j;
  j["case"] = c.name();
  j["seed"] = seed;
  j["checked"] = p->checked();
  j["m"] = c.m;
  j["n"] = c.n;
  j["k"] = c.k;
  if (c.kind == CaseKind::gemm || c.kind == CaseKind::batch_invariance) {
    j["prec"] = prec_name(c.prec);
    j["mode"] = act_mode_name(c.mode);
  }
  const std::string extra = p->dump_params();
  if (!extra.empty()) j.update(nlohmann::json::parse(extra));
  nlohmann::json files = nlohmann::json::object();
  for (const DumpArray& a : arrays) {
    TB_RETURN_IF_ERROR(write_file(dir + "/" + a.name + ".npy", npy_header(a.dtype, a.shape), a.bytes));
    files[a.name + ".npy"] = {{"dtype", a.dtype}, {"shape", a.shape}, {"holds", a.what}};
  }
  j["files"] = files;
  const std::string text = j.dump(2) + "\n";
  return write_file(dir + "/case.json", text, {});
}

}  // namespace twinbit::conformance
