#include "cli/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "artifacts/synthetic.h"

namespace twinbit::cli {

int fail(const char* command, const Status& status) {
  std::fprintf(stderr, "twinbit %s: %s\n", command, status.to_string().c_str());
  return 1;
}

namespace {
Status make_dirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return Error(TB_UNAVAILABLE, "cannot create folder %s: %s", partial.c_str(), std::strerror(errno));
    }
  }
  return Status();
}
}  // namespace

Result<std::string> cache_dir() {
  std::string dir;
  if (const char* c = std::getenv("TWINBIT_CACHE"); c && *c) {
    dir = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::string(x) + "/twinbit";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/twinbit";
  } else {
    return Error(TB_FAILED_PRECONDITION, "no cache folder: set TWINBIT_CACHE (HOME is not set)");
  }
  TB_RETURN_IF_ERROR(make_dirs(dir));
  return dir;
}

void add_read_option(CLI::App* app, artifact::OpenOptions& out) {
  // `out` lives in the command's options, which outlive parsing.
  app->add_option_function<std::string>(
         "--read",
         [&out](const std::string& v) {
           out.read = v == "copy" ? artifact::ReadMode::kCopy : artifact::ReadMode::kMap;
         },
         "How to read the artifact: map (default; pages are read when used) or copy (the whole "
         "file into memory at open, so a file truncated or rewritten meanwhile cannot crash or "
         "change the run; see docs/FORMAT.md)")
      ->check(CLI::IsMember({"map", "copy"}))
      ->option_text("map|copy");
}

Result<std::unique_ptr<artifact::Artifact>> open_or_make_synthetic(
    const std::string& dir, uint64_t seed, bool with_lm_head, const artifact::OpenOptions& open) {
  TB_RETURN_IF_ERROR(make_dirs(dir));  // --cache may name a folder that does not exist yet
  const std::string path = dir + "/synthetic-qwen3vl2b-seed" + std::to_string(seed) +
                           (with_lm_head ? "" : "-small") + ".tbsc";
  if (access(path.c_str(), F_OK) == 0) {
    auto opened = artifact::Artifact::open(path, open);
    if (opened.ok()) return opened;
    std::fprintf(stderr, "twinbit: cached artifact %s is unusable (%s); generating it again\n",
                 path.c_str(), opened.status().to_string().c_str());
  }
  synthetic::Options opt;
  opt.seed = seed;
  opt.include_lm_head = with_lm_head;
  opt.progress = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  std::fprintf(stderr, "twinbit: generating the synthetic Qwen3-VL-2B projection set (seed %llu) "
               "into %s\n", static_cast<unsigned long long>(seed), path.c_str());
  const double t0 = now_us();
  TB_RETURN_IF_ERROR(synthetic::write_model(path, opt));
  std::fprintf(stderr, "twinbit: generated in %s\n", format_time_us(now_us() - t0).c_str());
  return artifact::Artifact::open(path, open);
}

std::vector<float> make_activations(uint64_t seed, const std::string& entry, int64_t m, int64_t k) {
  uint64_t h = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(m);
  for (char c : entry) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  std::vector<float> x(static_cast<size_t>(m * k));
  synthetic::fill_uniform(x.data(), m * k, h, 1.0f);
  return x;
}

std::string format_time_us(double us) {
  if (us < 1000) return Format("%.1f us", us);
  if (us < 1e6) return Format("%.2f ms", us / 1e3);
  return Format("%.2f s", us / 1e6);
}

std::string format_bytes(uint64_t bytes) {
  if (bytes < 10000) return Format("%llu B", static_cast<unsigned long long>(bytes));
  if (bytes < 10000000) return Format("%.1f KB", static_cast<double>(bytes) / 1e3);
  if (bytes < 10000000000ull) return Format("%.1f MB", static_cast<double>(bytes) / 1e6);
  return Format("%.2f GB", static_cast<double>(bytes) / 1e9);
}

}  // namespace twinbit::cli
