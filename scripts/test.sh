#!/usr/bin/env bash
# The whole test suite: builds everything (Release, CUDA backend compiled when nvcc is found),
# runs every ctest entry (unit, slow, gpu - the GPU tests report SKIPPED without a device - and
# the CLI examples), then builds the CPU-side suite again with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs its unit tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
echo "== build (Release)"
scripts/build.sh
echo "== tests (Release)"
ctest --test-dir build --output-on-failure --timeout 3000
echo "== build (ASan + UBSan, CPU backends)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINBIT_SANITIZE=ON \
      -DTWINBIT_CUDA=OFF -DTWINBIT_BENCH=OFF >build-asan.log 2>&1 || { tail -30 build-asan.log; exit 1; }
cmake --build build-asan -j"$jobs" >>build-asan.log 2>&1 || { grep -E "error" build-asan.log | head -30; exit 1; }
echo "== tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -L "unit|cli" --timeout 3000
