// The tb_error a backend writes its message into, placed so that a backend writing past its
// TB_ERROR_MESSAGE_CAPACITY bytes faults at once instead of overwriting the caller's stack.
//
// WHY. A tb_error on the caller's stack is 512 bytes next to return addresses: a plugin that
// sprintf()s a long message into it (or forgets the capacity) smashes the host, and in Release
// the damage shows much later, somewhere else. Here the buffer ends exactly where a PROT_NONE
// page begins: the first byte written past it is a SIGSEGV at that instruction, whose address
// is_error_buffer_guard() recognises (the conformance suite names it in its verdict).
//
// LIFETIME. Each thread keeps a few such buffers (one per nesting level: a backend that calls
// another backend through twinbit::Backend from inside an operation nests), mapped on first use
// and unmapped when the thread ends. A GuardedError takes the next free one and clears it;
// past the nesting depth, or when mapping fails, it falls back to an ordinary buffer inside
// itself (no guard, still correct).
//
// Not copyable, not movable; used as a local around one call into a backend.
#pragma once

#include <twinbit/status.h>

namespace twinbit {

class GuardedError {
 public:
  GuardedError();
  ~GuardedError();
  GuardedError(const GuardedError&) = delete;
  GuardedError& operator=(const GuardedError&) = delete;

  tb_error* get() { return err_; }
  const tb_error& operator*() const { return *err_; }

 private:
  tb_error* err_;
  bool guarded_;
  tb_error local_;  // the fallback
};

// Whether `addr` lies in the PROT_NONE page after some thread's error buffer. Async-signal-safe
// (reads a fixed table of atomics): for a SIGSEGV handler.
bool is_error_buffer_guard(const void* addr);

}  // namespace twinbit
