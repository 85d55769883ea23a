# The numerics contract (docs/NUMERICS.md) needs the compiler to perform exactly the written
# float operations: no contraction of a*b+c into an fma, no reassociation, no flush-to-zero.
# Every twinbit target calls twinbit_numerics(); a canary test (tests/test_core_numerics.cpp, "canary: ...") fails if
# contraction sneaks back in.
set(TWINBIT_HOST_NUMERICS_FLAGS -ffp-contract=off -fno-fast-math -fno-unsafe-math-optimizations)
set(TWINBIT_CUDA_NUMERICS_FLAGS -fmad=false -ftz=false -prec-div=true -prec-sqrt=true)

function(twinbit_numerics target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${TWINBIT_HOST_NUMERICS_FLAGS}>
    $<$<COMPILE_LANGUAGE:C>:${TWINBIT_HOST_NUMERICS_FLAGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:${TWINBIT_CUDA_NUMERICS_FLAGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffp-contract=off,-fno-fast-math>
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
endfunction()
