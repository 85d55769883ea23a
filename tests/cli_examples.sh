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

# Real inputs: activations from a file (as captured from an engine), M = 32, then row r alone;
# row r of the M = 32 output must be byte-equal to the M = 1 output, in both activation modes.
# The activations are a synthetic run's output (32 rows of 2048 floats: attn_q's K).
K=2048; r=13
npy_header() {  # npy_header SHAPE: NumPy's version-1.0 header for '<f4' of SHAPE, 128 bytes
  printf '\x93NUMPY\x01\x00\x76\x00'
  printf "%-117s\n" "{'descr': '<f4', 'fortran_order': False, 'shape': $1, }"
}
"$tb" run "$dir/s.tbsc" --entry attn_o.q8 --m 32 --seed 9 -o "$dir/x32.f32" >/dev/null 2>&1
[ "$(stat -c %s "$dir/x32.f32")" = $((32 * K * 4)) ] && pass "activations for --input" || bad "activations for --input"
{ npy_header "(32, $K)"; cat "$dir/x32.f32"; } >"$dir/x32.npy"
dd if="$dir/x32.f32" of="$dir/xr.f32" bs=$((K * 4)) skip=$r count=1 status=none
{ npy_header "($K,)"; cat "$dir/xr.f32"; } >"$dir/xr.npy"
for mode in f32 i8; do
  for fmt in npy f32; do
    expect_ok "run --input x32.$fmt ($mode)" "$tb" run "$dir/s.tbsc" --entry attn_q.q4 --mode $mode --input "$dir/x32.$fmt" -o "$dir/y32.$fmt"
    expect_ok "run --input xr.$fmt, row $r alone ($mode)" "$tb" run "$dir/s.tbsc" --entry attn_q.q4 --mode $mode --input "$dir/xr.$fmt" -o "$dir/yr.$fmt"
  done
  tail -c +129 "$dir/y32.npy" | cmp -s - "$dir/y32.f32" && pass "y32.npy payload = y32.f32 ($mode)" || bad "y32.npy payload differs from y32.f32 ($mode)"
  dd if="$dir/y32.f32" bs=$((K * 4)) skip=$r count=1 status=none | cmp -s - "$dir/yr.f32" \
    && pass "row $r at M = 32 equals row $r alone, raw ($mode)" || bad "row $r at M = 32 differs from row $r alone, raw ($mode)"
  dd if="$dir/y32.npy" bs=4 skip=$(((128 + r * K * 4) / 4)) count=$K status=none | cmp -s - <(tail -c +129 "$dir/yr.npy") \
    && pass "row $r at M = 32 equals row $r alone, npy ($mode)" || bad "row $r at M = 32 differs from row $r alone, npy ($mode)"
done
if python3 -c 'import numpy' 2>/dev/null; then
  python3 -c 'import numpy as np, sys; y = np.load(sys.argv[1]); assert y.shape == (32, 2048) and y.dtype == np.float32, y.shape' "$dir/y32.npy" \
    && pass "y32.npy loads with numpy as (32, 2048) float32" || bad "y32.npy does not load with numpy"
else
  cmp -s <(head -c 128 "$dir/y32.npy") <(npy_header "(32, $K)") && pass "y32.npy header is NumPy's (32, 2048) '<f4'" || bad "y32.npy header"
fi
expect_error "run --input: K differs" "K is 6144" "$tb" run "$dir/s.tbsc" --entry ffn_down.q8 --input "$dir/x32.npy" -o "$dir/z.f32"
head -c 1000 "$dir/x32.f32" >"$dir/short.f32"
expect_error "run --input: not whole rows" "not a whole number of rows" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --input "$dir/short.f32" -o "$dir/z.f32"
{ printf '\x93NUMPY\x01\x00\x76\x00'; printf "%-117s\n" "{'descr': '<f8', 'fortran_order': False, 'shape': (1, $K), }"; head -c $((K * 8)) /dev/zero; } >"$dir/f8.npy"
expect_error "run --input: float64 refused" "dtype '<f8'" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --input "$dir/f8.npy" -o "$dir/z.f32"
head -c 5000 "$dir/x32.npy" >"$dir/cut.bin"
expect_error "run --input: truncated npy" "DATA_LOSS.*truncated" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --input "$dir/cut.bin" --input-format npy -o "$dir/z.f32"
expect_error "run --input with --m" "excludes" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --input "$dir/x32.npy" --m 4 -o "$dir/z.f32"

expect_ok "conformance on cpu (quick sweep + 20 random cases)" "$tb" conformance --backend cpu --sweep quick --cases 20 --seed 3 -q --json "$dir/conf.json" --junit "$dir/conf.xml"
grep -q '"differ": 0' "$dir/conf.json" && pass "conformance json: differ 0" || bad "conformance json"
if [ -n "$plugin" ]; then
  expect_ok "conformance on the example plugin" "$tb" conformance --plugin "$plugin" --sweep none --cases 30 --seed 4 -q
fi
expect_ok "check attn entries cpu against cpu" "$tb" check "$dir/s.tbsc" --backend cpu --against cpu --m 1 --mode f32
for kind in "gemv_f32 48 x 5120" "gemv_f32_pair" "gdn_delta" "M 1, f32"; do
  grep -q "$kind.*0/[0-9]* differ" "$dir/out" && pass "check covers $kind" || bad "check has no equal '$kind' line"
done
if [ -n "$plugin" ]; then
  expect_ok "check cpu against the example plugin" "$tb" check "$dir/s.tbsc" --backend cpu --against "$plugin" --m 1,3 --mode f32,i8
  grep -q "unsupported on .*q4 weights with int8" "$dir/out" && pass "check: plugin's unsupported q4/i8 reported" || bad "check: plugin's unsupported lines"
  expect_ok "run on the example plugin" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend "$plugin" --input "$dir/x32.npy" -o "$dir/yp.npy"
  "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --input "$dir/x32.npy" -o "$dir/yc.npy" >/dev/null 2>&1
  cmp -s "$dir/yp.npy" "$dir/yc.npy" && pass "run: plugin output = cpu output" || bad "run: plugin output differs from cpu"
fi
expect_error "run: missing plugin" "cannot load plugin|nope.so" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend "$dir/nope.so" -o "$dir/z.f32"
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
