#include "artifacts/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace twinbit::artifact {

void* map_huge(size_t bytes) {
  if (bytes == 0) return nullptr;
  // Over-map by one huge page, then trim both ends so the mapping starts on a 2 MiB boundary.
  const size_t span = bytes + kHugePageBytes;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (start > base) ::munmap(raw, start - base);
  const uintptr_t end = start + bytes, raw_end = base + span;
  const uintptr_t page_end = (end + 4095) / 4096 * 4096;
  if (raw_end > page_end) ::munmap(reinterpret_cast<void*>(page_end), raw_end - page_end);
#ifdef MADV_HUGEPAGE
  (void)::madvise(reinterpret_cast<void*>(start), bytes, MADV_HUGEPAGE);  // a hint; failure is fine
#endif
  return reinterpret_cast<void*>(start);
}

void unmap_huge(void* p, size_t bytes) {
  if (p) ::munmap(p, bytes);
}

int64_t huge_page_bytes(const void* p, size_t bytes) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  const auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
  uintptr_t vma_lo = 0, vma_hi = 0;
  int64_t total = 0;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    uintptr_t a = 0, b = 0;
    uint64_t kib = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      vma_lo = a;
      vma_hi = b;
    } else if (std::sscanf(line, "AnonHugePages: %" SCNu64 " kB", &kib) == 1 && vma_hi > lo && vma_lo < hi) {
      // Huge pages of a mapping wider than the range: clip to the overlap (they are 2 MiB-aligned).
      const uint64_t overlap = std::min(vma_hi, hi) - std::max(vma_lo, lo);
      total += static_cast<int64_t>(std::min<uint64_t>(kib * 1024, overlap));
    }
  }
  std::fclose(f);
  return total;
}

}  // namespace twinbit::artifact
