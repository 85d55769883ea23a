// Guarded reads of a file mapping: a SIGBUS raised by twinbit's own read of a mapped file becomes
// a false return (the caller reports DATA_LOSS) instead of killing the process.
//
// WHY. A file is mapped at its size when it was opened. If another process truncates it or
// rewrites it in place (a partial copy, `cp` over it, a download restarting), reading a page of
// the mapping that now lies past the file's end raises SIGBUS, whose default action kills the
// process. twinbit reads the mappings itself in a few places (Artifact::open, Artifact::verify,
// a backend copying weights into device memory); those go through this guard.
//
// HOW. guarded_run(begin, bytes, fn, arg) records "this thread is reading [begin, begin + bytes)"
// in a thread-local frame that holds a sigsetjmp point, and calls fn(arg). A process-wide SIGBUS
// handler, installed once by the first guarded call, looks at the faulting thread's frames: when a
// frame's range holds the faulting address (si_addr) and the kernel raised the signal (a memory
// fault, not kill()), it siglongjmps to that frame, and guarded_run returns false. Any other
// SIGBUS is not ours: it goes to the handler that was installed before ours (called with the same
// arguments), or, when there was none, gets the default action - the process dies exactly as it
// would have without the guard.
//
// CONTRACT FOR fn. A fault abandons fn's stack frames without unwinding them. So fn must only read
// the range and write plain memory its caller owns (memcpy, hashing, comparisons): no allocation,
// no locks, no exceptions, no objects with destructors. After a false return, whatever fn wrote
// is partial and must be discarded.
//
// LIMITS.
// - Only reads made inside fn, by the calling thread, of addresses inside the range are guarded.
//   Kernels that stream a mapping zero-copy (the CPU backend's gemm, a DMA engine reading
//   registered host memory) are not, and cannot be: for those, open the artifact with
//   ReadMode::kCopy (artifacts/artifact.h), which reads the file into owned memory at open.
// - Only faults are caught. A file rewritten in place with its size unchanged raises nothing;
//   the payload checksums (Artifact::verify) catch that, at the moment they run.
// - The handler is installed with sigaction on first use and stays for the life of the process.
//   Code that installs its own SIGBUS handler later without chaining to the previous one turns the
//   guard off (the fault then goes where that handler sends it). Installing concurrently with
//   another library's sigaction(SIGBUS) can lose one of the two previous-handler records.
// - The thread-local frame pointer uses the initial-exec TLS model so that the handler reads it
//   without a call; a shared library that links this file and is loaded with dlopen late in a
//   process's life may fail to load if the process has no static TLS space left.
//
// THREAD SAFETY. Any thread may call concurrently; each thread has its own frames. Calls nest
// (fn may call guarded_run again); a fault returns to the innermost frame whose range holds it.
#pragma once

#include <cstddef>

namespace twinbit::artifact {

// Runs fn(arg) under the guard for reads of [begin, begin + bytes). Returns true when fn returned,
// false when a read of the range faulted (SIGBUS) and fn was abandoned.
bool guarded_run(const void* begin, size_t bytes, void (*fn)(void*), void* arg) noexcept;

// memcpy(dst, src, bytes) with the reads of src guarded. False when src faulted; dst then holds
// part of the bytes.
bool guarded_copy(void* dst, const void* src, size_t bytes) noexcept;

}  // namespace twinbit::artifact
