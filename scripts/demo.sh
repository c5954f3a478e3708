#!/usr/bin/env bash
# Sets up a fresh machine, builds cunumpy and runs its main job: the electrostatic PIC
# mini-app on Landau damping, on 2 MPI ranks.  Prints the fitted and theoretical rates and the
# time per phase, writes out/landau/{energy.csv,summary.json} and the plot out/landau/energy.png.
# Then the two-stream instability on a decomposed grid with openPMD output, Landau damping in 3D
# on a 3D-decomposed grid, and the phase-space pictures read back through openPMD-api:
# out/two_stream/phase_space.png, out/landau_3d/phase_space.png (with a slice of the density).
#   bash scripts/demo.sh                    # host backend
#   CUNUMPY_BACKEND=cuda bash scripts/demo.sh
# It builds only the libraries and pic (scripts/test.sh builds the rest), and times its phases.
# Without a GPU (no /dev/nvidia0) and unless CUNUMPY_BACKEND=cuda, CUDA code could not run: the
# host-only configuration is built, in build-host (BUILD_DIR picks another folder).
set -euo pipefail
here="$(dirname "$0")"
phase_start=$(date +%s)
phase() {  # says how long the phase that just ended took
  local now
  now=$(date +%s)
  echo "demo: $1 took $((now - phase_start)) s"
  phase_start=$now
}
bash "$here/install_deps.sh"
phase "installing the dependencies"
source "$here/env.sh"
if [[ -e /dev/nvidia0 || "${CUNUMPY_BACKEND:-}" == cuda ]]; then
  export BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build}"
  TARGETS=pic bash "$here/build.sh" >/dev/null
  phase "building the libraries and pic"
else
  export BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build-host}"
  TARGETS=pic bash "$here/build.sh" -DCUNUMPY_ENABLE_CUDA=OFF >/dev/null
  phase "building the libraries and pic (host-only: no GPU here)"
fi
OUT="${OUT:-$CUNUMPY_ROOT/out/landau}"
mpiexec -n 2 "$BUILD_DIR/apps/pic/pic" --case landau --output "$OUT" --overwrite
/usr/bin/python3 "$CUNUMPY_ROOT/scripts/plot_energy.py" "$OUT"
phase "Landau damping (1D, 2 ranks)"
OUT2="${OUT2:-$CUNUMPY_ROOT/out/two_stream}"
mpiexec -n 2 "$BUILD_DIR/apps/pic/pic" --case two_stream --steps 400 --decompose --no-progress \
  --output "$OUT2" --output-every 40 --overwrite | grep -E "gamma|wrote"
phase "the two-stream instability (decomposed, openPMD output)"
# Landau damping in 3D on a 3D-decomposed grid (a few seconds: 3D's defaults, 32 x 4 x 4 cells
# and 262144 particles), with openPMD output.
OUT3="${OUT3:-$CUNUMPY_ROOT/out/landau_3d}"
mpiexec -n 2 "$BUILD_DIR/apps/pic/pic" --case landau --dim 3 --steps 250 --decompose \
  --no-progress --output "$OUT3" --output-every 50 --overwrite | grep -E "^landau|gamma|omega"
phase "Landau damping in 3D (3D-decomposed)"
if python="$(bash "$CUNUMPY_ROOT/scripts/openpmd_venv.sh")"; then
  "$python" "$CUNUMPY_ROOT/scripts/plot_phase_space.py" "$OUT2"
  "$python" "$CUNUMPY_ROOT/scripts/plot_phase_space.py" "$OUT3"
else
  echo "demo: no openPMD-api (see above): the phase-space picture is skipped"
fi
phase "the phase-space pictures (openPMD-api)"
