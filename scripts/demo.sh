#!/usr/bin/env bash
# Sets up a fresh machine, builds cunumpy and runs its main job: the electrostatic PIC
# mini-app on Landau damping, on 2 MPI ranks.  Prints the fitted and theoretical rates and the
# time per phase, writes out/landau/{energy.csv,summary.json} and the plot out/landau/energy.png.
#   bash scripts/demo.sh                    # host backend
#   CUNUMPY_BACKEND=cuda bash scripts/demo.sh
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install_deps.sh"
bash "$here/build.sh" >/dev/null
source "$here/env.sh"
BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build}"
OUT="${OUT:-$CUNUMPY_ROOT/out/landau}"
mpiexec -n 2 "$BUILD_DIR/apps/pic/pic" --case landau --output "$OUT" --overwrite
/usr/bin/python3 "$CUNUMPY_ROOT/scripts/plot_energy.py" "$OUT"
