#!/bin/sh
# Builds the consumer against twinbit installed in $PREFIX, into $OUT: with CMake, and
# consumer.c alone with pkg-config. Run from tests/consumer/.
set -eu
cmake -S . -B "$OUT" -DCMAKE_PREFIX_PATH="$PREFIX"
cmake --build "$OUT"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
cc -std=c11 consumer.c $(pkg-config --cflags --libs twinbit) -o "$OUT/consumer_pc"
