#!/usr/bin/env bash
# Sets up a fresh machine, builds cunumpy and runs the example: which backend was chosen and
# why, and a transfer report with call sites:  bash scripts/demo.sh
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install_deps.sh"
bash "$here/build.sh" >/dev/null
source "$here/env.sh"
BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build}"
echo "== CUNUMPY_BACKEND=cuda (a GPU if there is one, else host and the reason)"
CUNUMPY_BACKEND=cuda "$BUILD_DIR/apps/backend_report"
echo
echo "== CUNUMPY_BACKEND=emulated (the device paths without a GPU)"
CUNUMPY_BACKEND=emulated "$BUILD_DIR/apps/backend_report"
