#!/usr/bin/env bash
# Configures and builds cunumpy.  BUILD_DIR (default build) and extra CMake arguments:
#   scripts/build.sh -DCUNUMPY_ENABLE_CUDA=OFF
#   CUNUMPY_WERROR=1 scripts/build.sh        # warnings are errors (CI)
#   TARGETS="pic" scripts/build.sh           # only these targets (and what they link)
set -euo pipefail
source "$(dirname "$0")/env.sh"
BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build}"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# CUNUMPY_WERROR=1 (CI): the project's compiler warnings are errors.
strict=()
if [ "${CUNUMPY_WERROR:-0}" = 1 ]; then strict=(-DCUNUMPY_WARNINGS_AS_ERRORS=ON); fi
cmake -S "$CUNUMPY_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${strict[@]}" "$@"
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
