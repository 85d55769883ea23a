#!/usr/bin/env bash
# The README's command examples, run for real against a fresh small artifact, plus the CLI's
# answers to bad input (one clear line on stderr, non-zero exit, no file left behind).
# Usage: tests/cli_examples.sh path/to/twinbit [path/to/example-plugin.so]
set -uo pipefail
tb="$1"
plugin="${2:-}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TWINBIT_CACHE="$dir/cache"
failures=0
pass() { echo "ok   $1"; }
bad() { echo "FAIL $1"; failures=$((failures + 1)); }
# expect_ok NAME CMD...: exit 0
expect_ok() { local n="$1"; shift; if "$@" >"$dir/out" 2>"$dir/err"; then pass "$n"; else bad "$n"; cat "$dir/err"; fi; }
# expect_error NAME PATTERN CMD...: non-zero exit and PATTERN in stderr
expect_error() {
  local n="$1" pat="$2"; shift 2
  if "$@" >"$dir/out" 2>"$dir/err"; then bad "$n (exited 0)"; return; fi
  if grep -qE "$pat" "$dir/err"; then pass "$n"; else bad "$n (stderr: $(head -c 300 "$dir/err"))"; fi
}

expect_ok "help" "$tb" --help
for c in demo pack info run conformance check bench gate; do expect_ok "help $c" "$tb" "$c" --help; done
expect_ok "pack --synthetic --small" "$tb" pack --synthetic --small -o "$dir/s.tbsc"
expect_ok "info --verify" "$tb" info --verify "$dir/s.tbsc"
grep -q "every checksum matches" "$dir/out" && pass "info --verify reports every checksum" || bad "info --verify output"
expect_ok "info --json" "$tb" info --json "$dir/s.tbsc"
expect_ok "run attn_q.q8 on cpu" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend cpu --m 3 -o "$dir/y.f32"
[ "$(stat -c %s "$dir/y.f32")" = $((3 * 2048 * 4)) ] && pass "run output size" || bad "run output size"

expect_ok "conformance on cpu (quick sweep + 20 random cases)" "$tb" conformance --backend cpu --sweep quick --cases 20 --seed 3 -q --json "$dir/conf.json" --junit "$dir/conf.xml"
grep -q '"differ": 0' "$dir/conf.json" && pass "conformance json: differ 0" || bad "conformance json"
if [ -n "$plugin" ]; then
  expect_ok "conformance on the example plugin" "$tb" conformance --plugin "$plugin" --sweep none --cases 30 --seed 4 -q
fi
expect_ok "check attn entries cpu against cpu" "$tb" check "$dir/s.tbsc" --backend cpu --against cpu --m 1 --mode f32
expect_error "conformance: unknown backend" "unknown backend" "$tb" conformance --backend tpu
expect_error "conformance: missing plugin" "cannot load plugin" "$tb" conformance --plugin "$dir/nope.so"
expect_error "unknown command" "" "$tb" frobnicate
expect_error "missing artifact" "cannot|No such file" "$tb" info "$dir/nope.tbsc"
head -c 1000 "$dir/s.tbsc" >"$dir/trunc.tbsc"
expect_error "truncated artifact" "DATA_LOSS|truncat" "$tb" info "$dir/trunc.tbsc"
expect_error "unknown backend" "unknown backend 'gpu0'" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend gpu0 -o "$dir/z.f32"
expect_error "unknown entry" "no entry 'nope'" "$tb" run "$dir/s.tbsc" --entry nope -o "$dir/z.f32"
expect_error "bad mode" "mode" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --mode f16 -o "$dir/z.f32"
expect_error "bad M" "out of range" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 0 -o "$dir/z.f32"
[ ! -e "$dir/z.f32" ] && pass "no output file left by failed runs" || bad "a failed run left z.f32"
expect_error "pack into a missing folder" "cannot|No such" "$tb" pack --synthetic --small -o "$dir/missing/x.tbsc"
ls "$dir"/missing* >/dev/null 2>&1 && bad "pack left something behind" || pass "failed pack left nothing"

echo "$((failures == 0 ? 1 : 0)) passed, $failures failed" >/dev/null
[ "$failures" -eq 0 ]
