#!/usr/bin/env bash
# Weak and strong scaling of the PIC mini-app, replicated against decomposed, at 1, 2 and 4
# ranks (oversubscribed on a small machine): time per step and its phases, and the bytes each
# rank sends per step (measured for the decomposed grid; the replicated grid's allreduce sends
# 2 (P - 1) / P of the grid per rank with the ring algorithm); then the model of
# scripts/scaling_model.py, calibrated on these runs, beside them and up to 1,024 ranks.
#
# The regime is PICKSC's: cells of one Debye length, 36 particles per cell, v_th dt = 0.1 of
# a cell (a thermal particle crosses a block face rarely).  --stress adds the fast-particle
# case (Landau, k = 0.5: a cell is 0.012-0.025 Debye lengths, particles cross 4-8 cells per
# step), a stress test of the migration.
#
#   bash scripts/scaling.sh               # the strong and weak series (a few minutes)
#   bash scripts/scaling.sh --stress      # also the fast-particle series
#   bash scripts/scaling.sh --big         # also 2D 4096^2 and 8192^2 cells at 4 ranks
#   BUILD=build-host STEPS=20 bash scripts/scaling.sh
#   CELLS=32 PPC=4 STEPS=3 bash scripts/scaling.sh   # a small version (the ctest's)
#
# Ranks are not bound to cores (--bind-to none), so the Runtime gives each its share of the
# node's cores for OpenMP: 1 rank x 2 threads against 2 ranks x 1 thread on 2 cores.
# Needs a build with MPI (scripts/build.sh).  Prints one table; the runs' summary.json files
# stay under $OUT (default: a temporary folder, removed at the end).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-$here/build}"
pic="$build/apps/pic/pic"
steps="${STEPS:-10}"
cells="${CELLS:-512}"  # the strong problem's and the weak series' per-rank cells per axis
ppc="${PPC:-36}"       # particles per cell
big=0
stress=0
for arg in "$@"; do
  case "$arg" in
    --big) big=1 ;;
    --stress) stress=1 ;;
    *) echo "scaling.sh: unknown argument $arg (--big, --stress)" >&2; exit 2 ;;
  esac
done
[ -x "$pic" ] || { echo "scaling.sh: $pic is missing; build first (bash scripts/build.sh)" >&2; exit 1; }
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
[ -z "${OUT:-}" ] && trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$here/scripts/env.sh" >/dev/null 2>&1 || true

run() {  # run <name> <ranks> <layout> <cells_x> <cells_y> <particles> [case options...]
  local name=$1 np=$2 layout=$3 nx=$4 ny=$5 n=$6
  shift 6
  # Default: cells of one Debye length (a box of nx Debye lengths), v_th 1, dt 0.1, no
  # perturbation (PICKSC's problem).
  local physics=(--case custom --k "$(python3 -c "import math; print(2 * math.pi / $nx)")" --vth 1
                 --dt 0.1 --amplitude 0)
  [ $# -gt 0 ] && physics=("$@")
  mpiexec --oversubscribe --bind-to none -n "$np" "$pic" "${physics[@]}" --dim 2 --cells "$nx" --cells-y "$ny" \
    --particles "$n" --steps "$steps" --"$layout" --no-progress --flush-every 0 \
    --output "$out/$name" --overwrite >"$out/$name.log" 2>&1 ||
    { echo "scaling.sh: run $name failed:" >&2; tail -5 "$out/$name.log" >&2; exit 1; }
  echo "$name $np $layout $nx $ny $n" >>"$out/runs.txt"
}

: >"$out/runs.txt"
# Strong: PICKSC's problem (512^2 cells, 9,437,184 particles), more ranks.  Weak: the grid and
# the particles grow with the ranks (512^2 cells and 36 particles per cell per rank).
for np in 1 2 4; do
  for layout in replicate decompose; do
    run "strong-$layout-$np" "$np" "$layout" "$cells" "$cells" $((cells * cells * ppc))
  done
done
for np in 1 2 4; do
  ny=$((cells * (np >= 4 ? 2 : 1)))
  nx=$((cells * (np >= 2 ? 2 : 1)))
  for layout in replicate decompose; do
    run "weak-$layout-$np" "$np" "$layout" "$nx" "$ny" $((nx * ny * ppc))
  done
done
if [ "$stress" = 1 ]; then
  for np in 1 2 4; do
    run "stress-decompose-$np" "$np" decompose $((2 * cells)) $((2 * cells)) $((8 * cells * cells)) --case landau
  done
fi
if [ "$big" = 1 ]; then
  # Grids a replicated run holds whole on every rank: 4096^2 (1 particle per cell) and 8192^2
  # (a quarter), at 4 ranks, with fewer steps (BIG_STEPS).
  steps="${BIG_STEPS:-5}"
  for layout in decompose replicate; do
    run "big4096-$layout-4" 4 "$layout" 4096 4096 16777216
    run "big8192-$layout-4" 4 "$layout" 8192 8192 16777216
  done
fi

python3 - "$out" <<'EOF'
import json, sys, os
out = sys.argv[1]
print(f"{'run':<24} {'ranks':>5} {'thr':>3} {'cells':>11} {'particles':>10} {'ms/step':>9} "
      f"{'particles':>9} {'solve':>7} {'reduce':>7} {'fill':>7} {'migrate':>7} "
      f"{'MB sent/step/rank':>18} {'allreduce MB':>12} {'peak MiB/rank':>13}")
for line in open(os.path.join(out, "runs.txt")):
    name, np_, layout, nx, ny, n = line.split()
    s = json.load(open(os.path.join(out, name, "summary.json")))
    steps = s["steps"]
    ph = s["phase_seconds"]
    ms = lambda *keys: 1e3 * sum(ph.get(k, 0.0) for k in keys) / steps
    print(f"{name:<24} {int(np_):>5} {s.get('threads_per_rank', 1):>3} {int(nx)*int(ny):>11} {int(n):>10} "
          f"{1e3 * s['seconds'] / steps:>9.1f} {ms('deposit', 'gather', 'push', 'sort'):>9.1f} "
          f"{ms('solve'):>7.1f} {ms('reduce'):>7.1f} {ms('fill'):>7.1f} {ms('migration'):>7.1f} "
          f"{s['bytes_sent_per_step_per_rank'] / 1e6:>18.3f} "
          f"{s['replicated_allreduce_bytes_per_step'] / 1e6:>12.3f} {s['peak_memory_mb_per_rank']:>13.0f}")
print("(phases in ms per step; 'particles' = deposit + gather + push + sort; MB = 1e6 bytes;")
print(" thr: OpenMP threads per rank, the node's cores shared among its ranks unless")
print(" OMP_NUM_THREADS is set: 1 rank x 2 threads against 2 ranks x 1 thread on 2 cores)")
EOF
python3 "$here/scripts/scaling_model.py" "$out"
