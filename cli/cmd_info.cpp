// `twinbit info`: what an artifact holds; with --verify, every payload checksum.
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/op_checks.h"

namespace twinbit::cli {
namespace {
struct InfoOptions {
  std::string path;
  bool verify = false;
  bool json = false;
  artifact::OpenOptions open;
};

std::string shape_of(const artifact::Entry& e) {
  return e.kind == TB_WEIGHTS_STRIPS ? Format("%lld x %lld", (long long)e.k, (long long)e.n)
                                     : Format("%lld x %lld", (long long)e.n, (long long)e.k);
}

int run_info(const InfoOptions& o) {
  auto opened = artifact::Artifact::open(o.path, o.open);
  if (!opened.ok()) return fail("info", opened.status());
  const artifact::Artifact& art = *opened.value();
  int bad = 0;
  nlohmann::json j;
  j["path"] = o.path;
  j["format_version"] = art.format_version();
  j["bytes"] = art.file_bytes();
  j["source"] = art.provenance().source_file;
  j["packer"] = art.provenance().packer;
  j["entries"] = nlohmann::json::array();
  if (!o.json) {
    std::printf("%s: strip cache format %u, %s, %zu entries\n", o.path.c_str(), art.format_version(),
                format_bytes(art.file_bytes()).c_str(), art.entries().size());
    std::printf("source: %s; packed by %s\n", art.provenance().source_file.c_str(),
                art.provenance().packer.c_str());
    std::printf("%-20s %-6s %-4s %-15s %10s  %s\n", "entry", "kind", "prec", "K x N / rows x cols",
                "bytes", o.verify ? "checksums" : "fused ranges");
  }
  for (const artifact::Entry& e : art.entries()) {
    uint64_t bytes = 0;
    for (const auto& p : e.payloads) bytes += p.bytes;
    std::string verdict;
    if (o.verify) {
      Status s = art.verify(e);
      verdict = s.ok() ? Format("%zu ok", e.payloads.size()) : "MISMATCH: " + s.message();
      if (!s.ok()) ++bad;
    }
    std::string ranges;
    for (const auto& r : e.ranges) {
      ranges += Format("%s%s [%lld, %lld)", ranges.empty() ? "" : ", ", r.name.c_str(),
                       (long long)r.begin, (long long)r.end);
    }
    const bool strips = e.kind == TB_WEIGHTS_STRIPS;
    nlohmann::json je = {{"name", e.name}, {"kind", strips ? "strips" : "f32"},
                         {"n", e.n}, {"k", e.k}, {"bytes", bytes}};
    if (strips) je["prec"] = prec_name(e.prec);
    je["payloads"] = nlohmann::json::array();
    for (const auto& p : e.payloads) {
      je["payloads"].push_back({{"offset", p.offset}, {"bytes", p.bytes}, {"xxh64", Format("%016llx", (unsigned long long)p.xxh64)}});
    }
    if (!e.ranges.empty()) {
      for (const auto& r : e.ranges) je["ranges"].push_back({{"name", r.name}, {"begin", r.begin}, {"end", r.end}});
    }
    if (o.verify) je["verified"] = verdict.rfind("MISMATCH", 0) != 0;
    j["entries"].push_back(je);
    if (!o.json) {
      std::printf("%-20s %-6s %-4s %-15s %10s  %s\n", e.name.c_str(), strips ? "strips" : "f32",
                  strips ? prec_name(e.prec) : "-", shape_of(e).c_str(), format_bytes(bytes).c_str(),
                  o.verify ? verdict.c_str() : ranges.c_str());
    }
  }
  if (o.json) {
    if (o.verify) j["all_verified"] = bad == 0;
    // The artifact's text fields are bytes as far as this reader knows: bytes that are not
    // UTF-8 become U+FFFD rather than an exception.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (o.verify) {
    std::printf("%s\n", bad == 0 ? "every checksum matches" : Format("%d entries FAILED verification", bad).c_str());
  }
  return bad == 0 ? kExitOk : kExitFailed;
}
}  // namespace

Command add_info(CLI::App& root) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* app = root.add_subcommand("info", "Describe a strip-cache artifact: entries, shapes, "
                                              "sizes, fused ranges, provenance.");
  app->footer("Examples:\n"
              "  twinbit info model.tbsc\n"
              "  twinbit info --verify --json model.tbsc    every checksum, as one JSON object\n");
  app->add_option("file", opt->path, "Artifact file")->required();
  app->add_flag("--verify", opt->verify, "Check every payload's xxh64 checksum (exit 1 on a mismatch)");
  app->add_flag("--json", opt->json, "Print one JSON object");
  add_read_option(app, opt->open);
  return Command{app, [opt] { return run_info(*opt); }};
}

}  // namespace twinbit::cli
