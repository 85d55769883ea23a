// The instruction-set targets of the CPU backend and their run-time detection.
//
// Every kernel of the backend (cpu_kernels_impl.hpp) is written once, as a template over one of
// the tags below, and instantiated in a one-line translation unit per tag (isa/*.cpp) compiled
// with exactly that tag's compiler flags. Dispatch (cpu_backend.cpp) picks the best tag this CPU
// and OS can run; the creation parameter isa=<name> forces one (exact match; an unknown or
// unrunnable name is an error at backend creation, listing the valid names).
//
// Why our own tags rather than xsimd::dispatch: xsimd 8.1 knows no VNNI or VBMI arch, and the
// fast paths need both (vpdpbusd for the exact int8 dots, vpermt2b for the in-register byte
// transpose of a weight tile). Each tag names the xsimd arch its batches use (`arch`), so the
// generic code still reads as xsimd code and never names a register width.
//
//   tag            xsimd arch        needs (cpuid + OS state)                  lanes (float)
//   amx            (avx512vnni's)    avx512vnni's + AMX-TILE/INT8, tile state   16
//                                    granted to the process (cpu_amx.h)
//   avx512vnni     avx512bw          AVX512F/BW/DQ/VL + VNNI + VBMI, ZMM state  16
//   avx512bw       avx512bw          AVX512F/BW/DQ/VL, ZMM state                16
//   fma3_avx2      fma3<avx2>        AVX2 + FMA + F16C, YMM state               8
//   sse2           sse2              (every x86-64 CPU)                         4
//
// THE CONTRACT'S FMA ON EVERY TAG. NUMERICS.md requires IEEE fused multiply-adds (one rounding).
// avx512* and fma3_avx2 execute vfmadd (hardware FMA, one rounding). NOTE: xsimd 8.1's
// xsimd::fma for avx512f/bw falls back to its generic `x * y + z` (two roundings), so the kernels
// never call xsimd::fma; they call fma_exact() (cpu_simd.h), which uses _mm512_fmadd_ps /
// _mm256_fmadd_ps. The sse2 tag has no FMA instruction: fma_exact() applies std::fma per lane,
// which glibc implements as a correctly rounded fused multiply-add in software when the CPU has
// no FMA unit - the same single rounding, so the same bits, only slower.
#pragma once

#include <string>
#include <vector>

namespace twinbit::cpu {

// kAmx: avx512vnni's kernels, with the I8 gemm at M >= 16 on AMX tiles (cpu_amx.h).
enum class Isa { kSse2 = 0, kFma3Avx2 = 1, kAvx512bw = 2, kAvx512vnni = 3, kAmx = 4 };

const char* isa_name(Isa isa);           // "sse2", "fma3_avx2", "avx512bw", "avx512vnni", "amx"
std::vector<Isa> compiled_isas();        // every tag this build has kernels for, best first
bool isa_runnable(Isa isa);              // cpuid + xgetbv say this CPU and OS can run it
std::vector<Isa> runnable_isas();        // compiled and runnable, best first
std::string isa_names(const std::vector<Isa>& isas);  // "avx512vnni, avx512bw, ..."

// "Intel(R) Xeon(R) Processor" from the cpuid brand string, or "x86-64 CPU".
std::string cpu_model_name();

// MXCSR of the calling thread has FTZ (flush-to-zero) or DAZ (denormals-are-zero) set: the
// contract keeps subnormals, so the backend refuses to run (FAILED_PRECONDITION).
bool mxcsr_flushes_subnormals(unsigned* out_mxcsr);

}  // namespace twinbit::cpu
