// Happens-before edges for ThreadSanitizer that an uninstrumented library provides but TSan
// cannot see. The system oneTBB is not built with TSan: its scheduler's own atomics order a
// task after the code that spawned it, and the spawner's wait after the task, yet TSan sees
// neither and reports every access to data a task shares with its spawner. A parallel region
// marks exactly those two edges (docs/RUNTIME.md "Threads"); without TSan these compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define TWINBIT_TSAN_RELEASE(address) __tsan_release(const_cast<void*>(static_cast<const void*>(address)))
#define TWINBIT_TSAN_ACQUIRE(address) __tsan_acquire(const_cast<void*>(static_cast<const void*>(address)))
#else
#define TWINBIT_TSAN_RELEASE(address) ((void)0)
#define TWINBIT_TSAN_ACQUIRE(address) ((void)0)
#endif

#include <tbb/parallel_for.h>

namespace twinbit {

// tbb::parallel_for(range, body) with both edges marked: what the caller wrote before happens
// before every chunk, and every chunk before the return. Chunks get no edge between them, so
// TSan still sees a race between two chunks.
template <class Range, class Body>
void parallel_for_seen_by_tsan(const Range& range, const Body& body) {
  [[maybe_unused]] const char spawned = 0, joined = 0;  // addresses naming the two edges
  TWINBIT_TSAN_RELEASE(&spawned);
  tbb::parallel_for(range, [&](const Range& r) {
    TWINBIT_TSAN_ACQUIRE(&spawned);
    body(r);
    TWINBIT_TSAN_RELEASE(&joined);
  });
  TWINBIT_TSAN_ACQUIRE(&joined);
}

}  // namespace twinbit
