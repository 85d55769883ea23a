#!/usr/bin/env bash
# Every public header compiles alone: a C header as strict C11 and as C++20, a C++ header as C++20.
# Usage: tests/package/check_headers.sh CC CXX path/to/include
set -euo pipefail
cc=$1
cxx=$2
inc=$3
failed=0
n=0
for h in "$inc"/twinbit/*.h "$inc"/twinbit/*.hpp; do
  name=twinbit/$(basename "$h")
  # A declaration after it: a header of macros alone (export.h) would leave ISO C's forbidden
  # empty translation unit.
  src=$(printf '#include <%s>\ntypedef int twinbit_header_alone;\n' "$name")
  if [[ $h == *.h ]]; then
    echo "$src" | "$cc" -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c - ||
      { echo "FAIL: $name alone as C11"; failed=1; }
  fi
  echo "$src" | "$cxx" -std=c++20 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c++ - ||
    { echo "FAIL: $name alone as C++20"; failed=1; }
  n=$((n + 1))
done
[ $n -gt 0 ] || { echo "FAIL: no header under $inc/twinbit"; exit 1; }
[ $failed -eq 0 ] && echo "ok: $n public headers compile alone (C11 -pedantic for .h, C++20 for all)"
exit $failed
