#!/usr/bin/env bash
# The mini-app's results as bits, for a change that must not alter them (a rewrite of the host
# step's loops): one line per run, its options and the first 16 hex digits of its energy.csv's
# MD5.  Run it with the binary before and after the change and diff the two files.
#
#   scripts/host_step_bits.sh PIC_BINARY OUT_FILE
#
# The matrix (288 runs, a few minutes on 2 cores): 1D, 2D, 3D x double, single, mixed x CIC,
# TSC x deterministic or not x a quiet Landau start and a random two-stream one, each on two
# OpenMP threads with CUNUMPY_HOST_SIMD=avx2 and =portable, and with avx2 also on one thread
# and on two MPI ranks (the decomposed layout).  Small grids, a re-sort every 5 steps, dt 0.2:
# particles cross blocks, wrap and are re-sorted within the 12 steps.  A run that fails is a
# line saying so (and differs).  x86-64 only (avx2).
set -euo pipefail
source "$(dirname "$0")/env.sh"
pic="${1:?usage: host_step_bits.sh PIC_BINARY OUT_FILE}"
out="$(realpath -m "${2:?usage: host_step_bits.sh PIC_BINARY OUT_FILE}")"
pic="$(realpath "$pic")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
: >"$out"
run() {  # label, command...
  local label=$1
  shift
  if "$@" --output o --overwrite --no-progress >/dev/null 2>err; then
    echo "$label $(md5sum <o/energy.csv | cut -c1-16)" >>"$out"
  else
    echo "$label FAILED: $(tail -1 err)" >>"$out"
  fi
}
for target in avx2 portable; do
  for dim in 1 2 3; do
    case $dim in
      1) grid="--cells 64 --particles 20000" ;;
      2) grid="--cells 32 --cells-y 16 --particles 30000" ;;
      3) grid="--cells 16 --cells-y 8 --cells-z 8 --particles 40000" ;;
    esac
    for precision in double single mixed; do
      for shape in cic tsc; do
        for deterministic in "" --deterministic; do
          for start in "landau --start quiet" "two_stream --start random"; do
            # (word splitting intended: the options as separate arguments)
            # shellcheck disable=SC2206
            a=(--dim $dim $grid --precision $precision --shape $shape $deterministic --case $start
               --steps 12 --sort-every 5 --dt 0.2)
            CUNUMPY_HOST_SIMD=$target OMP_NUM_THREADS=2 run "$target t2 ${a[*]}" "$pic" "${a[@]}"
            if [[ $target == avx2 ]]; then
              CUNUMPY_HOST_SIMD=$target OMP_NUM_THREADS=1 run "$target t1 ${a[*]}" "$pic" "${a[@]}"
              CUNUMPY_HOST_SIMD=$target OMP_NUM_THREADS=1 run "$target np2 ${a[*]}" \
                mpiexec -n 2 "$pic" --decompose "${a[@]}"
            fi
          done
        done
      done
    done
  done
done
echo "host_step_bits.sh: $(wc -l <"$out") runs, $(grep -c FAILED "$out" || true) failed, in $out"
