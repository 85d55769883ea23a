#!/usr/bin/env bash
# `twinbit pack`: its usage errors (exit 2, one clear line, nothing written), a model path that is
# no model, the same artifact bytes whether written to a file or streamed to stdout, and an
# interrupt (SIGINT) in the middle of writing that leaves no file at the target.
# Usage: tests/cli_pack.sh path/to/twinbit
set -uo pipefail
tb="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
pass() { echo "ok   $1"; }
bad() { echo "FAIL $1"; failures=$((failures + 1)); }
# expect_exit NAME CODE PATTERN CMD...: exactly exit CODE and PATTERN in stderr
expect_exit() {
  local n="$1" code="$2" pat="$3"; shift 3
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then bad "$n (exit $got, expected $code; stderr: $(head -c 300 "$dir/err"))"; return; fi
  if grep -qE -e "$pat" "$dir/err"; then pass "$n"; else bad "$n (stderr: $(head -c 300 "$dir/err"))"; fi
}
nothing_written() {
  if [ -e "$dir/x.tbsc" ] || ls -A "$dir" | grep -q twinbit-tmp; then bad "$1 left a file"; else pass "$1 left nothing"; fi
}

"$tb" pack --help >"$dir/out" 2>&1 && grep -q "Examples:" "$dir/out" && grep -q -- "--strict" "$dir/out" \
  && pass "pack --help has examples and the options" || bad "pack --help"

printf 'hello' >"$dir/text.bin"
printf 'GGUF\003\000\000\000' >"$dir/m.gguf"
expect_exit "no model, no --synthetic" 2 "nothing to pack" "$tb" pack -o "$dir/x.tbsc"
expect_exit "a model and --synthetic" 2 "not both" "$tb" pack "$dir/m.gguf" --synthetic -o "$dir/x.tbsc"
expect_exit "a missing model" 2 "nope.gguf: No such file" "$tb" pack "$dir/nope.gguf" -o "$dir/x.tbsc"
expect_exit "a file that is no model" 2 "neither a GGUF file .* first bytes are 68 65 6c 6c 6f" \
  "$tb" pack "$dir/text.bin" -o "$dir/x.tbsc"
expect_exit "a folder without an index" 2 "model.safetensors.index.json" "$tb" pack "$dir" -o "$dir/x.tbsc"
expect_exit "two precisions for a model" 2 "one precision" "$tb" pack "$dir/m.gguf" --prec q8,q4 -o "$dir/x.tbsc"
expect_exit "an unknown precision" 2 "q3" "$tb" pack "$dir/m.gguf" --prec q3 -o "$dir/x.tbsc"
expect_exit "an unknown fusion" 2 "qk" "$tb" pack "$dir/m.gguf" --fuse qk -o "$dir/x.tbsc"
expect_exit "an unreadable name map" 2 "--names .*cannot read" "$tb" pack "$dir/m.gguf" --names "$dir/none.map" -o "$dir/x.tbsc"
expect_exit "import options with --synthetic" 2 "apply to importing a MODEL" "$tb" pack --synthetic --strict -o "$dir/x.tbsc"
expect_exit "the output into a missing folder, before any work" 2 "no/x.tbsc" "$tb" pack "$dir/m.gguf" -o "$dir/no/x.tbsc"
expect_exit "the model as its own output" 2 "-o" "$tb" pack "$dir/m.gguf" -o "$dir/m.gguf"
nothing_written "refused packs"

# The streaming writer: the file and stdout (spooled payloads) carry the same bytes.
if "$tb" pack --synthetic --small --prec q4 -o "$dir/s.tbsc" >/dev/null 2>&1 &&
   "$tb" pack --synthetic --small --prec q4 -o - >"$dir/s-stdout.tbsc" 2>/dev/null &&
   cmp -s "$dir/s.tbsc" "$dir/s-stdout.tbsc"; then
  pass "pack to a file and to stdout: the same bytes"
else
  bad "pack to a file and to stdout differ"
fi
"$tb" info --verify "$dir/s.tbsc" >/dev/null 2>&1 && pass "the streamed artifact verifies" || bad "info --verify of the streamed artifact"
rm -f "$dir/s.tbsc" "$dir/s-stdout.tbsc"

# SIGINT while the full synthetic model (lm_head: tens of seconds) is being written. Job control
# on while it starts, so the background job does not inherit SIGINT ignored.
set -m
"$tb" pack --synthetic -o "$dir/x.tbsc" >/dev/null 2>"$dir/err" &
pid=$!
set +m
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] && pass "pack interrupted (exit $rc: SIGINT)" || bad "pack was not interrupted (exit $rc)"
nothing_written "an interrupted pack"

[ "$failures" -eq 0 ] && echo "all pack checks passed" || echo "$failures pack checks FAILED"
[ "$failures" -eq 0 ]
