// The parent side of an isolated run (isolation.h): spawn a worker, send it cases one at a time,
// wait for each answer under a time limit, and turn a death or a silence into that case's verdict.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/guards/untrusted_text.h"
#include "conformance/isolation/isolation.h"
#include "conformance/judge.h"

extern char** environ;

namespace twinbit::conformance::isolation {
namespace {

using detail::now_s;
using guards::sanitize_untrusted;

class Worker {
 public:
  ~Worker() { stop(); }

  Status start(const std::vector<std::string>& argv) {
    int to[2], from[2];
    if (::pipe2(to, O_CLOEXEC) != 0) return Error(TB_INTERNAL, "pipe: %s", std::strerror(errno));
    if (::pipe2(from, O_CLOEXEC) != 0) {
      ::close(to[0]);
      ::close(to[1]);
      return Error(TB_INTERNAL, "pipe: %s", std::strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 3);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);  // a plugin's printing goes to our stderr
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);  // ignored here, default there
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(to[0]);
    ::close(from[1]);
    if (rc != 0) {
      ::close(to[1]);
      ::close(from[0]);
      pid_ = -1;
      return Error(TB_INTERNAL, "cannot start the worker '%s': %s", argv[0].c_str(), std::strerror(rc));
    }
    in_ = to[1];
    out_ = from[0];
    buffer_.clear();
    return Status();
  }

  bool running() const { return pid_ > 0; }

  bool send(const std::string& line) {
    const char* p = line.data();
    size_t n = line.size();
    while (n > 0) {
      const ssize_t w = ::write(in_, p, n);
      if (w <= 0) return false;  // the worker is gone (SIGPIPE is ignored: EPIPE)
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  enum class Read { line, eof, timeout };
  // The next line, waiting until `deadline` (steady seconds).
  Read next(std::string& line, double deadline) {
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return Read::line;
      }
      const double left = deadline - now_s();
      if (left <= 0) return Read::timeout;
      pollfd p{out_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;  // the deadline is checked above
      char chunk[65536];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Read::eof;
      buffer_.append(chunk, static_cast<size_t>(n));
      if (buffer_.size() > (64u << 20)) return Read::eof;  // a runaway writer: treat as dead
    }
  }

  // Reaps the worker - killing it at once, or (`kill` false: it closed its pipe, so it is most
  // likely dying) after it had two seconds to end by itself; says how it ended ("killed by
  // SIGSEGV", "exit status 3").
  std::string stop(bool kill = true) {
    if (pid_ <= 0) return "";
    ::close(in_);
    ::close(out_);
    int status = 0;
    pid_t got = 0;
    for (int i = 0; !kill && i < 200 && (got = ::waitpid(pid_, &status, WNOHANG)) == 0; ++i) ::usleep(10000);
    if (got != pid_) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    pid_ = -1;
    if (WIFSIGNALED(status)) {
      const char* abbrev = sigabbrev_np(WTERMSIG(status));
      return Format("killed by SIG%s", abbrev ? abbrev : std::to_string(WTERMSIG(status)).c_str());
    }
    return Format("exit status %d", WEXITSTATUS(status));
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buffer_;
};

// Starts a worker and reads its hello into `rep` (identity) - or its fatal message.
Status start_worker(Worker& w, const IsolationOptions& io, Report* rep, int* exit_code) {
  TB_RETURN_IF_ERROR(w.start(io.worker_argv));
  std::string line;
  const double deadline = now_s() + io.start_timeout_s;
  while (w.next(line, deadline) == Worker::Read::line) {
    if (line.empty() || line[0] != '{') continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("fatal")) {
        if (exit_code) *exit_code = j.value("exit", 1);
        w.stop();
        return Error(TB_UNAVAILABLE, "%s", sanitize_untrusted(j.at("fatal").get<std::string>()).c_str());
      }
      if (j.contains("hello")) {
        const nlohmann::json& h = j.at("hello");
        if (rep) {
          fill_identity(*rep, h.at("name").get<std::string>(), h.at("device").get<std::string>(),
                        h.at("features").get<std::string>(), rep->seed);
        }
        return Status();
      }
    } catch (const std::exception&) {
    }
  }
  const std::string how = w.stop();
  if (exit_code) *exit_code = 1;
  return Error(TB_INTERNAL, "the worker did not start (%s)", how.empty() ? "no answer" : how.c_str());
}

// One case on a running worker: its result, or the verdict of its death or silence.
CaseResult run_case(Worker& w, size_t index, const Case& c, const IsolationOptions& io) {
  CaseResult r;
  r.c = c;
  r.name = c.name();
  const double t0 = now_s();
  std::string crash_line, line;
  bool started = false;
  double deadline = now_s() + io.prepare_timeout_s;
  if (w.send(case_line(index, c))) {
    for (;;) {
      const Worker::Read got = w.next(line, deadline);
      if (got == Worker::Read::timeout) {
        w.stop();
        r.verdict = Verdict::timeout;
        r.message = started ? Format("no answer within the time limit of %.0f s (the worker was "
                                     "killed; a new one runs the next case)", io.case_timeout_s)
                            : Format("the suite's own preparation of the case took over %.0f s",
                                     io.prepare_timeout_s);
        r.seconds = now_s() - t0;
        return r;
      }
      if (got == Worker::Read::eof) break;
      if (line.rfind("crash ", 0) == 0) {
        crash_line = line.substr(6);
        continue;
      }
      try {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j.contains("start") && j.at("start").get<size_t>() == index) {
          started = true;
          deadline = now_s() + io.case_timeout_s;
        } else if (j.contains("result") && j.at("result").get<size_t>() == index) {
          if (parse_result_json(j.at("case").dump(), r)) {
            r.c = c;
            r.name = c.name();
            return r;
          }
          r.verdict = Verdict::error;
          r.message = "the worker's result could not be read";
          return r;
        }
      } catch (const std::exception&) {
      }
    }
  }
  // The worker died during the case.
  const std::string how = w.stop(false);
  r.seconds = now_s() - t0;
  const size_t sp = crash_line.find(' ');
  const std::string signal = sp == std::string::npos ? crash_line : crash_line.substr(0, sp);
  const std::string what = sp == std::string::npos ? "" : crash_line.substr(sp + 1);
  if (what.rfind("guard ", 0) == 0) {
    // A write outside the output, stopped by a guard page: what it touched is known.
    r.verdict = Verdict::error;
    r.message = Format("INTERNAL: wrote %s (hit the guard page; the worker stopped with %s)",
                       what.substr(6).c_str(), signal.c_str());
  } else {
    r.verdict = Verdict::crash;
    r.message = Format("the worker died during the case (%s)%s; a new one runs the next case",
                       how.c_str(), started ? "" : " while preparing it");
  }
  r.message = sanitize_untrusted(r.message);
  return r;
}

// SIGPIPE ignored while a run lasts: writing to a dead worker is EPIPE, not the parent's death.
struct IgnoreSigpipe {
  struct sigaction old {};
  IgnoreSigpipe() {
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &sa, &old);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old, nullptr); }
};

}  // namespace

Result<Report> run_isolated(const IsolationOptions& io, const std::vector<Case>& cases,
                            const SuiteOptions& o, int* exit_code) {
  IgnoreSigpipe ignore;
  const double t_start = now_s();
  Report rep;
  rep.seed = o.seed;
  Worker w;
  TB_RETURN_IF_ERROR(start_worker(w, io, &rep, exit_code));
  rep.fallback_order = detail::Fallbacks(detail::fallback_entries(o), rep.backend).names();
  const std::vector<ExpectedFailure> expected = detail::all_expected(o);
  double last_progress = t_start;
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseResult r;
    Status started = w.running() ? Status() : start_worker(w, io, nullptr, nullptr);
    if (started.ok()) {
      r = run_case(w, i, cases[i], io);
    } else {
      r.c = cases[i];
      r.name = cases[i].name();
      r.verdict = Verdict::crash;
      r.message = sanitize_untrusted("no worker could be started for the case: " + started.to_string());
    }
    if (r.verdict == Verdict::crash || r.verdict == Verdict::timeout ||
        (r.verdict == Verdict::error && !w.running())) {
      detail::apply_expected(r, expected, rep.backend);
    }
    if (o.on_case) o.on_case(i, cases.size(), r);
    if (o.progress && (now_s() - last_progress > 2.0 || i + 1 == cases.size() || r.failed())) {
      last_progress = now_s();
      o.progress(Format("[%zu/%zu] %s: %s (%.2f s)", i + 1, cases.size(), r.name.c_str(),
                        verdict_name(r.verdict), r.seconds));
    }
    rep.results.push_back(std::move(r));
  }
  detail::count_totals(rep);
  rep.seconds = now_s() - t_start;
  return rep;
}

}  // namespace twinbit::conformance::isolation
