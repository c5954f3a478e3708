#!/usr/bin/env bash
# The ARM targets of the host vector code (Highway's NEON, SVE and SVE2), checked on an x86-64
# machine: tests/arm/*.cpp and the library's Highway sources cross-compiled for aarch64 and run
# under qemu-user, SVE at 128-, 256-, 512- and 2048-bit vectors.  Each vector result must equal
# the device formulas, and the mini-app's CIC vector loop its scalar loop, bit for bit.  The
# kernel emulator's engine runs there too (its fibers switch with a plain jump_fcontext call
# off x86-64): tests/arm/emulator_check.cpp, its kernels compiled by the cross compiler.
#
#   bash scripts/arm_check.sh          # installs g++-aarch64-linux-gnu, qemu-user-static and
#                                      # the arm64 Highway, Boost.Context and OpenSSL (Debian
#                                      # multiarch) when missing
#   ARM_CHECK_OPTIONAL=1 bash scripts/arm_check.sh   # (CI) a machine that cannot install them
#                                      # says so and passes; a wrong result still fails
set -euo pipefail
source "$(dirname "$0")/env.sh"
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO=sudo
# Boost.Context for arm64: the package of the host's Boost version (libboost-context1.74.0).
boost_context=$(dpkg -S /usr/lib/x86_64-linux-gnu/libboost_context.so.1.* 2>/dev/null | head -n1 | cut -d: -f1 || true)
boost_context=${boost_context:-libboost-context1.74.0}
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64-static >/dev/null ||
   [[ ! -e /usr/lib/aarch64-linux-gnu/libhwy.so.1 ]] ||
   ! compgen -G "/usr/lib/aarch64-linux-gnu/libboost_context.so.1.*" >/dev/null ||
   [[ ! -e /usr/include/aarch64-linux-gnu/openssl/opensslconf.h ]]; then
  if ! { $SUDO dpkg --add-architecture arm64 && $SUDO apt-get update -qq &&
         $SUDO apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu \
           qemu-user-static libhwy1:arm64 libhwy-dev "$boost_context:arm64" libssl-dev:arm64 \
           >/dev/null; }; then
    if [[ "${ARM_CHECK_OPTIONAL:-0}" == 1 ]]; then
      echo "arm_check: the aarch64 cross compiler, qemu-user or the arm64 libraries could not be installed; not checked"
      exit 0
    fi
    echo "arm_check: installing the aarch64 cross compiler, qemu-user and the arm64 libraries failed" >&2
    exit 1
  fi
fi
out="${BUILD_DIR:-$CUNUMPY_ROOT/build}/arm"
mkdir -p "$out"
src="$CUNUMPY_ROOT"
l="$src/loops/src"
k="$src/kernels/src"
# The sources' includes are the source tree's, and a build configuration of their own (host
# only: no CUDA, NVTX, MPI).
mkdir -p "$out/generated/cunumpy"
cat >"$out/generated/cunumpy/build_config.hpp" <<'CONFIG'
#pragma once
#define CUNUMPY_VERSION_MAJOR 0
#define CUNUMPY_VERSION_MINOR 1
#define CUNUMPY_VERSION_PATCH 0
#define CUNUMPY_VERSION_STRING "0.1.0"
#define CUNUMPY_HAS_CUDA() 0
#define CUNUMPY_HAS_OPENMP() 1
#define CUNUMPY_HAS_NVTX() 0
#define CUNUMPY_HAS_MPI() 0
#define CUNUMPY_HAS_HDF5() 0
#define CUNUMPY_HAS_PETSC() 0
CONFIG
flags=(-O2 -std=c++20 -ffp-contract=off -I"$l" -I"$k" -I"$src/device_headers" -I"$src/loops/include"
       -I"$src/kernels/include" -I"$src/core/include" -I"$src/core/internal" -I"$src/apps/pic" -I"$src/tests/pic" -I"$out/generated")
aarch64-linux-gnu-g++ "${flags[@]}" "$src/tests/arm/host_simd_check.cpp" "$l/host_simd/targets.cpp" \
  "$l/host_simd/generators.cpp" "$l/sort/sort_simd.cpp" /usr/lib/aarch64-linux-gnu/libhwy.so.1 \
  -o "$out/host_simd_check"
aarch64-linux-gnu-g++ "${flags[@]}" "$l/sort/line_scatter.cpp" -c -o "$out/line_scatter.o"
# The kernel emulator's engine, with the kernel layer's pieces it calls (the include
# resolution, the kernel cache, the device headers the library carries).
cmake -DDIR="$src/device_headers" -DOUT="$out/embedded_headers.cpp" -P "$src/cmake/embed_headers.cmake"
aarch64-linux-gnu-g++ "${flags[@]}" -fopenmp -w -DCUNUMPY_CUDA_LIBRARY_DIR='""' \
  -DCUNUMPY_CUDA_INCLUDE_DIR='""' -Wno-psabi -I"$src/tests/support" "$src/tests/arm/emulator_check.cpp" "$k/emulator/engine.cpp" "$k/emulator/compile.cpp" "$k/emulator/symbols.cpp" "$k/emulator/barriers.cpp" "$k/emulator/regions.cpp" \
  "$k/cuda_signature.cpp" "$k/cuda_compiler.cpp" "$k/kernel_cache.cpp" "$out/embedded_headers.cpp" \
  "$src/core/src/files.cpp" /usr/lib/aarch64-linux-gnu/libboost_context.so.1.* \
  /usr/lib/aarch64-linux-gnu/libcrypto.so -o "$out/emulator_check"
aarch64-linux-gnu-g++ "${flags[@]}" -fopenmp "$src/tests/arm/pic_step_check.cpp" \
  "$src/apps/pic/host_step.cpp" "$src/apps/pic/host_step_simd.cpp" \
  "$l/host_simd/targets.cpp" \
  /usr/lib/aarch64-linux-gnu/libhwy.so.1 -o "$out/pic_step_check"
run() {  # cpu, CUNUMPY_HOST_SIMD, program
  qemu-aarch64-static -cpu "$1" -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu \
    -E OMP_NUM_THREADS=1 -E CUNUMPY_HOST_SIMD="$2" "$out/$3"
}
status=0
# One host thread: this qemu-user hangs OpenMP programs with more (the x86 tests run the
# emulator's blocks on several); a hang still ends, as a failure.
line=$(timeout 600 qemu-aarch64-static -cpu cortex-a72 -L /usr/aarch64-linux-gnu \
  -E LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu -E OMP_NUM_THREADS=1 \
  -E CXX="$src/tests/arm/cross_cxx.sh" -E CUNUMPY_KERNEL_CACHE="$out/kernel-cache" \
  "$out/emulator_check" | tail -n1) || status=1
echo "cortex-a72, the kernel emulator: $line"
for cpu in cortex-a72 max,sve-default-vector-length=16 max,sve-default-vector-length=32 \
           max,sve-default-vector-length=64 max,sve-default-vector-length=256; do
  targets="neon"
  [[ "$cpu" == max* ]] && targets="sve sve2"
  for t in $targets; do
    for program in host_simd_check pic_step_check; do
      line=$(run "$cpu" "$t" "$program" | tr '\n' ' ') || status=1
      echo "$cpu, CUNUMPY_HOST_SIMD=$t, $program: $line"
    done
  done
done
exit $status
