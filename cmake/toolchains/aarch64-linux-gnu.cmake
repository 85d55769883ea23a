# Cross-compiling for aarch64 Linux with Debian's cross toolchain (g++-aarch64-linux-gnu) and the
# arm64 libraries of dpkg's multiarch (scripts/deps.sh --arm64 installs both). The binaries run on
# an aarch64 machine, or here under `qemu-aarch64 -L /` (scripts/test.sh, stage arm64).
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake ...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and packages' CMake files from the arm64 multiarch paths (/usr/lib/aarch64-linux-gnu),
# programs from the build machine. Header-only packages (xsimd, doctest, nlohmann-json) are the
# same files on both architectures.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# The loader from libc6:arm64 (/lib/ld-linux-aarch64.so.1), not the cross toolchain's copy in
# /usr/aarch64-linux-gnu: that one is another glibc build than the libc.so.6 it then loads, and
# their mismatch hangs the first pthread_create (scripts/arm64_check.sh says how).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
