#!/usr/bin/env bash
# The install stage of scripts/test.sh: installs a built tree into BUILD/prefix and uses it as a
# consumer would: the files of the package, tests/consumer (C against libtwinbit.so, C++ against
# libtwinbit.a, C again through pkg-config) bit-equal to the installed `twinbit run`, the
# components, and the null skeleton built out of tree as a plugin that the installed CLI loads.
# Usage: tests/package/install_check.sh [BUILD]   (default build; run from the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
prefix=$build/prefix
work=$build/install-check
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$prefix" "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for f in lib/libtwinbit.so lib/libtwinbit.so.0 lib/libtwinbit.a lib/libtwinbit_plugin_sdk.a \
         lib/cmake/twinbit/twinbitConfig.cmake lib/cmake/twinbit/twinbitConfigVersion.cmake \
         lib/cmake/twinbit/twinbitTargets.cmake lib/pkgconfig/twinbit.pc share/doc/twinbit/LICENSE; do
  [ -e "$prefix/$f" ] || fail "$f not installed"
done
if [ -x "$build/bin/twinbit" ]; then [ -x "$prefix/bin/twinbit" ] || fail "bin/twinbit not installed"; fi
# The public headers and nothing else: include/twinbit/ as in the source tree.
diff <(cd "$root/include/twinbit" && ls) <(cd "$prefix/include/twinbit" && ls) >/dev/null ||
  fail "installed headers differ from include/twinbit/: $(ls "$prefix/include/twinbit" | tr '\n' ' ')"
ok "installed into $prefix: libtwinbit.so (SONAME $(objdump -p "$prefix/lib/libtwinbit.so" | awk '$1 == "SONAME" {print $2}')), libtwinbit.a, plugin SDK, $(ls "$prefix/include/twinbit" | wc -l) headers, CMake package, twinbit.pc, LICENSE"
"$root/tests/package/check_exports.sh" "$prefix/lib/libtwinbit.so" "$build/package/exported_api.txt"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --validate twinbit || fail "twinbit.pc does not validate"
[ "$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion twinbit)" = \
  "$(awk -F'"' '/PACKAGE_VERSION "/ {print $2; exit}' "$prefix/lib/cmake/twinbit/twinbitConfigVersion.cmake")" ] ||
  fail "twinbit.pc and twinbitConfigVersion.cmake name different versions"
! grep -rqi "nlohmann\|CLI11\|Eigen" "$prefix/lib/cmake/twinbit" "$prefix/lib/pkgconfig" ||
  fail "the installed package refers to a build-time dependency: $(grep -rli 'nlohmann\|CLI11\|Eigen' "$prefix/lib/cmake/twinbit")"
ok "twinbit.pc validates (License: $(grep '^License:' "$prefix/lib/pkgconfig/twinbit.pc" | cut -d' ' -f2))"

# The library alone, through add_subdirectory: it configures without the CLI's and the tests'
# dependencies, and gives the same target names (alias targets) as the installed package.
mkdir -p "$work/subdirectory"
printf '%s\n' 'cmake_minimum_required(VERSION 3.24)' 'project(sub C CXX)' \
  "add_subdirectory($root twinbit)" "add_executable(consumer_c $root/tests/consumer/consumer.c)" \
  'target_link_libraries(consumer_c PRIVATE twinbit::twinbit)' \
  "add_executable(consumer_cpp $root/tests/consumer/consumer.cpp)" \
  'target_link_libraries(consumer_cpp PRIVATE twinbit::twinbit_static)' >"$work/subdirectory/CMakeLists.txt"
cmake -S "$work/subdirectory" -B "$work/subdirectory/b" -DTWINBIT_CLI=OFF -DTWINBIT_TESTS=OFF -DTWINBIT_BENCH=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=ON \
      >"$work/subdirectory.log" 2>&1 ||
  { tail -20 "$work/subdirectory.log"; fail "add_subdirectory with TWINBIT_CLI=OFF, without CLI11 and Eigen"; }
ok "add_subdirectory(twinbit) with TWINBIT_CLI=OFF TWINBIT_TESTS=OFF TWINBIT_BENCH=OFF configures without CLI11 and Eigen"

# The consumer: built with CMake and with pkg-config (tests/consumer/build.sh, quoted by README.md).
(cd "$root/tests/consumer" && PREFIX=$prefix OUT=$work/consumer ./build.sh) >"$work/consumer.log" 2>&1 ||
  { tail -30 "$work/consumer.log"; fail "building tests/consumer against $prefix"; }
ok "tests/consumer built against the prefix (CMake: C + shared, C++ + static; pkg-config: C)"
tb=$prefix/bin/twinbit
if [ ! -x "$tb" ]; then
  echo "skipped: the consumer runs (no installed CLI to make an artifact: TWINBIT_CLI=OFF)"
  exit 0
fi
"$tb" pack --synthetic --small --prec q8 -o "$work/model.tbsc" >/dev/null 2>&1
entry=attn_q.q8
"$work/consumer/consumer_c" "$work/model.tbsc" $entry "$work/x.f32" "$work/y_c.f32"
"$tb" run "$work/model.tbsc" --entry $entry --input "$work/x.f32" -o "$work/y_cli.f32" >/dev/null
cmp "$work/y_c.f32" "$work/y_cli.f32" || fail "consumer_c (f32) differs from twinbit run"
ok "consumer_c (libtwinbit.so, f32) = twinbit run, byte for byte ($(stat -c %s "$work/y_c.f32") bytes)"
"$work/consumer/consumer_cpp" "$work/model.tbsc" $entry "$work/x.f32" "$work/y_cpp.f32"
"$tb" run "$work/model.tbsc" --entry $entry --mode i8 --input "$work/x.f32" -o "$work/y_cli_i8.f32" >/dev/null
cmp "$work/y_cpp.f32" "$work/y_cli_i8.f32" || fail "consumer_cpp (i8) differs from twinbit run --mode i8"
ok "consumer_cpp (libtwinbit.a, i8) = twinbit run --mode i8, byte for byte"
LD_LIBRARY_PATH=$prefix/lib "$work/consumer/consumer_pc" "$work/model.tbsc" $entry "$work/x.f32" "$work/y_pc.f32" >/dev/null
cmp "$work/y_pc.f32" "$work/y_c.f32" || fail "consumer_pc differs from consumer_c"
ok "consumer.c built with pkg-config = the CMake build's output"
# Libs.private is what a static link needs: consumer.c against libtwinbit.a, named explicitly
# (both libraries are in libdir, and the linker prefers the shared one).
static_flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --static --cflags --libs twinbit | sed 's/-ltwinbit\b/-l:libtwinbit.a/')
cc -std=c11 "$root/tests/consumer/consumer.c" $static_flags -o "$work/consumer_static" ||
  fail "consumer.c does not link statically with pkg-config --static ($static_flags)"
"$work/consumer_static" "$work/model.tbsc" $entry "$work/x.f32" "$work/y_static.f32" >/dev/null
cmp "$work/y_static.f32" "$work/y_c.f32" || fail "consumer.c linked statically differs from consumer_c"
ok "consumer.c linked statically with pkg-config --static = the shared build's output"

# Components: the backends built in are found, one that is not is refused.
mkdir -p "$work/components"
printf 'cmake_minimum_required(VERSION 3.24)\nproject(c C)\nfind_package(twinbit CONFIG REQUIRED COMPONENTS ${WANT})\n' \
  >"$work/components/CMakeLists.txt"
backends=$(sed -n 's/^set(twinbit_BACKENDS "\(.*\)")/\1/p' "$prefix/lib/cmake/twinbit/twinbitConfig.cmake")
case ";$backends;" in *";cpu;"*) ;; *) fail "the package lists no cpu backend ($backends)";; esac
cmake -S "$work/components" -B "$work/components/b" -DCMAKE_PREFIX_PATH="$prefix" -DWANT="$backends" >/dev/null 2>&1 ||
  fail "find_package(twinbit COMPONENTS $backends) failed"
rm -rf "$work/components/b"
if cmake -S "$work/components" -B "$work/components/b" -DCMAKE_PREFIX_PATH="$prefix" -DWANT=npu >/dev/null 2>&1; then
  fail "find_package(twinbit COMPONENTS npu) succeeded without an npu backend"
fi
ok "components: every backend built in found ($backends), npu refused"

# The plugin SDK: the null skeleton built out of tree, loaded by the installed CLI.
cmake -S "$root/tests/plugin_out_of_tree" -B "$work/plugin" -DCMAKE_PREFIX_PATH="$prefix" >"$work/plugin.log" 2>&1 &&
  cmake --build "$work/plugin" >>"$work/plugin.log" 2>&1 || { tail -30 "$work/plugin.log"; fail "building tests/plugin_out_of_tree"; }
plugin=$work/plugin/libnull_plugin.so
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | tr '\n' ' ')
[ "$exported" = "tb_backend_create_v1 " ] || fail "the plugin exports '$exported', not only tb_backend_create_v1"
ok "the out-of-tree null plugin exports only tb_backend_create_v1"
"$tb" conformance --plugin "$plugin" --seed 1 --sweep quick --cases 20 >"$work/conformance.out" 2>&1 ||
  { tail -20 "$work/conformance.out"; fail "twinbit conformance --plugin (the null plugin)"; }
grep -q "^  backend *null (plugin $plugin)" "$work/conformance.out" &&
  grep -Eq "^totals: ([0-9]+) cases: 0 equal, 0 differ, \1 unsupported \(0 without an exact fallback\)" "$work/conformance.out" ||
  { tail -20 "$work/conformance.out"; fail "the null plugin's cases were not all UNIMPLEMENTED with an exact fallback"; }
ok "twinbit conformance --plugin libnull_plugin.so: loaded, every case UNIMPLEMENTED and run on the fallback"
