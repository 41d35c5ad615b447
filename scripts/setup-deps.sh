#!/usr/bin/env bash
# Installs the Debian packages the build needs, only those missing. Runs as
# root (CI) or through sudo. The CUDA toolkit is the one prerequisite that
# Debian does not ship; without nvcc the cuda backend is unavailable.
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config clang-format libcli11-dev nlohmann-json3-dev libarchive-dev bubblewrap
          libgtest-dev libcurl4-openssl-dev libcpp-httplib-dev ca-certificates parallel libgloo-dev)
python3 -c 'import venv, ensurepip' 2>/dev/null || packages+=(python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup-deps: note: nvcc not found (install the CUDA toolkit from NVIDIA); LibTorch's CMake config needs it to configure" >&2
fi
