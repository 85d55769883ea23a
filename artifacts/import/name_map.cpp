// Name-map files and globs (names.h): the user's own rules for tensor names twinbit does not know.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "artifacts/import/names.h"

namespace twinbit::import {
namespace {

constexpr uint64_t kMaxNameMapBytes = 1u << 20;
const char* const kRoles[] = {"attn_q", "attn_k", "attn_v", "attn_o", "ffn_gate", "ffn_up", "ffn_down"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "blk.N.ROLE" with N digits or '*', or "lm_head".
bool is_entry_pattern(std::string_view e) {
  if (e == "lm_head") return true;
  if (e.substr(0, 4) != "blk.") return false;
  e.remove_prefix(4);
  const size_t dot = e.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  const std::string_view layer = e.substr(0, dot), role = e.substr(dot + 1);
  if (layer != "*" && !std::all_of(layer.begin(), layer.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return std::find(std::begin(kRoles), std::end(kRoles), role) != std::end(kRoles);
}

}  // namespace

bool glob_match(std::string_view glob, std::string_view name, std::vector<std::string>* stars) {
  // Backtracking over the last '*' only: linear for globs without '*', O(glob x name) otherwise,
  // and it records the leftmost-shortest split, which is what a user writing "blk.*.x" means.
  size_t g = 0, n = 0, star_g = std::string_view::npos, star_n = 0;
  std::vector<std::pair<size_t, size_t>> spans;  // (start, length) per '*' matched so far
  while (n < name.size()) {
    if (g < glob.size() && glob[g] == '*') {
      star_g = g++;
      star_n = n;
      spans.emplace_back(n, 0);
    } else if (g < glob.size() && (glob[g] == '?' || glob[g] == name[n])) {
      ++g;
      ++n;
    } else if (star_g != std::string_view::npos) {
      // Give the last '*' one more character; later '*'s recorded since are forgotten.
      size_t stars_before = 0;
      for (size_t i = 0; i < star_g; ++i) stars_before += glob[i] == '*';
      spans.resize(stars_before + 1);
      g = star_g + 1;
      n = ++star_n;
      spans.back().second = n - spans.back().first;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') {
    spans.emplace_back(n, 0);
    ++g;
  }
  if (g != glob.size()) return false;
  if (stars) {
    stars->clear();
    for (const auto& [start, len] : spans) stars->emplace_back(name.substr(start, len));
  }
  return true;
}

Result<std::vector<NameRule>> parse_name_map(std::string_view text, const std::string& source) {
  std::vector<NameRule> rules;
  int line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    const std::string quoted(trim(line.substr(0, 120)));
    const size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.find('\0') != std::string_view::npos) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: a NUL byte in the line", source.c_str(), line_no);
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: '%s' is not SOURCE_NAME_OR_GLOB=ENTRY (no '=')",
                   source.c_str(), line_no, quoted.c_str());
    }
    NameRule r;
    r.glob = std::string(trim(line.substr(0, eq)));
    r.entry = std::string(trim(line.substr(eq + 1)));
    r.line = line_no;
    r.source = source;
    if (r.glob.empty()) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: '%s' has no source name before '='", source.c_str(),
                   line_no, quoted.c_str());
    }
    if (r.entry.find('=') != std::string::npos) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: '%s' has more than one '='", source.c_str(), line_no,
                   quoted.c_str());
    }
    if (r.entry != "-" && !is_entry_pattern(r.entry)) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: '%s': entry '%s' is not blk.N.ROLE (ROLE one of attn_q, "
                   "attn_k, attn_v, attn_o, ffn_gate, ffn_up, ffn_down), lm_head or '-'",
                   source.c_str(), line_no, quoted.c_str(), r.entry.c_str());
    }
    const auto glob_stars = std::count(r.glob.begin(), r.glob.end(), '*');
    const auto entry_stars = std::count(r.entry.begin(), r.entry.end(), '*');
    if (entry_stars > glob_stars) {
      return Error(TB_INVALID_ARGUMENT, "%s:%d: '%s': the entry has %ld '*' but the source glob only %ld",
                   source.c_str(), line_no, quoted.c_str(), (long)entry_stars, (long)glob_stars);
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

Result<std::vector<NameRule>> load_name_map(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(errno == ENOENT ? TB_INVALID_ARGUMENT : TB_UNAVAILABLE, "cannot open name map %s: %s",
                 path.c_str(), std::strerror(errno));
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return Error(TB_UNAVAILABLE, "cannot read name map %s: %s", path.c_str(), std::strerror(err));
    }
    if (got == 0) break;
    text.append(buf, static_cast<size_t>(got));
    if (text.size() > kMaxNameMapBytes) {
      ::close(fd);
      return Error(TB_INVALID_ARGUMENT, "name map %s is larger than %llu bytes", path.c_str(),
                   (unsigned long long)kMaxNameMapBytes);
    }
  }
  ::close(fd);
  return parse_name_map(text, path);
}

}  // namespace twinbit::import
