#!/usr/bin/env bash
# Configures (once) and builds twinbit into build/ (Release; the CUDA backend when nvcc is found),
# printing its steps and the build's progress; the compiler's output goes to build.log.
# Usage: scripts/build.sh [cmake --build arguments, e.g. --target twinbit_cli]
# Environment: TWINBIT_SKIP_DEPS=1 skips the Debian package check (scripts/deps.sh), for machines
# without apt or network that have the dependencies already (README, "Building by hand").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
log="$root/build.log"
say() { echo "twinbit: $*" >&2; }
if [ "${TWINBIT_SKIP_DEPS:-0}" != 1 ]; then
  "$root/scripts/deps.sh"
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  say "configuring $build (first use; log: $log)"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 ||
    { tail -30 "$log" >&2; say "configure failed (full log: $log)"; exit 1; }
  grep -E "twinbit: CUDA backend" "$log" | sed 's/^-- /  /' >&2 || true
fi
jobs=$(nproc 2>/dev/null || echo 2)
start=$SECONDS
# Progress: one line each time the build passes another tenth (make's "[ 42%]" or ninja's
# "[12/340]"), so a first build of a few minutes is steps, not silence; nothing when up to date.
set +e
cmake --build "$build" -j"$jobs" "$@" 2>&1 | tee "$log" | awk -v logfile="$log" '
  match($0, /^\[ *[0-9]+%\]/) { p = substr($0, RSTART + 1, RLENGTH - 3) + 0 }
  match($0, /^\[[0-9]+\/[0-9]+\]/) { split(substr($0, 2, RLENGTH - 2), f, "/"); p = int(100 * f[1] / f[2]) }
  /Building|Linking/ { work = 1 }
  work && p >= next_step && p < 100 {
    if (!shown) printf "twinbit: building (log: %s)\n", logfile > "/dev/stderr"
    shown = 1; printf "twinbit:   %3d%%\n", p > "/dev/stderr"; next_step = (int(p / 10) + 1) * 10
  }
  END { if (shown) exit 3 }'
status=("${PIPESTATUS[@]}")
set -e
if [ "${status[0]}" -ne 0 ]; then
  grep -E "error|Error" "$log" | head -30 >&2 || true
  say "build failed (full log: $log)"
  exit 1
fi
[ "${status[2]}" -eq 3 ] && say "built in $((SECONDS - start)) s"
exit 0
