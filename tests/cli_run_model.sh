#!/usr/bin/env bash
# `twinbit pack --layers` and `twinbit run-model` as a user runs them, on a 2-layer model without
# lm_head: equal hashes over two CPU placements (exit 0), a backend that flips one bit (exit 1,
# naming the placement), steps that do not repeat (exit 1), fallbacks shown, and bad options (exit 2).
# Usage: tests/cli_run_model.sh path/to/twinbit broken-first-element-plugin.so declines-at-call-plugin.so
#                               broken-second-call-plugin.so
set -uo pipefail
tb="$1"
broken="$2"
declines="$3"
second_call="$4"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
pass() { echo "ok   $1"; }
bad() { echo "FAIL $1"; failures=$((failures + 1)); }
# expect_exit NAME CODE PATTERN CMD...: exactly exit CODE and PATTERN in stdout or stderr
expect_exit() {
  local n="$1" code="$2" pat="$3"; shift 3
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then bad "$n (exit $got, expected $code; stderr: $(head -c 400 "$dir/err"))"; return; fi
  if grep -qE -e "$pat" "$dir/out" "$dir/err"; then pass "$n"; else bad "$n (no '$pat'; stderr: $(head -c 400 "$dir/err"))"; fi
}

m="$dir/l2.tbsc"
expect_exit "run-model --help has examples" 0 "Examples: twinbit pack --synthetic --layers 28" "$tb" run-model --help
expect_exit "pack --layers 2 --small" 0 "wrote .*: 16 entries" "$tb" pack --synthetic --layers 2 --small --prec q8 -o "$m"
"$tb" info "$m" >"$dir/info" 2>&1
grep -qE "^blk.1.attn_qkv.q8 .*blk.1.attn_q \[0, 2048\), blk.1.attn_k \[2048, 3072\), blk.1.attn_v \[3072, 4096\)" "$dir/info" \
  && grep -qE "^blk.1.ffn_gate_up.q8 .*blk.1.ffn_gate \[0, 6144\), blk.1.ffn_up \[6144, 12288\)" "$dir/info" \
  && ! grep -qE "^(lm_head|attn_q|blk.2)" "$dir/info" && pass "layered names and fused ranges" || bad "layered info: $(head -c 600 "$dir/info")"

for v in 0 513 -1 two; do
  expect_exit "pack --layers $v is a usage error" 2 "layers" "$tb" pack --synthetic --layers "$v" -o "$dir/bad.tbsc"
done

# Two CPU placements (all on the CPU, the split across two instruction sets): equal hashes.
expect_exit "run-model on the CPU placements" 0 "every placement gave the same hash" \
  "$tb" run-model "$m" --m 1,3 --mode f32,i8 --steps 2 --backend cpu
grep -qE "^cpu +f32 +3 " "$dir/out" && grep -qE "^floor: read on cpu +i8 +1 " "$dir/out" && grep -q "^skipped 'calibrated'" "$dir/out" && pass "run-model table and skipped list" || bad "run-model table: $(head -c 600 "$dir/out")"
if grep -q "^split cpu ISAs " "$dir/out"; then
  # The hash column of both placements at one mode and M is the same 16 hex digits.
  n=$(grep -E "^(cpu|split cpu ISAs) +i8 +3 " "$dir/out" | awk '{print $NF}' | sort -u | wc -l)
  [ "$n" = 1 ] && pass "cpu and the CPU split print one hash" || bad "hashes: $(grep -E ' i8 +3 ' "$dir/out")"
else
  grep -q "^skipped 'split cpu ISAs'" "$dir/out" && pass "one instruction set here: the split is listed as skipped" || bad "split neither ran nor skipped"
fi
expect_exit "run-model --json" 0 '"hashes_equal": true' "$tb" run-model "$m" --m 1 --mode i8 --steps 1 --backend cpu --json
grep -q '"ratio_floor"' "$dir/out" && grep -q '"placement": "floor: read on cpu"' "$dir/out" && pass "run-model --json has the floor and its ratio" || bad "json: $(head -c 300 "$dir/out")"

# The calibrated placement with a profile of `twinbit calibrate` (quick sweep), beside the threshold
# plan over the same two CPU backends: one hash for all.
expect_exit "calibrate --quick for run-model" 0 "profile written" "$tb" calibrate --backend cpu --backend cpu,isa=sse2 --quick -o "$dir/q.json"
expect_exit "run-model --profile: the calibrated placement runs" 0 "every placement gave the same hash" \
  "$tb" run-model "$m" --m 1 --mode i8 --steps 1 --backend cpu --backend cpu,isa=sse2 --profile "$dir/q.json"
grep -qE "^calibrated +i8 +1 " "$dir/out" && grep -qE "^threshold +i8 +1 " "$dir/out" && pass "calibrated and threshold rows" || bad "calibrated: $(head -c 600 "$dir/out")"
expect_exit "run-model: a profile that is not there" 1 "nope.json" "$tb" run-model "$m" --backend cpu --backend cpu,isa=sse2 --profile "$dir/nope.json"

# A backend that flips one bit of every gemm: its placement is named, exit 1.
expect_exit "run-model with a bit-flipping backend" 1 "not equal to 'cpu': 'all $broken'" \
  "$tb" run-model "$m" --m 1 --mode f32 --steps 1 --backend cpu --backend "$broken"
# A backend right on the warm-up and wrong after: every step must hash as the warm-up did.
expect_exit "run-model with a backend whose steps do not repeat" 1 "placement 'all $second_call' is not repeatable: step 1 hashed" \
  "$tb" run-model "$m" --m 1 --mode i8 --steps 1 --backend cpu --backend "$second_call"
# A backend that declines every call: it falls back to the CPU, the bits stay, the fallbacks show.
expect_exit "run-model with a declining backend" 0 "fallbacks of 'all $declines': 16 in all, on 8 entries" \
  "$tb" run-model "$m" --m 1 --mode f32 --steps 1 --backend cpu --backend "$declines"

expect_exit "run-model: bad mode" 2 "--mode: 'f16' is not a mode" "$tb" run-model "$m" --mode f16
expect_exit "run-model: bad M" 2 "M = 0 is out of range" "$tb" run-model "$m" --m 0
expect_exit "run-model: bad steps" 2 "steps" "$tb" run-model "$m" --steps 0
expect_exit "run-model: bad precision" 2 "prec" "$tb" run-model "$m" --prec q5
expect_exit "run-model: unknown backend" 2 "unknown backend 'gpu0'" "$tb" run-model "$m" --backend gpu0
expect_exit "run-model: precision not in the artifact" 1 "no model step at q4" "$tb" run-model "$m" --prec q4
expect_exit "run-model: missing artifact" 1 "nope.tbsc" "$tb" run-model "$dir/nope.tbsc"

echo "$failures failure(s)"
[ "$failures" = 0 ]
