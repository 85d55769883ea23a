#!/usr/bin/env bash
# twinbit-bench's answers to bad options: exit 2 (a usage error, as every twinbit command) and one
# line naming the option and the value; --help exits 0. Usage: tests/bench_usage.sh path/to/twinbit-bench
set -uo pipefail
bench="$1"
failures=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
expect_usage() {  # expect_usage PATTERN ARGS...
  local pat="$1" rc; shift
  "$bench" "$@" >/dev/null 2>"$err"; rc=$?
  if [ "$rc" != 2 ]; then echo "FAIL $* (exit $rc, expected 2)"; failures=$((failures + 1)); return; fi
  if grep -qE -- "$pat" "$err"; then echo "ok   $*"; else echo "FAIL $* (stderr: $(head -c 300 "$err"))"; failures=$((failures + 1)); fi
}
expect_usage "--amx-tuning: abc is not a tuning" --amx-tuning abc
expect_usage "--amx-tuning: 0x401 is not a tuning" --amx-tuning 0x101,0x401
expect_usage "--amx-tuning: 12x is not a tuning" --amx-tuning 12x
expect_usage "--pages: xx not in" --pages xx
expect_usage "--threads" --threads 0
expect_usage "not expected: --bogus" --bogus
if "$bench" --help | grep -q -- "--amx-tuning"; then echo "ok   --help names --amx-tuning"; else echo "FAIL --help"; failures=$((failures + 1)); fi
exit $((failures > 0))
