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
//   neon_dotprod   neon64            aarch64 + dot product (HWCAP_ASIMDDP)      4
//   neon           neon64            (every aarch64 CPU)                        4
//
// A build has the tags of its target architecture only (compiled_isas()): x86-64 the first five,
// aarch64 the two neon ones. Both neon tags compile with the baseline aarch64 flags; the dotprod
// tag's one function using SDOT (cpu_kernels_arm.hpp) enables the instruction for itself with a
// target attribute, so no other code of that tag can come to depend on it.
//
// THE CONTRACT'S FMA ON EVERY TAG. NUMERICS.md requires IEEE fused multiply-adds (one rounding).
// avx512* and fma3_avx2 execute vfmadd (hardware FMA, one rounding). NOTE: xsimd 8.1's
// xsimd::fma for avx512f/bw falls back to its generic `x * y + z` (two roundings), so the kernels
// never call xsimd::fma; they call fma_exact() (cpu_simd.h), which uses _mm512_fmadd_ps /
// _mm256_fmadd_ps. The sse2 tag has no FMA instruction: fma_exact() applies std::fma per lane,
// which glibc implements as a correctly rounded fused multiply-add in software when the CPU has
// no FMA unit - the same single rounding, so the same bits, only slower. The neon tags use
// vfmaq_f32 (FMLA: fused, one rounding; every aarch64 CPU has it).
//
// THE CONTRACT'S DIVISION ON NEON. xsimd 8.1's float `/` on neon64 is its 32-bit neon kernel: a
// reciprocal estimate refined by two Newton steps, which differs from IEEE division in the last
// bit (found by the aarch64 quantize test: codes one off). The kernels divide with div_exact()
// (cpu_simd.h): FDIV on aarch64, divps on x86.
#pragma once

#include <string>
#include <vector>

namespace twinbit::cpu {

// kAmx: avx512vnni's kernels, with the I8 gemm at M >= 16 on AMX tiles (cpu_amx.h).
enum class Isa {
  kSse2 = 0, kFma3Avx2 = 1, kAvx512bw = 2, kAvx512vnni = 3, kAmx = 4,  // x86-64 (cpu_isa.cpp)
  kNeon = 16, kNeonDotprod = 17,                                        // aarch64 (cpu_isa_aarch64.cpp)
};

const char* isa_name(Isa isa);           // "sse2", "fma3_avx2", "avx512bw", "avx512vnni", "amx",
                                         // "neon", "neon_dotprod"
std::vector<Isa> compiled_isas();        // every tag this build has kernels for, best first
bool isa_runnable(Isa isa);              // cpuid + xgetbv (x86-64) or the kernel's hwcaps
                                         // (aarch64) say this CPU and OS can run it
std::vector<Isa> runnable_isas();        // compiled and runnable, best first
std::string isa_names(const std::vector<Isa>& isas);  // "avx512vnni, avx512bw, ..."

// "Intel(R) Xeon(R) Processor" from the cpuid brand string, or "x86-64 CPU"; on aarch64
// "aarch64 CPU (implementer 0x41, part 0xd0b)" from MIDR_EL1 as the kernel exports it.
std::string cpu_model_name();

// The floating-point control register of the calling thread flushes subnormals: MXCSR's FTZ
// (flush-to-zero) or DAZ (denormals-are-zero) on x86-64; FPCR's FZ, FZ16 or FIZ (or AH, which
// changes what FZ means) on aarch64. The contract keeps subnormals, so the backend refuses to run
// (FAILED_PRECONDITION). *out_bits: the register's value.
bool fp_env_flushes_subnormals(unsigned* out_bits);
// What fp_env_flushes_subnormals found, for the error: "MXCSR = 0x9fc0 has FTZ or DAZ set"
// ... "(clear bits 15 and 6)" or the FPCR equivalent; `where` goes between the two.
std::string fp_env_flush_message(unsigned bits, const char* where);

}  // namespace twinbit::cpu
