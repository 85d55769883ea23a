// The neon instantiation of every CPU kernel (compiled with the neon flags, backends/cpu/CMakeLists.txt).
#include "backends/cpu/cpu_kernels_impl.hpp"
template twinbit::cpu::KernelTable twinbit::cpu::make_kernel_table<twinbit::cpu::Isa::kNeon>();
