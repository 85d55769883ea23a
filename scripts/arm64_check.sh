#!/usr/bin/env bash
# The aarch64 CPU backend under emulation (the test suite's arm64 stage; docs/BACKENDS.md): cross
# builds the library and tests/cpu with Debian's aarch64 toolchain into build-arm64, then runs,
# under qemu-aarch64 on each CPU model below, the CPU unit tests, the conformance quick sweep
# (every tag that model runs) and the fixed cases' output hashes, compared with the x86-64 build's.
# The cortex-a76 model runs on two CPUs (oneTBB partitions the work over two threads), the
# cortex-a53 model on one (the unpartitioned path).
# Usage: scripts/arm64_check.sh [NATIVE_BUILD_DIR]   (default build; its bin/twinbit_cpu_check
#        gives the x86-64 hashes and is built here when missing)
# Environment: TWINBIT_ARM64_CASES, the conformance run's random cases on top of the quick sweep
# (default 12: the stage's time is in docs/results/ci-stages.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
native=${1:-build}
cases=${TWINBIT_ARM64_CASES:-12}
jobs=$(nproc 2>/dev/null || echo 2)
scripts/deps.sh --arm64
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
log=build-arm64.log
t0=$SECONDS
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
      -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" -DTWINBIT_CUDA=OFF -DTWINBIT_CLI=OFF \
      -DTWINBIT_TESTS=OFF -DTWINBIT_BENCH=OFF -DTWINBIT_SHARED=OFF -DTWINBIT_EXAMPLES=OFF \
      -DTWINBIT_CPU_TESTS=ON >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
cmake --build build-arm64 -j"$jobs" --target twinbit_cpu_tests twinbit_cpu_check >>"$log" 2>&1 ||
  { grep -E "error" "$log" | head -30; exit 1; }
echo "arm64: cross build $((SECONDS - t0)) s"
if [ ! -x "$native/bin/twinbit_cpu_check" ]; then
  cmake --build "$native" -j"$jobs" --target twinbit_cpu_check >>"$log" 2>&1 ||
    { grep -E "error" "$log" | head -30; exit 1; }
fi
"$native/bin/twinbit_cpu_check" hashes >build-arm64/hashes-x86_64.txt

# cortex-a76 has the dot-product instructions (both tags run), cortex-a53 has not (neon only):
# each model must offer exactly the tags listed, so neither tag can drop out of the stage unseen;
# likewise each must run on exactly the threads listed (the CPU backend's default is one per CPU
# the process may use, which taskset sets), so the two-thread partitioning cannot drop out either.
#
# `-L /`: the loader and every library come from the same Debian packages (libc6:arm64 and the
# multiarch libraries beside it). With `-L /usr/aarch64-linux-gnu` qemu took the loader from the
# cross toolchain's libc6-arm64-cross (glibc 2.36-8) while that loader found libc.so.6 through
# the ld.so cache in /lib/aarch64-linux-gnu (libc6:arm64, 2.36-9+deb12u14, whose _rtld_global is
# 8 bytes longer): libc then read the loader's thread-stack cache list 8 bytes off, and the first
# pthread_create of any program (oneTBB's first worker, or a bare std::thread) looped forever on
# that list. It only showed with two or more CPUs because with one oneTBB creates no thread;
# docs/results/ci-stages.md has the evidence. The timeout turns any such hang into a failure.
emulate_for=600  # seconds per emulated run; the slowest takes under a minute
failed() {  # $1: what failed on the model $cpu, $2: its output file, $3: its exit status
  cat "$2"
  if [ "$3" -eq 124 ]; then echo "arm64: $1 on $cpu did not finish in $emulate_for s" >&2; fi
  exit 1
}
for model in cortex-a76:neon_dotprod,neon:2 cortex-a53:neon:1; do
  IFS=: read -r cpu tags threads <<<"$model"
  emulate=(timeout "$emulate_for" taskset -c "0-$((threads - 1))" qemu-aarch64 -L / -cpu "$cpu")
  t0=$SECONDS
  rc=0
  "${emulate[@]}" build-arm64/bin/twinbit_cpu_tests --test-suite-exclude=slow* --no-version \
      --minimal >build-arm64/tests-$cpu.txt 2>&1 || rc=$?
  [ $rc -eq 0 ] || failed "the unit tests" build-arm64/tests-$cpu.txt $rc
  "${emulate[@]}" build-arm64/bin/twinbit_cpu_check conformance --cases "$cases" \
      >build-arm64/conformance-$cpu.txt 2>&1 || rc=$?
  [ $rc -eq 0 ] || failed "the conformance sweep" build-arm64/conformance-$cpu.txt $rc
  head -1 build-arm64/conformance-$cpu.txt
  if ! head -1 build-arm64/conformance-$cpu.txt | grep -q "on tags ${tags//,/, }\$"; then
    echo "arm64: $cpu should run exactly the tags ${tags//,/, }" >&2
    exit 1
  fi
  report=build-arm64/conformance-$cpu.txt
  devices=$(grep -c "^  device " "$report" || true)
  on_threads=$(grep -c "^  device .*($threads threads, " "$report" || true)
  if [ "$devices" -eq 0 ] || [ "$on_threads" -ne "$devices" ]; then
    grep "^  device " "$report" >&2
    echo "arm64: $cpu should run on exactly $threads threads (taskset -c 0-$((threads - 1)))" >&2
    exit 1
  fi
  "${emulate[@]}" build-arm64/bin/twinbit_cpu_check hashes >build-arm64/hashes-$cpu.txt || rc=$?
  [ $rc -eq 0 ] || failed "the hashes" build-arm64/hashes-$cpu.txt $rc
  if ! diff build-arm64/hashes-x86_64.txt build-arm64/hashes-$cpu.txt; then
    echo "arm64: the output hashes on $cpu differ from x86-64's (above: < x86-64, > aarch64)" >&2
    exit 1
  fi
  echo "arm64: $cpu ($tags; threads: $threads): unit tests, conformance, $(wc -l <build-arm64/hashes-$cpu.txt) hashes equal to x86-64's: $((SECONDS - t0)) s"
done
