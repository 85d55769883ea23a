#!/usr/bin/env bash
# Installs the Debian packages twinbit builds with, if any is missing. Safe to run every time:
# when everything is present it only asks dpkg and returns.
# Usage: scripts/deps.sh [--python]   (--python: also what `pip install .` needs: the Python
#                                       headers and venv; the test suite's python stage asks)
set -euo pipefail
packages=(cmake g++ make pkg-config libxsimd-dev libtbb-dev libeigen3-dev doctest-dev
          nlohmann-json3-dev libcli11-dev libxxhash-dev)
if [ "${1:-}" = --python ]; then packages+=(python3-dev python3-venv); fi
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
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
