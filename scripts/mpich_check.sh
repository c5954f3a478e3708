#!/usr/bin/env bash
# The MPI configuration against MPICH (Debian's mpich, libmpich-dev, libhdf5-mpich-dev) beside
# the Open MPI one of the main build: the library and its tests (no CUDA, no mini-app), then
# every MPI test at 1, 2 and 4 ranks with MPICH's mpiexec (Hydra).  Open MPI stays the
# machine's default MPI.  FFTW-MPI and PETSc, which Debian builds for Open MPI only, are off in
# this build (the configure summary says why); the distributed FFT then runs on one rank only
# and refuses more by name.
#   bash scripts/mpich_check.sh            BUILD_DIR picks the folder (default build-mpich)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install_deps.sh" mpich libmpich-dev libhdf5-mpich-dev
# Installing MPICH must not move the machine's mpicc, mpiexec and h5pcc away from Open MPI.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
for pair in mpi:/usr/bin/mpicc.openmpi mpirun:/usr/bin/mpirun.openmpi h5pcc:/usr/bin/h5pcc.openmpi; do
  name="${pair%%:*}" target="${pair#*:}"
  if update-alternatives --list "$name" 2>/dev/null | grep -qx "$target"; then
    $SUDO update-alternatives --quiet --set "$name" "$target"
  fi
done
source "$here/env.sh"
BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build-mpich}"
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/configure.log"
cmake -S "$CUNUMPY_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
  -DCUNUMPY_ENABLE_CUDA=OFF -DCUNUMPY_ENABLE_MPI=ON -DCUNUMPY_BUILD_APPS=OFF \
  -DCUNUMPY_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich \
  -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich -DCUNUMPY_MPIEXEC_EXTRA= \
  -DHDF5_C_COMPILER_EXECUTABLE=/usr/bin/h5pcc.mpich >"$log"
grep -A8 "feature summary" "$log"
grep "cunumpy: .*another MPI" "$log" || true
grep -q "MPI: ON .*mpich" "$log" || {
  echo "mpich_check: the build did not find MPICH" >&2
  exit 1
}
# The programs the MPI tests run, and nothing else (the unit tests are the main build's).
targets=$(ctest --test-dir "$BUILD_DIR" -L mpi -LE slurm --show-only=json-v1 | python3 -c '
import json, os, re, sys
build = os.path.abspath(sys.argv[1])
names = set()
for test in json.load(sys.stdin)["tests"]:
    for word in re.split(r"\s+", " ".join(test.get("command", []))):
        if word.startswith(build) and os.access(os.path.dirname(word), os.F_OK):
            name = os.path.basename(word)
            if re.fullmatch(r"(test|bench)_\w+|write_series", name):
                names.add(name)
print(" ".join(sorted(names)))' "$BUILD_DIR")
echo "mpich_check: building $targets"
cmake --build "$BUILD_DIR" -j "$JOBS" --target $targets
ctest --test-dir "$BUILD_DIR" -L mpi -LE slurm -j "$JOBS" --output-on-failure --timeout 600
