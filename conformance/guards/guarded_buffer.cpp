#include "conformance/guards/guarded_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>

namespace twinbit::conformance::guards {
namespace {

size_t page_size() {
  static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// The live buffers' guard pages, for describe_guard_fault. A slot is claimed by a CAS on `used`,
// filled, then published by storing its pages (release); the handler reads only published ones.
struct Slot {
  std::atomic<int> used{0};
  std::atomic<uintptr_t> lo_guard{0}, hi_guard{0};
  char name[32] = {};
};
constexpr int kSlots = 256;
Slot g_slots[kSlots];

int claim(const std::string& name, uintptr_t lo_guard, uintptr_t hi_guard) {
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].used.compare_exchange_strong(expected, 1)) continue;
    std::strncpy(g_slots[i].name, name.c_str(), sizeof g_slots[i].name - 1);
    g_slots[i].lo_guard.store(lo_guard, std::memory_order_release);
    g_slots[i].hi_guard.store(hi_guard, std::memory_order_release);
    return i;
  }
  return -1;  // more live buffers than slots: still guarded, only not named on a fault
}

void release(int i) {
  if (i < 0) return;
  g_slots[i].lo_guard.store(0);
  g_slots[i].hi_guard.store(0);
  g_slots[i].used.store(0);
}

unsigned char pattern_byte(uint32_t fill, uintptr_t address) {
  return static_cast<unsigned char>(fill >> (8 * (address % 4)));
}

void append(char* out, size_t cap, size_t& at, const char* s) {
  while (*s && at + 1 < cap) out[at++] = *s++;
  out[at] = '\0';
}

}  // namespace

GuardedBuffer::GuardedBuffer(std::string name, size_t bytes, size_t element_size, uint32_t fill)
    : name_(std::move(name)), bytes_(bytes), element_size_(element_size ? element_size : 1),
      fill_(fill) {
  const size_t page = page_size();
  const size_t body = (2 * kBand + 64 + bytes + page - 1) / page * page;
  map_bytes_ = body + 2 * page;
  void* m = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  map_ = static_cast<unsigned char*>(m);
  lo_ = map_ + page;
  hi_ = lo_ + body;
  ::mprotect(map_, page, PROT_NONE);
  ::mprotect(hi_, page, PROT_NONE);
  // Against the back guard page, less the band, rounded down to 64 bytes (SIMD stores).
  data_ = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(hi_) - kBand - bytes) & ~uintptr_t{63});
  for (unsigned char* p = lo_; p < hi_; ++p) *p = pattern_byte(fill_, reinterpret_cast<uintptr_t>(p));
  slot_ = claim(name_, reinterpret_cast<uintptr_t>(map_), reinterpret_cast<uintptr_t>(hi_));
}

GuardedBuffer::~GuardedBuffer() {
  release(slot_);
  ::munmap(map_, map_bytes_);
}

Status GuardedBuffer::check() const {
  // The byte nearest the output on each side is the most telling one to name.
  for (unsigned char* p = data_; p-- > lo_;) {
    if (*p != pattern_byte(fill_, reinterpret_cast<uintptr_t>(p))) {
      const size_t before = static_cast<size_t>(data_ - p);
      const size_t element = (before + element_size_ - 1) / element_size_;
      return Error(TB_INTERNAL, "wrote %s[-%zu], before the start of the output (%zu byte(s) "
                   "before it)", name_.c_str(), element, before);
    }
  }
  for (unsigned char* p = data_ + bytes_; p < hi_; ++p) {
    if (*p != pattern_byte(fill_, reinterpret_cast<uintptr_t>(p))) {
      const size_t at = static_cast<size_t>(p - data_);
      return Error(TB_INTERNAL, "wrote %s[%zu], past the end of the output (%zu elements)",
                   name_.c_str(), at / element_size_, bytes_ / element_size_);
    }
  }
  return Status();
}

bool describe_guard_fault(const void* addr, char* out, size_t capacity) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t page = page_size();
  for (const Slot& s : g_slots) {
    const uintptr_t lo = s.lo_guard.load(std::memory_order_acquire);
    const uintptr_t hi = s.hi_guard.load(std::memory_order_acquire);
    const char* where = nullptr;
    if (lo != 0 && a >= lo && a < lo + page) where = "before the start of ";
    if (hi != 0 && a >= hi && a < hi + page) where = "past the end of ";
    if (!where) continue;
    size_t at = 0;
    append(out, capacity, at, where);
    append(out, capacity, at, s.name);
    return true;
  }
  return false;
}

}  // namespace twinbit::conformance::guards
