// `twinbit --version`: what a bug report needs to say which twinbit ran.
#pragma once

#include <string>

namespace twinbit::cli {

// "twinbit 0.1.0\ncommit: ...\nbuild: Release\nCUDA backend: ...\nCPU: ...\n": the version,
// the source commit, the build type, whether the CUDA backend was built (and with which CUDA),
// the CPU instruction set the CPU backend uses here and the backend ABI version.
std::string version_text();

}  // namespace twinbit::cli
