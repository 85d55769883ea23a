#!/usr/bin/env bash
# The README's command examples, run for real against a fresh small artifact, plus the CLI's
# answers to bad input (one clear line on stderr, non-zero exit, no file left behind).
# Usage: tests/cli_examples.sh path/to/twinbit [example-plugin.so [broken-flip-bit-plugin.so]]
set -uo pipefail
tb="$1"
plugin="${2:-}"
broken_flip="${3:-}"
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
# expect_usage NAME PATTERN CMD...: exit 2 (a usage error) and PATTERN in stderr
expect_usage() {
  local n="$1" pat="$2" rc; shift 2
  "$@" >"$dir/out" 2>"$dir/err"; rc=$?
  if [ "$rc" != 2 ]; then bad "$n (exited $rc, expected 2; stderr: $(head -c 300 "$dir/err"))"; return; fi
  if grep -qE -- "$pat" "$dir/err"; then pass "$n"; else bad "$n (stderr: $(head -c 300 "$dir/err"))"; fi
}
# expect_exit NAME CODE PATTERN CMD...: exactly exit CODE and PATTERN in stderr
expect_exit() {
  local n="$1" code="$2" pat="$3"; shift 3
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then bad "$n (exit $got, expected $code; stderr: $(head -c 300 "$dir/err"))"; return; fi
  if grep -qE -e "$pat" "$dir/err"; then pass "$n"; else bad "$n (stderr: $(head -c 300 "$dir/err"))"; fi
}

expect_ok "help" "$tb" --help
grep -q "Exit status, for every command: 0 ok; 1 failed" "$dir/out" && pass "help states the exit codes" || bad "help: no exit-code policy"
expect_ok "--version" "$tb" --version
for f in "^twinbit [0-9]" "^commit: " "^build type: " "^CUDA backend: " "^CPU ISA: .* in use" "^backend ABI: "; do
  grep -qE "$f" "$dir/out" && pass "--version: $f" || bad "--version lacks $f: $(head -c 300 "$dir/out")"
done
for c in demo pack info run conformance check bench gate devices plan calibrate run-model; do
  expect_ok "help $c" "$tb" "$c" --help
  grep -q "^Examples:" "$dir/out" && pass "$c --help has examples" || bad "$c --help: no examples"
done
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
# The exhaustive level checks every column, even of a case far past the sampling budget.
expect_ok "conformance --sweep exhaustive, one large case" "$tb" conformance --backend cpu,isa=sse2 --sweep exhaustive --cases 0 --filter 'gemm_q4_i8_M64_N1000_K2048' -q --json "$dir/exh.json"
grep -q '"cases": 1,' "$dir/exh.json" && grep -q '"checked": "all 1000 columns"' "$dir/exh.json" \
  && pass "conformance exhaustive: all 1000 columns checked" || bad "conformance exhaustive sampled or missed its case"
if [ -n "$plugin" ]; then
  # Random cases only: the model shapes' sweep is ctest conformance_model_shapes' (and under
  # AddressSanitizer it costs minutes, drawing the vocabulary-sized weights). The plugin's kernels
  # are the scalar reference: under AddressSanitizer on two cores its largest case here (q8 f32
  # M2 N4674 K9716, called three times) ran past the default 60 s case limit, so a longer one.
  expect_ok "conformance on the example plugin" "$tb" conformance --plugin "$plugin" --sweep none --cases 30 --seed 4 --no-model-shapes --case-timeout 600 -q
fi
expect_ok "check attn entries cpu against cpu" "$tb" check "$dir/s.tbsc" --backend cpu --against cpu --m 1 --mode f32
for kind in "gemv_f32 48 x 5120" "gemv_f32_pair" "gdn_delta" "M 1, f32"; do
  grep -q "$kind.*0/[0-9]* differ" "$dir/out" && pass "check covers $kind" || bad "check has no equal '$kind' line"
done
# The RK3588-layout backend: i8 lines bit-equal, f32 and float ops reported unsupported with the reason.
expect_ok "check cpu against npu_layout" "$tb" check "$dir/s.tbsc" --backend cpu --against npu_layout --m 1,3 --mode f32,i8
grep -q "M 3, i8 *0/[0-9]* differ" "$dir/out" && pass "check npu_layout: i8 lines equal" || bad "check npu_layout: no equal i8 line"
grep -q "unsupported on npu_layout: .*takes no float activations" "$dir/out" && pass "check npu_layout: f32 unsupported with the reason" || bad "check npu_layout: f32 lines"
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
expect_exit "conformance --plugin without a '/': a path all the same (exit 1, not a usage error)" 1 "cannot load plugin 'libtwinbit_nope.so'" "$tb" conformance --plugin libtwinbit_nope.so
expect_exit "unknown command" 2 "unknown command 'frobnicate'" "$tb" frobnicate
expect_exit "mistyped command names the nearest" 2 "unknown command 'bnech'; did you mean 'bench'\?" "$tb" bnech --a cpu --b cpu
expect_exit "mistyped option names the nearest" 2 "unknown option '--rouds'; did you mean '--rounds'\?" "$tb" bench --a cpu --b cpu --rouds 3
expect_exit "missing required option: usage" 2 "--b is required" "$tb" bench --a cpu
expect_exit "bad choice: usage" 2 "mode" "$tb" bench --a cpu --b cpu --mode f16
expect_exit "no command: usage" 2 "subcommand" "$tb"
expect_exit "bench --m -5: usage, names M and the range" 2 "M = -5 is out of range \(expected 1 \.\. 16777216 rows\)" "$tb" bench --a cpu --b cpu --m -5
expect_exit "bench --m 99999999: usage, names M and the range" 2 "M = 99999999 is out of range \(expected 1 \.\. 16777216 rows\)" "$tb" bench --a cpu --b cpu --m 99999999
expect_exit "bench spec m=0: usage" 2 "m = 0 is out of range" "$tb" bench --a cpu:m=0 --b cpu
expect_exit "gate --m -5: usage, names M and the range" 2 "M = -5 is out of range \(expected 1 \.\. 16777216 rows\)" "$tb" gate --backend cpu --shape 64x64 --m -5
expect_exit "check --m 1,0: usage" 2 "M = 0 is out of range" "$tb" check "$dir/s.tbsc" --backend cpu --against cpu --m 1,0
expect_exit "bench at M 2^24: out of memory named, not an abort" 1 "RESOURCE_EXHAUSTED: .* need .*\([0-9]+ bytes\)" "$tb" bench --a cpu --b cpu --shape 16777216x16777216 --m 16777216
# A memory limit below what M = 65536 rows of attn_q need (1.2 GB): the size is named, exit 1.
# (Not under AddressSanitizer: its shadow memory cannot be reserved under ulimit -v.)
if [ -z "${ASAN_OPTIONS:-}" ]; then
expect_exit "run --m 65536 under ulimit -v: RESOURCE_EXHAUSTED with the size" 1 "RESOURCE_EXHAUSTED: .*M = 65536.* need .*\(1224736768 bytes\)" \
  bash -c 'ulimit -v 900000 && exec "$@"' _ "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 65536 -o "$dir/big.f32"
fi
[ ! -e "$dir/big.f32" ] && pass "no output file left by the refused run" || bad "the refused run left big.f32"
expect_exit "demo with a plugin that does not load: failure, not skipped" 1 "cannot load plugin" "$tb" demo --small --backends "$dir/nope.so" --cache "$dir/cache"
if [ -n "$broken_flip" ]; then
  expect_exit "bench: same gemm on A and B, outputs differ: exit 1" 1 "outputs differ" "$tb" bench --a cpu --b "$broken_flip" --shape 96x33 --m 3 --rounds 1 --warmup 0
  grep -q "1/99 differ" "$dir/out" && pass "bench prints the difference" || bad "bench output: $(cat "$dir/out")"
  expect_ok "bench: same gemm, equal outputs: exit 0" "$tb" bench --a cpu --b "$broken_flip" --shape 96x33 --m 2 --rounds 1 --warmup 0
fi
# The demo with a backend whose bits differ (exit 1) runs for a minute: ctest cli_demo_bits_differ.
expect_error "missing artifact" "cannot|No such file" "$tb" info "$dir/nope.tbsc"
head -c 1000 "$dir/s.tbsc" >"$dir/trunc.tbsc"
expect_error "truncated artifact" "DATA_LOSS|truncat" "$tb" info "$dir/trunc.tbsc"
expect_error "unknown backend" "unknown backend 'gpu0'" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend gpu0 -o "$dir/z.f32"
expect_error "unknown entry" "no entry 'nope'" "$tb" run "$dir/s.tbsc" --entry nope -o "$dir/z.f32"
expect_error "bad mode" "mode" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --mode f16 -o "$dir/z.f32"
expect_exit "bad M" 2 "M = 0 is out of range" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 0 -o "$dir/z.f32"
# Exit 77 (cannot run here): the CUDA backend is built but this machine has no usable device.
if "$tb" --help | grep -q "Built-in backends:.*cuda" && ! nvidia-smi -L >/dev/null 2>&1; then
  expect_exit "run on cuda without a device" 77 "UNAVAILABLE" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend cuda -o "$dir/z.f32"
  expect_exit "check against cuda without a device" 77 "UNAVAILABLE" "$tb" check "$dir/s.tbsc" --backend cpu --against cuda --entry attn_q.q8
fi
[ ! -e "$dir/z.f32" ] && pass "no output file left by failed runs" || bad "a failed run left z.f32"
expect_usage "pack into a missing folder" "no folder" "$tb" pack --synthetic --small -o "$dir/missing/x.tbsc"
ls "$dir"/missing* >/dev/null 2>&1 && bad "pack left something behind" || pass "failed pack left nothing"

# Output paths (artifacts/atomic_file.h): nothing at the path is destroyed, and a bad path is
# refused (exit 2) before any work.
grep -q "packing" "$dir/err" && bad "pack generated the model before refusing its path" || pass "pack refused the path before generating"
expect_usage "run: output into a missing folder, before opening the artifact" "-o: .*no folder" \
  "$tb" run "$dir/nope.tbsc" --entry attn_q.q8 -o "$dir/missing/y.f32"
expect_usage "conformance: --json into a missing folder" "--json: .*no folder" \
  "$tb" conformance --backend cpu --sweep quick --cases 20 -q --json "$dir/missing/c.json"
[ -s "$dir/out" ] && bad "conformance ran the suite before refusing its --json path" || pass "conformance refused --json before the suite"
expect_usage "conformance: --json and --junit the same file" "same file" \
  "$tb" conformance --backend cpu --sweep none --cases 1 -q --json "$dir/c2.json" --junit "$dir/c2.json"
cp "$dir/s.tbsc" "$dir/s-copy.tbsc"
expect_usage "run F -o F: the input is refused" "is the input" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 -o "$dir/s.tbsc"
cmp -s "$dir/s.tbsc" "$dir/s-copy.tbsc" && pass "run F -o F left the artifact unchanged" || bad "run F -o F changed the artifact"
rm -f "$dir/s-copy.tbsc"
expect_usage "run -o a folder" "is a folder" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 -o "$dir"
ln -s y.f32 "$dir/y-link.f32"
expect_ok "run -o a symlink" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 2 -o "$dir/y-link.f32"
[ -L "$dir/y-link.f32" ] && [ "$(stat -c %s "$dir/y.f32")" = $((2 * 2048 * 4)) ] \
  && pass "the symlink stays, its target is replaced" || bad "run -o a symlink"
mkfifo "$dir/fifo"
timeout 60 cat "$dir/fifo" >"$dir/from-fifo" &
reader=$!
expect_ok "run -o a FIFO with a reader" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 2 -o "$dir/fifo"
wait "$reader"
[ -p "$dir/fifo" ] && cmp -s "$dir/from-fifo" "$dir/y.f32" && pass "the FIFO streamed the output and stays a FIFO" || bad "run -o a FIFO"
ln -s /dev/null "$dir/null-link"
expect_ok "run -o a link to /dev/null" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 -o "$dir/null-link"
[ -L "$dir/null-link" ] && [ -c /dev/null ] && pass "/dev/null stays a character device" || bad "run -o /dev/null"
if "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 2 -o - >"$dir/stdout.f32" 2>"$dir/err" && cmp -s "$dir/stdout.f32" "$dir/y.f32" \
   && grep -q "wrote -" "$dir/err" && [ ! -e ./- ]; then pass "run -o - streams to stdout (its summary on stderr)"; else bad "run -o -"; fi
# /dev/stdout is a system symlink: only tried where a regression could not replace it (not root).
if [ "$(id -u)" != 0 ]; then
  "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --m 2 -o /dev/stdout >"$dir/stdout2.f32" 2>/dev/null \
    && cmp -s "$dir/stdout2.f32" "$dir/y.f32" && [ -L /dev/stdout ] && pass "run -o /dev/stdout" || bad "run -o /dev/stdout"
fi
"$tb" conformance --backend cpu --sweep none --cases 3 -q --json /dev/fd/1 >"$dir/conf-stdout.json" 2>/dev/null
head -c 1 "$dir/conf-stdout.json" | grep -q '{' && grep -q '"differ": 0' "$dir/conf-stdout.json" \
  && pass "conformance --json /dev/fd/1: stdout is the JSON alone" || bad "conformance --json /dev/fd/1"
# Backends named by a spec (docs/BACKENDS.md): one grammar everywhere, exact errors, devices listed.
expect_ok "devices" "$tb" devices
grep -qE '^cpu:0 ' "$dir/out" && grep -q 'features: gemm.q8' "$dir/out" && pass "devices lists cpu:0 with its features" || bad "devices output: $(head -c 300 "$dir/out")"
# A CUDA build on a machine without the NVIDIA driver says so, not the runtime's "driver version
# is insufficient" (the same words the runtime uses for a driver that is merely old).
if grep -q '^cuda .*not available here' "$dir/out"; then
  grep -q 'insufficient for CUDA runtime' "$dir/out" && bad "devices: the CUDA runtime's words for a missing driver" \
    || pass "devices: CUDA unavailable with a reason of its own ($(grep '^cuda' "$dir/out" | cut -c1-90))"
fi
expect_ok "devices --json" "$tb" devices --json
grep -q '"spec": "cpu:0"' "$dir/out" && pass "devices --json names cpu:0" || bad "devices --json output"
for c in run check conformance demo bench gate devices; do
  "$tb" "$c" --help 2>&1 | grep -q 'SPEC := NAME\[:DEVICE\]' && pass "$c --help shows the spec grammar" || bad "$c --help: no grammar"
done
expect_usage "demo --backend with a bad spec: usage, before any artifact is made" "backend spec 'cpu,threads'" "$tb" demo --small --backend "cpu,threads" --cache "$dir/democache"
[ -e "$dir/democache" ] && bad "demo made its artifact before refusing the spec" || pass "demo refused the spec first"
expect_usage "unknown backend name: usage, lists the built-ins" "unknown backend 'tpu' \(built in: cpu" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend tpu -o "$dir/yt.f32"
expect_usage "bad spec: usage, quotes it" "backend spec 'cpu,': a parameter between commas is empty" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend "cpu," -o "$dir/yt.f32"
expect_usage "reserved '+': usage, says why" "'\+' is reserved" "$tb" check "$dir/s.tbsc" --backend cpu --against "cpu+cpu"
expect_usage "unknown key: usage, quotes it and lists the keys" "unknown parameter 'thread=2' \(valid keys: threads, isa, prefetch_bytes, amx_schedule\)" "$tb" conformance --backend "cpu,thread=2" --sweep none --cases 1 -q
expect_usage "bad isa: usage, lists the tags" "isa=avx9 is not an instruction-set tag .*sse2" "$tb" gate --backend "cpu,isa=avx9" --shape 64x64
expect_exit "cpu:1: cannot run here (77), names the count" 77 "device 1 does not exist \(this machine has 1 device" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend cpu:1 -o "$dir/yt.f32"
expect_ok "conformance --backend cpu,isa=sse2,threads=1" "$tb" conformance --backend "cpu,isa=sse2,threads=1" --sweep none --cases 5 -q
grep -q 'sse2' "$dir/out" && pass "conformance report names isa sse2" || bad "conformance isa report: $(head -c 300 "$dir/out")"
expect_ok "conformance on two backends in one run" "$tb" conformance --backend "cpu,isa=sse2" --backend cpu --sweep none --cases 5 -q
[ "$(grep -c '^result: PASS' "$dir/out")" = 2 ] && pass "conformance: one report per backend" || bad "conformance two backends: $(head -c 300 "$dir/out")"
expect_usage "conformance: --json with two backends" "report on one backend" "$tb" conformance --backend cpu --backend "cpu,isa=sse2" --sweep none --cases 1 -q --json "$dir/two.json"
expect_ok "bench --a cpu,threads=1 --b cpu,isa=sse2: bits compared equal" "$tb" bench --a "cpu,threads=1" --b "cpu,isa=sse2" --shape 96x33 --m 3 --rounds 1 --warmup 0
grep -q "bit-identical" "$dir/out" && pass "bench compares the two cpu specs' bits" || bad "bench spec output: $(cat "$dir/out")"
expect_ok "bench --a-case / --b-case" "$tb" bench --a cpu --a-case m=2,prec=q4 --b cpu --b-case m=2,prec=q4,mode=i8 --shape 64x64 --rounds 1 --warmup 0
expect_usage "bench --a cpu:threads=8: usage, shows the comma form" "cpu,threads=8" "$tb" bench --a cpu:threads=8 --b cpu
TWINBIT_CPU_THREADS=0 "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend cpu -o "$dir/yt.f32" >"$dir/out" 2>"$dir/err"
[ $? = 2 ] && grep -q "threads=0 is not valid" "$dir/err" && grep -q "environment: TWINBIT_CPU_THREADS=0" "$dir/err" \
  && pass "TWINBIT_CPU_THREADS is a default of threads= and named when it is bad" || bad "env default: $(cat "$dir/err")"
TWINBIT_CPU_THREADS=0 "$tb" run "$dir/s.tbsc" --entry attn_q.q8 --backend cpu,threads=1 -o "$dir/yt.f32" >/dev/null 2>&1 \
  && pass "an explicit threads= wins over TWINBIT_CPU_THREADS" || bad "explicit param did not win"
TWINBIT_CPU_ARCH=sse2 "$tb" conformance --backend cpu --sweep none --cases 1 -q >"$dir/out" 2>&1
grep -q 'sse2)' "$dir/out" && pass "TWINBIT_CPU_ARCH is a default of isa=" || bad "TWINBIT_CPU_ARCH default: $(head -c 300 "$dir/out")"
# The runtime's plan: the threshold, overrides from the command line and a file (first match
# wins, the command line first), a column split, fallback, and exact errors.
expect_ok "plan with the default backend" "$tb" plan "$dir/s.tbsc" --m 1,32
grep -qE "^attn_k.q8 +1 .*cpu +threshold: 2\*M\*N\*K = 4.194e\+06 < 1e\+07" "$dir/out" && pass "plan: small call stays on the CPU" || bad "plan threshold: $(head -c 300 "$dir/out")"
printf '# split the fused FFN, the rest of the FFN on sse2\nffn_gate_up.*=cpu*0.25+cpu,isa=sse2*0.75\n\nffn_*=cpu,isa=sse2\n' >"$dir/rules.txt"
expect_ok "plan with overrides" "$tb" plan "$dir/s.tbsc" --backend cpu --backend cpu,isa=sse2 --overrides "$dir/rules.txt" --override ffn_down.q4=cpu --json
grep -q '"choice": "cpu\*0.25+cpu,isa=sse2\*0.75"' "$dir/out" && grep -q "rules.txt line 2" "$dir/out" && grep -q '"why": "override --override 1: ffn_down.q4=cpu"' "$dir/out" \
  && grep -q "rules.txt line 4: ffn_\*=cpu,isa=sse2" "$dir/out" && pass "plan: overrides, first match wins" || bad "plan overrides: $(head -c 300 "$dir/out")"
expect_ok "plan with fallback" "$tb" plan "$dir/s.tbsc" --backend null --override '*=null' --m 32
grep -q "fallback: null declined" "$dir/out" && pass "plan shows the fallback" || bad "plan fallback"
expect_usage "plan: malformed --override" "--override 1: 'attn_q.q8' is not PATTERN=TARGET" "$tb" plan "$dir/s.tbsc" --override attn_q.q8
expect_usage "plan: fractions must sum to 1" "fractions sum to 0.9" "$tb" plan "$dir/s.tbsc" --override 'attn_q.q8=cpu*0.4+cpu,isa=sse2*0.5' --backend cpu --backend cpu,isa=sse2
expect_usage "plan: unknown backend in an override" "backend 'cpu,isa=sse2' is not one of the runtime's backends" "$tb" plan "$dir/s.tbsc" --override 'attn_q.q8=cpu,isa=sse2'
expect_usage "plan: pattern matching nothing" "pattern 'lm_head.\*' matches no entry" "$tb" plan "$dir/s.tbsc" --override 'lm_head.*=cpu'
printf 'attn_q.q8=cpu\nnot a rule\n' >"$dir/bad_rules.txt"
expect_exit "plan: bad overrides file" 1 "bad_rules.txt line 2: 'not a rule'" "$tb" plan "$dir/s.tbsc" --overrides "$dir/bad_rules.txt"
# Calibration: a quick sweep of two CPU specs writes a profile; plan --profile predicts per
# backend and picks by it; bad profiles and uncovered backends are errors naming them.
expect_ok "calibrate --quick on two CPU specs" "$tb" calibrate --backend cpu --backend cpu,isa=sse2 --quick -o "$dir/prof.json"
grep -qE "^cpu,isa=sse2 +i8 +q4 " "$dir/out" && grep -q "profile written to $dir/prof.json" "$dir/out" && grep -q '"format": "twinbit-profile"' "$dir/prof.json" \
  && grep -qE "^calibrate: rep 3/3, shape 20/20 .* on cpu, cpu,isa=sse2$" "$dir/err" && pass "calibrate: the fitted table, the profile and progress lines" || bad "calibrate output: $(head -c 300 "$dir/out")"
expect_ok "plan --profile" "$tb" plan "$dir/s.tbsc" --backend cpu --backend cpu,isa=sse2 --profile "$dir/prof.json" --m 1,32
grep -qE "^attn_q.q8 +1 .* calibrated: cpu [0-9.]+ .s, cpu,isa=sse2 [0-9.]+ .s" "$dir/out" && pass "plan: predicted time per backend and the choice" || bad "plan --profile: $(head -c 400 "$dir/out")"
expect_ok "plan --profile --json" "$tb" plan "$dir/s.tbsc" --backend cpu --backend cpu,isa=sse2 --profile "$dir/prof.json" --json --override 'attn_q.*=cpu'
grep -q '"predicted_us": {' "$dir/out" && grep -q '"cpu,isa=sse2": [0-9]' "$dir/out" && grep -q '"predicted_choice_us": null' "$dir/out" \
  && pass "plan --json: predictions per backend" || bad "plan --profile --json: $(head -c 400 "$dir/out")"
expect_exit "plan: profile missing a backend" 1 "has no measurements for backend 'cpu,threads=1'; run twinbit calibrate --backend cpu,threads=1" \
  "$tb" plan "$dir/s.tbsc" --backend cpu --backend cpu,threads=1 --profile "$dir/prof.json"
sed 's/"version": 1/"version": 9/' "$dir/prof.json" >"$dir/prof9.json"
expect_exit "plan: profile of another version" 1 "field 'version' is 9" "$tb" plan "$dir/s.tbsc" --profile "$dir/prof9.json"
expect_usage "calibrate -o into a missing folder, before measuring" "there is no folder" "$tb" calibrate --quick -o "$dir/nowhere/p.json"
expect_usage "calibrate: bad backend spec" "threads=0" "$tb" calibrate --backend cpu,threads=0 --quick -o "$dir/p0.json"
expect_exit "calibrate on a device that is not here: 77" 77 "device 1 does not exist" "$tb" calibrate --backend cpu --backend cpu:1 --quick -o "$dir/p77.json"
[ ! -e "$dir/p77.json" ] && [ ! -e "$dir/p0.json" ] && pass "calibrate: no profile left by failed runs" || bad "calibrate left a profile"
expect_ok "calibrate --json to stdout" "$tb" calibrate --backend cpu --quick -o - --json
grep -q '"spec": "cpu"' "$dir/out" && pass "calibrate -o - --json prints the profile once" || bad "calibrate -o -: $(head -c 300 "$dir/out")"
[ "$(grep -c '"format"' "$dir/out")" = 1 ] && pass "calibrate: one profile on stdout" || bad "calibrate: profile printed twice"
chmod 600 "$dir/y.f32"
expect_ok "run -o a 0600 file" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 -o "$dir/y.f32"
[ "$(stat -c %a "$dir/y.f32")" = 600 ] && pass "the replaced file keeps mode 0600" || bad "mode not kept"
chmod 444 "$dir/y.f32"
expect_usage "run -o a read-only file" "read-only" "$tb" run "$dir/s.tbsc" --entry attn_q.q8 -o "$dir/y.f32"
[ "$(ls -A "$dir" | grep -c twinbit-tmp)" = 0 ] && pass "no temporaries left" || bad "temporaries left in $dir"

echo "$((failures == 0 ? 1 : 0)) passed, $failures failed" >/dev/null
[ "$failures" -eq 0 ]
