#include "core/error_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace twinbit {
namespace {

constexpr int kDepth = 4;         // nesting levels with a guarded buffer, per thread
constexpr int kRegistry = 4096;   // guard pages known to is_error_buffer_guard (all threads)

std::atomic<uintptr_t> g_guards[kRegistry];

size_t page_size() {
  static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

void remember(uintptr_t guard, uintptr_t old) {
  for (auto& slot : g_guards) {
    uintptr_t expected = old;
    if (slot.compare_exchange_strong(expected, guard)) return;
  }
}

// This thread's buffers: [page: ... tb_error][page: PROT_NONE], one pair per level.
struct Slots {
  void* maps[kDepth] = {};
  int depth = 0;
  ~Slots() {
    for (void* m : maps) {
      if (!m) continue;
      remember(0, reinterpret_cast<uintptr_t>(m) + page_size());
      ::munmap(m, 2 * page_size());
    }
  }
  tb_error* take(int level) {
    if (level >= kDepth) return nullptr;
    if (!maps[level]) {
      void* m = ::mmap(nullptr, 2 * page_size(), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) return nullptr;
      auto* guard = static_cast<unsigned char*>(m) + page_size();
      if (::mprotect(guard, page_size(), PROT_NONE) != 0) {
        ::munmap(m, 2 * page_size());
        return nullptr;
      }
      maps[level] = m;
      remember(reinterpret_cast<uintptr_t>(guard), 0);
    }
    auto* guard = static_cast<unsigned char*>(maps[level]) + page_size();
    return reinterpret_cast<tb_error*>(guard - sizeof(tb_error));
  }
};

thread_local Slots t_slots;

}  // namespace

GuardedError::GuardedError() : err_(&local_), guarded_(false) {
  if (tb_error* e = t_slots.take(t_slots.depth)) {
    err_ = e;
    guarded_ = true;
    ++t_slots.depth;
  }
  std::memset(err_, 0, sizeof(tb_error));
}

GuardedError::~GuardedError() {
  if (guarded_) --t_slots.depth;
}

bool is_error_buffer_guard(const void* addr) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t page = page_size();
  for (const auto& slot : g_guards) {
    const uintptr_t g = slot.load(std::memory_order_relaxed);
    if (g != 0 && a >= g && a < g + page) return true;
  }
  return false;
}

}  // namespace twinbit
