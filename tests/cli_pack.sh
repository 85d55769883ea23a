#!/usr/bin/env bash
# `twinbit pack`: its usage errors (exit 2, one clear line, nothing written), a model path that is
# no model, the committed model fixtures imported end to end (verify, run, check), --strict and
# truncated models refused with nothing written, the same artifact bytes whether written to a file
# or streamed to stdout, and an interrupt (SIGINT) in the middle of writing that leaves no file at
# the target.
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

# Importing the committed model fixtures: each packed at q8 and q4, with and without the fused
# entries, verifies, runs one entry and checks the CPU against another of its ISAs.
fx="$(cd "$(dirname "$0")" && pwd)/fixtures/import"
for model in tiny_llama.gguf hf_f32.safetensors hf_f16.safetensors hf_bf16.safetensors \
             tied_bf16.safetensors vl_f16.safetensors sharded; do
  for prec in q8 q4; do
    for fuse in "" "--fuse qkv,gate_up"; do
      n="pack $model --prec $prec${fuse:+ $fuse}"
      # shellcheck disable=SC2086
      if ! "$tb" pack "$fx/$model" --prec "$prec" $fuse -o "$dir/m.tbsc" >"$dir/out" 2>"$dir/err"; then
        bad "$n (stderr: $(head -c 300 "$dir/err"))"; continue
      fi
      grep -q "^wrote .*entries" "$dir/out" && pass "$n" || bad "$n: no summary"
      "$tb" info --verify "$dir/m.tbsc" >/dev/null 2>"$dir/err" && pass "$n: info --verify" \
        || bad "$n: info --verify ($(head -c 300 "$dir/err"))"
      if [ -n "$fuse" ]; then entry="blk.0.attn_qkv.$prec"; else entry="blk.0.ffn_down.$prec"; fi
      "$tb" run "$dir/m.tbsc" --entry "$entry" --backend cpu --m 3 -o "$dir/y.f32" >/dev/null 2>"$dir/err" \
        && [ -s "$dir/y.f32" ] && pass "$n: run $entry" || bad "$n: run $entry ($(head -c 300 "$dir/err"))"
      "$tb" check "$dir/m.tbsc" --backend cpu --against cpu,isa=sse2 --m 1,3 >/dev/null 2>"$dir/err" \
        && pass "$n: check cpu against cpu,isa=sse2" || bad "$n: check ($(head -c 300 "$dir/err"))"
      rm -f "$dir/m.tbsc" "$dir/y.f32"
    done
  done
done

# The summary lists what was left out, and the tied embedding became lm_head.
"$tb" pack "$fx/tiny_llama.gguf" -o "$dir/m.tbsc" >"$dir/out" 2>&1
grep -q "skipped .*token_embd.weight" "$dir/out" && grep -q "skipped .*blk.0.attn_norm.weight" "$dir/out" \
  && pass "the summary lists the skipped embedding and norms" || bad "summary: $(head -c 600 "$dir/out")"
# A tensor also stacked into a fused entry is counted once in the summary's first line.
"$tb" pack "$fx/tiny_llama.gguf" --fuse qkv,gate_up -o "$dir/m.tbsc" >"$dir/out" 2>&1
grep -q "19 entries from 15 tensors (4 re-tiled losslessly, 4 quantised, 7 converted), 83.7 KB in" "$dir/out" \
  && pass "the fused summary counts each tensor once" || bad "fused summary: $(grep wrote "$dir/out")"
# The runtime takes an imported model as it takes the synthetic one: run-model finds the step's
# projections (blk.L.attn_qkv ... lm_head) by the per-layer names and every placement agrees.
"$tb" run-model "$dir/m.tbsc" --m 1,3 --steps 1 >"$dir/out" 2>"$dir/err" \
  && grep -q "every placement gave the same hash" "$dir/out" \
  && pass "run-model on an imported model" || bad "run-model on an imported model ($(head -c 300 "$dir/err"))"
"$tb" pack "$fx/tied_bf16.safetensors" -o "$dir/m.tbsc" >"$dir/out" 2>&1
grep -q "lm_head" "$dir/out" && grep -qi "tied\|embedding" "$dir/out" \
  && pass "a tied embedding is packed as lm_head, and said so" || bad "tied: $(head -c 600 "$dir/out")"
"$tb" pack "$fx/tiny_llama.gguf" --json -o "$dir/m.tbsc" >"$dir/out" 2>/dev/null
grep -q '"skipped"' "$dir/out" && grep -q '"how": "retiled"' "$dir/out" \
  && pass "pack --json: tensors and skipped" || bad "pack --json: $(head -c 300 "$dir/out")"
rm -f "$dir/m.tbsc"

# --strict refuses tiny_llama (its Q4_0 at q8, its K-quants), naming a tensor and its type; a
# name map that leaves only the K-quant projections makes it name one of those. Nothing written.
expect_exit "--strict refuses a converted tensor" 1 "--strict: tensor 'blk\.0\.attn_k\.weight' \(Q4_0\)" \
  "$tb" pack "$fx/tiny_llama.gguf" --strict -o "$dir/x.tbsc"
printf 'blk.*.attn_*=-\nblk.*.ffn_gate.weight=-\nblk.*.ffn_up.weight=-\noutput.weight=-\n' >"$dir/kq.map"
expect_exit "--strict refuses a K-quant tensor" 1 "--strict: tensor 'blk\.0\.ffn_down\.weight' \(Q4_K\)" \
  "$tb" pack "$fx/tiny_llama.gguf" --strict --names "$dir/kq.map" -o "$dir/x.tbsc"
rm -f "$dir/kq.map"
printf 'blk.*.attn_q.weight=blk.*.attn_q\nnonsense\n' >"$dir/bad.map"
expect_exit "a malformed name map, quoted with its line" 1 "bad.map:2: 'nonsense' is not SOURCE_NAME_OR_GLOB=ENTRY" \
  "$tb" pack "$fx/tiny_llama.gguf" --names "$dir/bad.map" -o "$dir/x.tbsc"
rm -f "$dir/bad.map"
nothing_written "a malformed name map"
nothing_written "a --strict refusal"

# A truncated model: exit 1 with the reader's message, no output file.
head -c 50000 "$fx/tiny_llama.gguf" >"$dir/cut.gguf"
expect_exit "a truncated GGUF" 1 "DATA_LOSS: .*cut.gguf: tensor .* past the end" "$tb" pack "$dir/cut.gguf" -o "$dir/x.tbsc"
nothing_written "a truncated GGUF"
head -c 40000 "$fx/hf_f32.safetensors" >"$dir/cut.safetensors"
expect_exit "a truncated safetensors file" 1 "DATA_LOSS: .*cut.safetensors: tensor .* past the data section" "$tb" pack "$dir/cut.safetensors" -o "$dir/x.tbsc"
nothing_written "a truncated safetensors file"
rm -f "$dir/cut.gguf" "$dir/cut.safetensors"

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
