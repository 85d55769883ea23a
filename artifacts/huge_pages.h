// Anonymous memory for weights that the CPU kernels stream, asked to sit on 2 MiB pages.
//
// WHY. The CPU kernels stream a strip set in place, one strip (K bytes of 32 columns) at a time;
// on 4 KiB pages every few groups of a strip start a new page and its page walk. On the
// development machine (2 vCPUs, Intel Xeon with AMX; twinbit-bench --pages ab, the same copies
// on both page sizes timed interleaved) 2 MiB pages made the read floor 4-5% faster and the
// decode gemms (M = 1, q8, F32 and I8, gate_up and lm_head) 4.5-5.7% faster; the AMX prefill
// (M = 32) 0.7-2.2% (docs/results/cpu-pages-2026-12-04.md).
//
// HOW. map_huge() maps anonymous memory 2 MiB-aligned and asks for transparent huge pages
// (madvise MADV_HUGEPAGE, before the first touch). It is a hint: where the system has them off
// (/sys/kernel/mm/transparent_hugepage/enabled "never") the memory is ordinary 4 KiB pages.
// huge_page_bytes() reports what the kernel actually gave (/proc/self/smaps).
#pragma once

#include <cstddef>
#include <cstdint>

namespace twinbit::artifact {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` (> 0) of zeroed, read-write anonymous memory starting on a 2 MiB boundary, with
// transparent huge pages asked for; nullptr if it cannot be mapped (errno says why). Release
// with unmap_huge(p, bytes).
void* map_huge(size_t bytes);
void unmap_huge(void* p, size_t bytes);

// Bytes of [p, p + bytes) that sit on huge pages now (the AnonHugePages of the mappings that
// overlap it, clipped to it); -1 where /proc/self/smaps cannot be read.
int64_t huge_page_bytes(const void* p, size_t bytes);

}  // namespace twinbit::artifact
