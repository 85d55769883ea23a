#!/usr/bin/env bash
# Installs the Debian packages twinbit builds with, if any is missing. Safe to run every time:
# when everything is present it only asks dpkg and returns.
# Usage: scripts/deps.sh [--python] [--arm64]
#   --python: also what `pip install .` needs: the Python headers and venv (the test suite's
#             python stage asks)
#   --arm64:  also what the aarch64 cross build and its emulated tests need (the test suite's
#             arm64 stage asks): Debian's cross compiler, qemu-user, and the arm64 builds of the
#             libraries the CPU backend links, through dpkg's multiarch (adds the arm64
#             architecture to dpkg when it is missing)
set -euo pipefail
packages=(cmake g++ make pkg-config libxsimd-dev libtbb-dev libeigen3-dev doctest-dev
          nlohmann-json3-dev libcli11-dev libxxhash-dev)
arm64=0
for arg in "$@"; do
  case "$arg" in
    --python) packages+=(python3-dev python3-venv) ;;
    --arm64) arm64=1
             # libc6:arm64: the loader and libc the emulated runs use (scripts/arm64_check.sh)
             packages+=(g++-aarch64-linux-gnu qemu-user libc6:arm64 libtbb-dev:arm64
                        libxxhash-dev:arm64 libxsimd-dev:arm64) ;;
    *) echo "twinbit: deps.sh: unknown option '$arg' (expected --python or --arm64)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "twinbit: installing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "twinbit: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if [ $arm64 = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
