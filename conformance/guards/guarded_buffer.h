// An output buffer a backend cannot write outside of unnoticed: the output sits between two
// canary bands, and each band ends at a PROT_NONE page.
//
//   [PROT_NONE page][canary band (>= kBand bytes)][output][canary band (kBand..kBand+63)][PROT_NONE page]
//
// A short stray write (y[-1], four floats past the last row) lands in a band and is found by
// check(), which names the first byte touched; a long one faults at once on a guard page, at the
// instruction that made it, instead of corrupting the heap (a "double free" much later, or
// nothing at all). The conformance worker's crash handler asks describe_guard_fault() what the
// faulting address belonged to, so even that verdict names the output.
//
// The output itself is filled with the same 4-byte pattern as the bands (the canary), starts on
// a 64-byte boundary, and stays mapped until the buffer is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <twinbit/status.hpp>

namespace twinbit::conformance::guards {

constexpr size_t kBand = 128;  // bytes of canary on each side at least

class GuardedBuffer {
 public:
  // `bytes` of output named `name` ("y", "xq": for messages), elements of `element_size` bytes,
  // everything filled with the 4-byte pattern `fill` (as stored in memory, little end first).
  GuardedBuffer(std::string name, size_t bytes, size_t element_size, uint32_t fill);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  template <class T> T* as() { return reinterpret_cast<T*>(data_); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data_); }
  size_t bytes() const { return bytes_; }

  // INTERNAL naming the first band byte that no longer holds the canary, e.g. "wrote y[-1],
  // before the start of the output (4 bytes before it)" or "wrote y[99], past the end of the
  // output (99 elements)"; OK when both bands are intact.
  Status check() const;

 private:
  std::string name_;
  size_t bytes_, element_size_;
  uint32_t fill_;
  unsigned char* map_ = nullptr;  // the whole mapping, guard pages included
  size_t map_bytes_ = 0;
  unsigned char* lo_ = nullptr;   // first band byte (just after the front guard page)
  unsigned char* hi_ = nullptr;   // the back guard page
  unsigned char* data_ = nullptr;
  int slot_ = -1;                 // in the fault registry
};

// For a SIGSEGV/SIGBUS handler (async-signal-safe: no allocation, fixed tables): when `addr`
// lies in a guard page of a live GuardedBuffer, writes "before the start of y" or "past the end
// of y" into out (NUL-terminated) and returns true.
bool describe_guard_fault(const void* addr, char* out, size_t capacity);

}  // namespace twinbit::conformance::guards
