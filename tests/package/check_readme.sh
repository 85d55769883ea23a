#!/usr/bin/env bash
# README.md's examples are files that the install stage builds and runs: every fenced block
# preceded by a line `<!-- PATH -->` must equal the file PATH, so the README cannot drift from
# what is tested. At least the four blocks of "Use from C/C++" must be there.
# Usage: tests/package/check_readme.sh path/to/repository
set -euo pipefail
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
  /^<!-- [^ ]+ -->$/ { path = $2; next }
  path != "" && /^```/ && !inside { inside = 1; n++; out = dir "/" n; printf "" > out; print path > (out ".path"); next }
  inside && /^```$/ { inside = 0; path = ""; close(out); next }
  inside { print > out; next }
  { path = "" }
' "$root/README.md"
n=0
failed=0
for block in "$tmp"/*.path; do
  [ -e "$block" ] || continue
  path=$(cat "$block")
  if cmp -s "${block%.path}" "$root/$path"; then
    n=$((n + 1))
  else
    echo "FAIL: README.md's block quoting $path differs from the file:"
    diff "${block%.path}" "$root/$path" | head -10 || true
    failed=1
  fi
done
[ $failed -eq 0 ] || exit 1
[ $n -ge 4 ] || { echo "FAIL: README.md quotes $n files (expected the 4 of \"Use from C/C++\")"; exit 1; }
echo "ok: README.md's $n quoted files equal tests/consumer and tests/plugin_out_of_tree"
