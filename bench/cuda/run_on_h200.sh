#!/usr/bin/env bash
# Runs the CUDA tests and the CUDA benchmark on a machine with the GPU, from a carried folder of
# stripped binaries (built elsewhere: see docs/results/cuda-*.md). Usage:
#   bench/cuda/run_on_h200.sh <folder with twinbit_tests, twinbit-bench, lib/> <output folder> [bench args...]
set -uo pipefail
bin=$1; out=$2; shift 2
export LD_LIBRARY_PATH=$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/device.txt"
date -u | tee -a "$out/device.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  "$bin/twinbit_tests" --requires-gpu --test-suite='gpu*' --no-version > "$out/tests.log" 2>&1
  echo "tests rc=$?" | tee -a "$out/tests.log"
  grep -E "SKIPPED|bit-identical|differ|ERROR|FAILED|test cases|assertions" "$out/tests.log" | head -40
fi
"$bin/twinbit-bench" --backend cuda --json "$out/bench.json" "$@" > "$out/bench.log" 2>&1
echo "bench rc=$?"
cat "$out/bench.log"
