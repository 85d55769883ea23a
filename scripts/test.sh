#!/usr/bin/env bash
# The whole test suite (also what CI runs), in named stages that print their own time:
#   build           Release build (CUDA backend compiled when nvcc is found)
#   tests           every ctest entry: unit, conformance (the suite per backend and CPU tag), slow
#                   (with the exhaustive conformance runs), gpu (SKIPPED without a device), cli, demo
#   install         cmake --install build into build/prefix; tests/consumer (C and C++, and C with
#                   pkg-config) and tests/plugin_out_of_tree built and run against it
#                   (tests/package/install_check.sh)
#   asan-build      the CPU-side suite again with AddressSanitizer + UndefinedBehaviorSanitizer
#   asan-tests      its unit, conformance and cli tests (not the amx entry: tile instructions are
#                   invisible to the sanitizers)
#   tsan-build      the test binary alone with ThreadSanitizer (CUDA and benchmarks off)
#   tsan-tests      the tests that run threads (ctest label tsan; tests/CMakeLists.txt), where any
#                   report fails the stage; tests/tsan.supp lists the system oneTBB's false reports
#   python          `pip install .` into a venv (build-py/venv) with only what pyproject.toml
#                   names from PyPI, then the pytest suite (python/tests) against build/bin/twinbit
#   arm64           the CPU backend cross-compiled for aarch64 (build-arm64: the library and
#                   tests/cpu, no command, no CUDA) and run under qemu-aarch64 on two CPU models,
#                   one per aarch64 tag (cortex-a76: neon_dotprod and neon, on two threads;
#                   cortex-a53: neon only, on one): the CPU unit tests (tb_expf's sample
#                   included), the conformance quick sweep on every tag, and the fixed cases'
#                   output hashes, which must equal those of the x86-64 build
#                   (build/bin/twinbit_cpu_check hashes)
# Measured stage times are recorded in docs/results/ci-stages.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
suite_start=$SECONDS
stage_start=$SECONDS
stage() {  # stage NAME: ends the previous stage (printing its time) and starts NAME
  if [ -n "${stage_name:-}" ]; then echo "== $stage_name: $((SECONDS - stage_start)) s"; fi
  stage_name=$1
  stage_start=$SECONDS
  [ "$1" = done ] || echo "== $1"
}

stage build
scripts/build.sh
stage tests
# Two entries at a time on a 2-core machine: most are one thread (CLI runs, references), so the
# pair fills the cores (721 s against 842 serial for this stage on the 2-core CI machine).
ctest --test-dir build --output-on-failure --timeout 3000 -j"$jobs"
stage install
tests/package/install_check.sh build
stage python
# As a user installs it: a venv of its own, the requirements pyproject.toml names (build system,
# dependencies, the test extra) and nothing else, then `pip install .` with a persistent build
# folder. CUDA off: CI has no GPU, and the module's CUDA path is the library's, tested by ctest.
scripts/deps.sh --python
python3 -m venv build-py/venv
build-py/venv/bin/python - >build-py/requirements.txt <<'PYPROJECT'
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))
print("\n".join(p["build-system"]["requires"] + p["project"]["dependencies"] +
                p["project"]["optional-dependencies"]["test"]))
PYPROJECT
build-py/venv/bin/pip install -q -r build-py/requirements.txt
py_defines=(-C cmake.define.TWINBIT_CUDA=OFF)
if command -v ccache >/dev/null; then py_defines+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
build-py/venv/bin/pip install -q --no-build-isolation --no-deps -C build-dir=build-py/build \
  "${py_defines[@]}" . >build-py/pip.log 2>&1 || { grep -E "error|Error" build-py/pip.log | head -30; exit 1; }
TWINBIT_CLI="$root/build/bin/twinbit" build-py/venv/bin/python -m pytest -q -p no:cacheprovider python/tests
# The sanitizer builds compile at -O1 -g1 (line tables only): 2.5 times less compile time than
# RelWithDebInfo's -O2 -g with ASan + UBSan instrumentation (measured on seven of the heaviest
# files: 59 s against 146 s), and -O1 is what the sanitizers' own documentation advises; the
# stack traces keep function names, files and lines. The CPU kernels (backends/cpu/isa/) stay at
# -O2 there: at -O1 xsimd's operations stay calls, and the ASan tests took 1316 s against 369 s.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                 "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
stage arm64
scripts/arm64_check.sh
stage asan-build
cmake -S . -B build-asan "${sanitizer_flags[@]}" -DTWINBIT_SANITIZE=ON \
      -DTWINBIT_CUDA=OFF -DTWINBIT_BENCH=OFF >build-asan.log 2>&1 || { tail -30 build-asan.log; exit 1; }
cmake --build build-asan -j"$jobs" >>build-asan.log 2>&1 || { grep -E "error" build-asan.log | head -30; exit 1; }
stage asan-tests
# Not the amx label: the sanitizers do not see tile loads and stores, and the emulated-tile test
# (label unit) runs the same schedule's host code, packing included, under them.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -L "unit|conformance|cli" -LE amx --timeout 3000 -j"$jobs"
stage tsan-build
cmake -S . -B build-tsan "${sanitizer_flags[@]}" -DTWINBIT_SANITIZE_THREAD=ON \
      -DTWINBIT_CUDA=OFF -DTWINBIT_BENCH=OFF >build-tsan.log 2>&1 || { tail -30 build-tsan.log; exit 1; }
cmake --build build-tsan -j"$jobs" --target twinbit_tests >>build-tsan.log 2>&1 ||
  { grep -E "error" build-tsan.log | head -30; exit 1; }
stage tsan-tests
ctest --test-dir build-tsan --output-on-failure -L tsan --timeout 1200
stage done
echo "== suite: $((SECONDS - suite_start)) s"
