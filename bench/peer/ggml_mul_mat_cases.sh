#!/usr/bin/env bash
# bench/peer/README.md says how to run ggml's test-backend-ops on these cases.
# MUL_MAT cases for ggml's test-backend-ops --test-file: q8_0 weights [K x N], f32 activations [K x M].
# Line: op type ne0..3 nparams srccount (type ne0..3 nb0..3)x2 name   (op 29 = MUL_MAT, type 8 = Q8_0)
for shape in "151936 2048" "12288 2048"; do
  set -- $shape; n=$1; k=$2; row=$((k / 32 * 34))
  for m in 1 2 4 8 16 32 64 128 256 512; do
    echo "29 0 $n $m 1 1 0 2 8 $k $n 1 1 34 $row $((row * n)) $((row * n)) 0 $k $m 1 1 4 $((4 * k)) $((4 * k * m)) $((4 * k * m)) -"
  done
done
