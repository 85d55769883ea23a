#!/usr/bin/env bash
# The per-token table: time per decode step (M = 1) and per 32-token prefill step (M = 32) of a
# 28-layer q8 model under every placement `twinbit run-model` knows here, with the floor and peer
# ratios of the same run and one output hash per placement (docs/RUNTIME.md "run-model").
# Prints the machine, the commit and the command first, for docs/results/. Usage:
#   bench/per_token.sh <twinbit binary> <artifact (packed when missing)> [run-model args...]
# e.g. bench/per_token.sh build/bin/twinbit /tmp/model28.tbsc --steps 9 > per-token.txt
set -uo pipefail
tb=$1; art=$2; shift 2
if [ ! -e "$art" ]; then
  "$tb" pack --synthetic --layers 28 --prec q8 -o "$art" >&2 || exit 1
fi
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
if nvidia-smi -L >/dev/null 2>&1; then nvidia-smi -L | sed 's/^/gpu: /'; fi
echo "commit: $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "command: twinbit run-model $art $*"
"$tb" run-model "$art" "$@"
