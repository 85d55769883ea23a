#include "cli/cli_common.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "artifacts/synthetic.h"
#include "core/numerics.h"
#include "core/rows.h"

namespace twinbit::cli {

int fail(const char* command, const Status& status) {
  std::fprintf(stderr, "twinbit %s: %s\n", command, status.to_string().c_str());
  return kExitFailed;
}

int usage_error(const char* command, const Status& status) {
  std::fprintf(stderr, "twinbit %s: %s\n", command, status.to_string().c_str());
  return kExitUsage;
}

int fail_backend(const char* command, const Status& status) {
  if (status.code() != TB_UNAVAILABLE) return fail(command, status);
  std::fprintf(stderr, "twinbit %s: SKIPPED: %s\n", command, status.to_string().c_str());
  return kExitCannotRun;
}

namespace {
// One M from text: a whole decimal integer (no sign games, no overflow), then check_rows.
Result<int64_t> parse_rows(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    return Error(TB_INVALID_ARGUMENT, "M = '%s' is not a row count (expected an integer %lld .. %lld)",
                 text.c_str(), (long long)kMinRows, (long long)kMaxRows);
  }
  TB_RETURN_IF_ERROR(check_rows(v, "M"));
  return static_cast<int64_t>(v);
}
}  // namespace

CLI::Validator rows_check() {
  return CLI::Validator(
      [](std::string& text) {
        auto m = parse_rows(text);
        return m.ok() ? std::string() : m.status().message();
      },
      Format("%lld..%lld", (long long)kMinRows, (long long)kMaxRows), "ROWS");
}

Result<std::vector<int64_t>> parse_rows_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto m = parse_rows(item);
    if (!m.ok()) return m.status();
    out.push_back(m.value());
  }
  if (out.empty()) return Error(TB_INVALID_ARGUMENT, "the list of M is empty (expected e.g. 1,32)");
  return out;
}

CLI::Validator rows_list_check() {
  return CLI::Validator(
      [](std::string& text) {
        auto ms = parse_rows_list(text);
        return ms.ok() ? std::string() : ms.status().message();
      },
      Format("each %lld..%lld", (long long)kMinRows, (long long)kMaxRows), "ROWS_LIST");
}

namespace {
// Pages of this process from /proc/self/statm: field 0 = the whole address space, field 5 =
// data + stack (what RLIMIT_DATA counts). 0 when it cannot be read.
uint64_t statm_bytes(int field) {
  std::ifstream in("/proc/self/statm");
  uint64_t v = 0;
  for (int i = 0; i <= field && (in >> v); ++i) {
  }
  return in ? v * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}
}  // namespace

Status check_host_memory(uint64_t bytes, const std::string& what) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    const uint64_t physical = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
    if (bytes > physical) {
      return Error(TB_RESOURCE_EXHAUSTED, "%s need %s (%llu bytes), more than this machine's %s of "
                   "memory", what.c_str(), format_bytes(bytes).c_str(), (unsigned long long)bytes,
                   format_bytes(physical).c_str());
    }
  }
  // A limit counts what the process already holds (libraries, the mapped artifact, threads).
  const struct { int resource; int statm_field; const char* name; } limits[] = {
      {RLIMIT_AS, 0, "address-space limit (ulimit -v)"}, {RLIMIT_DATA, 5, "data limit (ulimit -d)"}};
  for (const auto& l : limits) {
    struct rlimit r {};
    if (getrlimit(l.resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) continue;
    const uint64_t limit = r.rlim_cur, held = statm_bytes(l.statm_field);
    const uint64_t left = limit > held ? limit - held : 0;
    if (bytes > left) {
      return Error(TB_RESOURCE_EXHAUSTED, "%s need %s (%llu bytes), but the %s of %s leaves %s",
                   what.c_str(), format_bytes(bytes).c_str(), (unsigned long long)bytes, l.name,
                   format_bytes(limit).c_str(), format_bytes(left).c_str());
    }
  }
  return Status();
}

uint64_t gemm_host_bytes(int64_t m, int64_t k, int64_t n) {
  const uint64_t um = static_cast<uint64_t>(std::max<int64_t>(m, 0));
  const uint64_t uk = static_cast<uint64_t>(std::max<int64_t>(k, 0));
  const uint64_t kp = static_cast<uint64_t>(pad32(std::max<int64_t>(k, 0)));
  const uint64_t un = static_cast<uint64_t>(std::max<int64_t>(n, 0));
  uint64_t bytes = um * uk * 4 + um * kp + um * (kp / 32) * 4 + um * un * 4;
  if (kp != uk) bytes += um * kp * 4;
  return bytes;
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
         "change the run, on 2 MiB pages where the system gives them, which the CPU kernels "
         "stream a few percent faster; see docs/FORMAT.md)")
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
