#!/usr/bin/env bash
# Sets up a fresh machine, builds cunumpy and runs every test:  bash scripts/test.sh
# Extra arguments go to CMake (e.g. -DCUNUMPY_ENABLE_CUDA=OFF); BUILD_DIR picks the folder.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install_deps.sh"
bash "$here/build.sh" "$@"
source "$here/env.sh"
BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build}"
ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure --timeout 900
