#!/usr/bin/env bash
# `twinbit conformance` v2 for a porter: --explain names the deviation a backend makes (one test
# backend per deviation kind), the default sweeps catch a backend wrong only at the target model's
# N = K = 2048, --dump writes loadable .npy files, --support lists claims, and the random
# generator is versioned.
# Usage: tests/cli_explain.sh path/to/twinbit path/to/libtwinbit_deviant_plugin.so
set -uo pipefail
tb="$1"
deviant="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
pass() { echo "ok   $1"; }
bad() { echo "FAIL $1"; failures=$((failures + 1)); }

# explain DEVIATION CASE WANT: the deviant backend differs on CASE (exit 1) and the explanation
# names exactly WANT as what reproduces its bits.
explain() {
  local dev="$1" case="$2" want="$3" rc
  TWINBIT_TEST_DEVIATION="$dev" "$tb" conformance --plugin "$deviant" --explain "$case" >"$dir/out" 2>"$dir/err"
  rc=$?
  local got
  got=$(sed -n 's/^  reproduced by: //p' "$dir/out")
  if [ "$rc" = 1 ] && [ "$got" = "$want" ]; then
    pass "--explain names $want for the $dev backend ($case)"
  else
    bad "--explain $dev $case: exit $rc, reproduced by '$got', wanted '$want': $(cat "$dir/out" "$dir/err" | head -c 1500)"
  fi
}
explain unfused         gemm_q8_f32_M3_N33_K96         unfused
explain flush_to_zero   gemm_q4_i8_M3_N33_K96          flush_to_zero
explain tree_fold       gemm_q8_f32_M1_N1024_K2048     tree_fold
explain tree_fold_lanes gemm_q4_f32_M3_N33_K96         tree_fold
explain split_plan      gemm_q8_f32_M1_N1024_K2048     split_plan
explain split_plan      gemm_q4_i8_M1_N2048_K6144      split_plan
explain i8_scale_order  gemm_q8_i8_M1_N1024_K2048      i8_scale_order
explain round_half_away quantize_i8_M3_K2049           round_half_away
explain flush_to_zero   gemm_q8_f32_M3_N33_K96_subnormal flush_to_zero
# The exact backend's case has nothing to explain (exit 0), and a deviation the case cannot show
# (round-half-away in a gemm: the gemm takes quantised activations) leaves it equal too.
TWINBIT_TEST_DEVIATION=round_half_away "$tb" conformance --plugin "$deviant" --explain gemm_q8_i8_M3_N33_K96 >"$dir/out" 2>&1 \
  && grep -q "nothing to explain" "$dir/out" && pass "--explain on an equal case: nothing to explain" \
  || bad "--explain on an equal case: $(head -c 600 "$dir/out")"
# --explain after a run: every differing case gets an explanation block.
TWINBIT_TEST_DEVIATION=unfused "$tb" conformance --plugin "$deviant" --sweep quick --cases 0 \
  --filter 'gemm_*_M3_*' --explain -q >"$dir/out" 2>&1
rc=$?
ndiff=$(grep -c '^DIFFER ' "$dir/out" || true)
nexp=$(grep -cE '^  reproduced by: (.*, )?unfused(,.*)?$' "$dir/out" || true)
[ "$rc" = 1 ] && [ "$nexp" -ge 1 ] && [ "$nexp" = "$ndiff" ] && [ "$nexp" = "$(grep -c '^explain ' "$dir/out")" ] \
  && pass "--explain after a run: $nexp differing cases, each reproduced by unfused (among others where they coincide)" \
  || bad "--explain after a run: exit $rc, $nexp explained ($ndiff differ lines): $(head -c 1500 "$dir/out")"
"$tb" conformance --explain no_such_case >"$dir/out" 2>"$dir/err"
[ $? = 2 ] && grep -q "no case named 'no_such_case'" "$dir/err" && pass "--explain of an unknown case: usage error" \
  || bad "--explain unknown case: $(head -c 300 "$dir/err")"

# The quick sweep catches a backend that flushes subnormals in its float paths, on the subnormal
# family's cases (the standard inputs' subnormals are rounded away beside normal terms), and the
# CPU backend gives the reference's bits on them.
TWINBIT_TEST_DEVIATION=flush_to_zero "$tb" conformance --plugin "$deviant" --sweep quick --cases 0 \
  --filter '*_subnormal' -q >"$dir/out" 2>&1
rc=$?
nsub=$(grep -cE '^DIFFER +(gemm_q[48]_f32_|gemv_f32_|gdn_delta_)[A-Z0-9_]*_subnormal:' "$dir/out" || true)
[ "$rc" = 1 ] && [ "$nsub" = 4 ] && pass "quick sweep: the flush-to-zero backend differs on all 4 subnormal cases (F32 gemm, gemv_f32, gdn_delta)" \
  || bad "flush_to_zero on the subnormal cases: exit $rc, $nsub differ: $(grep -E '^[A-Z]+ |result' "$dir/out" | head -c 1200)"
"$tb" conformance --backend cpu --sweep quick --cases 0 --filter '*_subnormal' -q >"$dir/out" 2>&1 \
  && grep -qE '^result: PASS' "$dir/out" && pass "the CPU backend passes the subnormal cases" \
  || bad "cpu on the subnormal cases: $(head -c 1200 "$dir/out")"

# The default sweeps catch a backend wrong only at N = K = 2048 (the CPU backend underneath).
TWINBIT_TEST_DEVIATION=wrong_at_2048 "$tb" conformance --plugin "$deviant" --sweep quick --cases 50 -q >"$dir/out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -qE '^DIFFER +gemm_q[48]_(f32|i8)_M(1|32)_N2048_K2048:' "$dir/out" \
   && ! grep -E '^[A-Z]+ ' "$dir/out" | grep -vE '^DIFFER +gemm_q[48]_(f32|i8)_M(1|32)_N2048_K2048:' | grep -qv '^UNSUPPORTED'; then
  pass "quick sweep catches the wrong-at-2048 backend, and only there"
else
  bad "wrong_at_2048 quick: exit $rc: $(grep -E '^[A-Z]+ |result' "$dir/out" | head -c 1200)"
fi
grep -qE '^result: FAIL \([0-9]+ of [0-9]+ cases ran on the backend\)' "$dir/out" \
  && pass "the verdict says how many cases ran on the backend" || bad "no 'N of M cases ran' beside the verdict"

# --dump: .npy files numpy (or, without numpy, a header parser) loads, and case.json.
if "$tb" conformance --dump gemm_q4_i8_M3_N33_K96 "$dir/dump" >"$dir/out" 2>"$dir/err"; then
  if python3 - "$dir/dump" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
meta = json.load(open(os.path.join(d, "case.json")))
assert meta["case"] == "gemm_q4_i8_M3_N33_K96" and meta["nsplit"] == 1, meta
want = {"w_codes": ("|i1", [33, 96]), "w_scales": ("<f4", [33, 3]), "x": ("<f4", [3, 96]),
        "xq": ("|i1", [3, 96]), "xd": ("<f4", [3, 3]), "columns": ("<i8", [33]),
        "y_expected": ("<f4", [3, 33])}
try:
    import numpy as np
except ImportError:
    np = None
for name, (dtype, shape) in want.items():
    path = os.path.join(d, name + ".npy")
    assert meta["files"][name + ".npy"]["shape"] == shape, name
    if np is not None:
        a = np.load(path)
        assert a.dtype == np.dtype(dtype) and list(a.shape) == shape, (name, a.dtype, a.shape)
        continue
    b = open(path, "rb").read()
    assert b[:8] == b"\x93NUMPY\x01\x00", name
    hlen = struct.unpack("<H", b[8:10])[0]
    head = eval(b[10:10 + hlen].decode("latin1"))
    assert (10 + hlen) % 64 == 0 and head["descr"] == dtype and list(head["shape"]) == shape, (name, head)
    size = {"|i1": 1, "<f4": 4, "<i8": 8}[dtype]
    assert len(b) == 10 + hlen + size * shape[0] * (shape[1] if len(shape) > 1 else 1), name
print("numpy" if np is not None else "header parser")
PY
  then pass "--dump: every .npy loads with the recorded dtype and shape"; else bad "--dump files"; fi
else
  bad "--dump: $(head -c 300 "$dir/err")"
fi
before=$(md5sum "$dir/dump/case.json" 2>/dev/null)
"$tb" conformance --dump gemm_q4_i8_M3_N33_K96 "$dir/dump" >"$dir/out" 2>"$dir/err"
[ $? = 1 ] && grep -q "already exists" "$dir/err" && [ "$(md5sum "$dir/dump/case.json")" = "$before" ] \
  && pass "--dump into a directory holding a dump: refused, nothing replaced" || bad "--dump twice: $(head -c 300 "$dir/err")"
"$tb" conformance --dump gdn_delta_VH2_KH1_KD3_VD5 "$dir/dump2" >"$dir/out" 2>"$dir/err"
[ $? = 1 ] && grep -q "only gemm and quantize_i8" "$dir/err" && [ ! -e "$dir/dump2/case.json" ] \
  && pass "--dump of a gdn case: refused, nothing written" || bad "--dump gdn: $(head -c 300 "$dir/err")"

# --support: text and JSON.
"$tb" conformance --backend cpu --support --json "$dir/support.json" >"$dir/out" 2>&1 \
  && python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['report']=='twinbit-support' and len(j['probes'])>=40" "$dir/support.json" \
  && grep -q '^gemm q8 f32 ' "$dir/out" && pass "--support: text and JSON" || bad "--support: $(head -c 600 "$dir/out")"

# The generator: version in the report, 1 and 2 give different random lists.
"$tb" conformance --sweep none --cases 20 --seed 5 --generator 1 --json "$dir/g1.json" -q >/dev/null 2>&1
"$tb" conformance --sweep none --cases 20 --seed 5 --json "$dir/g2.json" -q >/dev/null 2>&1
python3 - "$dir/g1.json" "$dir/g2.json" <<'PY' && pass "generator version in the JSON report; 1 and 2 differ" || bad "generator versions"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["generator"] == 1 and b["generator"] == 2
assert [c["name"] for c in a["cases"]] != [c["name"] for c in b["cases"]]
PY
"$tb" conformance --generator 3 >/dev/null 2>"$dir/err"
[ $? = 2 ] && pass "--generator 3: usage error" || bad "--generator 3 accepted"

[ "$failures" = 0 ] && echo "all passed" || echo "$failures failed"
exit $((failures > 0))
