#!/usr/bin/env bash
# libtwinbit.so exports exactly the TWINBIT_API functions of the public C headers: no internal
# symbol (core, backends, the C++ standard library's instantiations) leaks into its ABI, and no
# API function is missing. Also checks the SONAME and that it can be dlopen-ed (no STATIC_TLS).
# Usage: tests/package/check_exports.sh path/to/libtwinbit.so exported_api.txt
set -euo pipefail
lib=$1
expected=$2
[ -s "$expected" ] || { echo "FAIL: $expected is empty: no TWINBIT_API function found in the headers"; exit 1; }
actual=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
if ! diff <(sort -u "$expected") <(echo "$actual") >/dev/null; then
  echo "FAIL: $lib exports other symbols than the TWINBIT_API functions"
  diff <(sort -u "$expected") <(echo "$actual") | sed -n '1,40p' | sed 's/^</missing:/; s/^>/unexpected:/'
  exit 1
fi
echo "ok: $lib exports exactly the $(wc -l <"$expected") TWINBIT_API functions"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != libtwinbit.so.0 ]; then
  echo "FAIL: SONAME is '$soname', expected libtwinbit.so.0"
  exit 1
fi
echo "ok: SONAME $soname"
# Loadable with dlopen (Python, ctypes, a plugin host): no initial-exec thread-locals, which would
# put every thread-local of the library - the CUDA runtime's 4 KiB page-aligned block included -
# into the static TLS surplus, where it does not fit ("cannot allocate memory in static TLS block").
if readelf -dW "$lib" | grep -q STATIC_TLS; then
  echo "FAIL: $lib is marked STATIC_TLS (an initial-exec thread_local): dlopen may refuse it"
  exit 1
fi
echo "ok: no STATIC_TLS flag (dlopen-able)"
