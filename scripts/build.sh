#!/usr/bin/env bash
# Configures (once) and builds twinbit into build/ (Release; the CUDA backend when nvcc is found).
# Usage: scripts/build.sh [cmake --build arguments, e.g. --target twinbit_cli]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
build="$root/build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "twinbit: configuring $build (first use)" >&2
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$root/build.log" 2>&1 ||
    { tail -30 "$root/build.log" >&2; echo "twinbit: configure failed (full log: build.log)" >&2; exit 1; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
if ! cmake --build "$build" -j"$jobs" "$@" >"$root/build.log" 2>&1; then
  grep -E "error|Error" "$root/build.log" | head -30 >&2 || true
  echo "twinbit: build failed (full log: build.log)" >&2
  exit 1
fi
