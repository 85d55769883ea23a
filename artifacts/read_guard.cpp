// The SIGBUS guard of read_guard.h: thread-local frames with a sigsetjmp point, one process-wide
// handler that jumps back to the frame whose range faulted and chains everything else.
#include "artifacts/read_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace twinbit::artifact {

namespace {

struct Frame {
  sigjmp_buf jump;
  uintptr_t begin = 0, end = 0;  // [begin, end): the guarded range
  Frame* outer = nullptr;        // the enclosing guarded call on this thread, if any
};

// The default TLS model, not initial-exec: an initial-exec variable marks the whole library
// STATIC_TLS, and libtwinbit.so or the Python module (dlopen'ed by the interpreter) then needs
// all its thread-locals in the static TLS surplus - with the CUDA runtime's 4 KiB page-aligned
// block the module no longer loads ("cannot allocate memory in static TLS block"). The handler
// still reads it without allocating: a thread that guards a read writes t_innermost first, which
// allocates this thread's block; only a SIGBUS on a thread that never guarded anything reaches
// the lazy allocation, and that signal is chained to the default action (a crash) anyway.
thread_local Frame* t_innermost = nullptr;

struct sigaction g_previous;  // written once, before our handler is installed

void chain(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  const bool fault = info != nullptr && info->si_code > 0;  // raised by the kernel for an access
  if (g_previous.sa_handler == SIG_IGN && !fault) return;   // kill -BUS was being ignored
  if (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN) {
    // Back to the default action. A fault re-executes the access on return and now dies with the
    // usual core and address; a signal sent with kill() is raised again (it stays pending while
    // this handler runs and is delivered when it returns).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, nullptr);
    if (!fault) raise(SIGBUS);
    return;
  }
  g_previous.sa_handler(sig);
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  if (info != nullptr && info->si_code > 0) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Frame* f = t_innermost; f != nullptr; f = f->outer) {
      if (addr >= f->begin && addr < f->end) siglongjmp(f->jump, 1);
    }
  }
  chain(sig, info, context);
}

bool install_handler() {
  sigaction(SIGBUS, nullptr, &g_previous);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  return sigaction(SIGBUS, &sa, nullptr) == 0;
}

struct CopyArgs {
  void* dst;
  const void* src;
  size_t bytes;
};
void copy_fn(void* arg) {
  const auto* a = static_cast<const CopyArgs*>(arg);
  std::memcpy(a->dst, a->src, a->bytes);
}

}  // namespace

bool guarded_run(const void* begin, size_t bytes, void (*fn)(void*), void* arg) noexcept {
  static const bool installed = install_handler();  // once, thread-safe
  (void)installed;  // if sigaction failed, faults keep their old fate; reads still work
  Frame frame;
  frame.begin = reinterpret_cast<uintptr_t>(begin);
  frame.end = bytes > UINTPTR_MAX - frame.begin ? UINTPTR_MAX : frame.begin + bytes;
  frame.outer = t_innermost;
  // savemask = 1: the jump out of the handler must also unblock SIGBUS, which the kernel blocked
  // while the handler ran; otherwise the next fault on this thread would kill the process.
  if (sigsetjmp(frame.jump, 1) != 0) {
    t_innermost = frame.outer;
    return false;
  }
  t_innermost = &frame;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the frame is published before any read
  fn(arg);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_innermost = frame.outer;
  return true;
}

bool guarded_copy(void* dst, const void* src, size_t bytes) noexcept {
  CopyArgs a{dst, src, bytes};
  return guarded_run(src, bytes, copy_fn, &a);
}

}  // namespace twinbit::artifact
