#!/usr/bin/env bash
# Installs what cunumpy needs to build, test and run on Debian 12 (as root, or with sudo), and
# the extra packages given as arguments (scripts/tsan_check.sh: its clang and OpenMP runtime).
# The CUDA toolkit is not a Debian package here: it is used when nvcc is on PATH or in
# /usr/local/cuda/bin, and the build falls back to host-only without it.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config clang clang-format git
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev libhdf5-dev libfftw3-dev libfftw3-mpi-dev libcli11-dev libssl-dev libboost-context-dev libhwy-dev
  petsc-dev
  slurm-wlm munge
  python3-numpy python3-h5py python3-matplotlib python3-venv python3-pip
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install_deps: done"
