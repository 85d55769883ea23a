#!/usr/bin/env bash
# ctest example_decode_loop: packs a committed model fixture with the CLI (q8 and q4), runs
# examples/decode_loop.c on it with two backends and requires the same stdout byte for byte (the
# entry list and every token's checksum) - also the default backend (a GPU where there is one)
# against the CPU - and a clear failure for a missing artifact.
# Usage: run_decode_loop.sh TWINBIT_CLI DECODE_LOOP MODEL
set -u
tb="$1"; loop="$2"; model="$3"
dir="$(mktemp -d)"; trap 'rm -rf "$dir"' EXIT
fails=0
pass() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

for prec in q8 q4; do
  if ! "$tb" pack "$model" --prec "$prec" -o "$dir/m.tbc" >/dev/null 2>"$dir/err"; then
    bad "pack $prec: $(head -c 300 "$dir/err")"; continue
  fi
  "$loop" "$dir/m.tbc" cpu 6 >"$dir/a" 2>"$dir/err_a" || bad "$prec: decode_loop on cpu: $(head -c 300 "$dir/err_a")"
  "$loop" "$dir/m.tbc" cpu,isa=sse2 6 >"$dir/b" 2>"$dir/err_b" || bad "$prec: decode_loop on cpu,isa=sse2: $(head -c 300 "$dir/err_b")"
  [ "$(grep -c '^token [0-9]* (\(f32\|i8\)): checksum [0-9a-f]\{16\}$' "$dir/a")" = 6 ] \
    && pass "$prec: six tokens, each with a checksum" || bad "$prec: not six checksums: $(cat "$dir/a")"
  grep -q "^entry blk.0.ffn_down.$prec: strips $prec" "$dir/a" && pass "$prec: the entries are listed" \
    || bad "$prec: no entry list"
  [ "$(sort -u <(grep '^token' "$dir/a" | cut -d' ' -f5) | wc -l)" -gt 1 ] && pass "$prec: tokens differ (outputs are fed back)" \
    || bad "$prec: every token has the same checksum"
  cmp -s "$dir/a" "$dir/b" && pass "$prec: cpu and cpu,isa=sse2 print the same bytes" \
    || bad "$prec: the backends disagree: $(diff "$dir/a" "$dir/b" | head -5)"
  # The default backend (a GPU where there is one) against the CPU, four tokens each.
  "$loop" "$dir/m.tbc" cpu >"$dir/c" 2>"$dir/err_c" || bad "$prec: decode_loop on cpu: $(head -c 300 "$dir/err_c")"
  "$loop" "$dir/m.tbc" >"$dir/d" 2>"$dir/err_d" && cmp -s "$dir/c" "$dir/d" \
    && pass "$prec: the default backend ($(tail -1 "$dir/err_d" | cut -c1-40)) prints the CPU's bytes" \
    || bad "$prec: default backend: $(head -c 300 "$dir/err_d") $(diff "$dir/c" "$dir/d" | head -5)"
done

"$loop" "$dir/none.tbc" cpu 1 >/dev/null 2>"$dir/err"
code=$?
[ "$code" = 1 ] && grep -q "none.tbc" "$dir/err" && pass "a missing artifact fails naming it" \
  || bad "a missing artifact: exit $code, $(head -c 300 "$dir/err")"
"$loop" >/dev/null 2>&1
[ $? = 2 ] && pass "no arguments: usage, exit 2" || bad "no arguments did not exit 2"

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
