// The worker side of an isolated run (isolation.h): load nothing itself (the command did), say
// hello, judge every case it is sent, and - when the backend kills it - say why on the way out.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/guards/guarded_buffer.h"
#include "conformance/isolation/isolation.h"
#include "conformance/judge.h"
#include "core/error_buffer.h"

namespace twinbit::conformance::isolation {
namespace {

int g_out_fd = -1;

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void send(int fd, const std::string& line) { write_all(fd, line.data(), line.size()); }

// Async-signal-safe: fixed buffers, write(2), then the default action (the parent sees the signal).
void on_fatal_signal(int sig, siginfo_t* info, void*) {
  char line[256];
  size_t at = 0;
  auto put = [&](const char* s) {
    while (*s && at + 2 < sizeof line) line[at++] = *s++;
  };
  put("crash ");
  put(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
      : sig == SIGILL ? "SIGILL" : sig == SIGABRT ? "SIGABRT" : "SIGNAL");
  put(" ");
  char what[128] = {};
  const bool memory = sig == SIGSEGV || sig == SIGBUS;
  if (memory && info && guards::describe_guard_fault(info->si_addr, what, sizeof what)) {
    put("guard ");
    put(what);
  } else if (memory && info && is_error_buffer_guard(info->si_addr)) {
    put("guard past the end of its tb_error message buffer");
  } else {
    put("other");
  }
  line[at++] = '\n';
  write_all(g_out_fd, line, at);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_crash_handler(int out_fd) {
  g_out_fd = out_fd;
  // An alternate stack, so a stack overflow in the backend still gets its line out.
  static char alt[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}

bool read_line(int fd, std::string& buffer, std::string& line) {
  for (;;) {
    const size_t nl = buffer.find('\n');
    if (nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace

void worker_fatal(int out_fd, const Status& why, int exit_code) {
  const nlohmann::json j = {{"fatal", why.to_string()}, {"exit", exit_code}};
  send(out_fd, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

int run_worker(const Backend& backend, const SuiteOptions& o, int in_fd, int out_fd) {
  // A worker outlives nothing: a parent killed while the backend hangs takes the worker with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 0;  // the parent is already gone
  install_crash_handler(out_fd);
  const nlohmann::json hello = {{"hello", {{"name", backend.name()}, {"device", backend.device()},
                                           {"features", backend.features()}}}};
  send(out_fd, hello.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  const std::vector<ExpectedFailure> expected = detail::all_expected(o);
  detail::Fallbacks fallbacks(detail::fallback_entries(o), backend.name());
  std::string buffer, line;
  while (read_line(in_fd, buffer, line)) {
    size_t index = 0;
    Case c;
    if (!parse_case_line(line, index, c)) continue;  // the parent only sends case lines
    std::unique_ptr<detail::PreparedCase> p = detail::prepare(c, o.seed, o.reference_budget);
    send(out_fd, Format("{\"start\": %zu}\n", index));
    const CaseResult r = detail::judge(c, *p, backend, backend.name(), expected, fallbacks, o.repeat);
    send(out_fd, Format("{\"result\": %zu, \"case\": %s}\n", index, result_json(r).c_str()));
  }
  return 0;
}

}  // namespace twinbit::conformance::isolation
