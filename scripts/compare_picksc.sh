#!/usr/bin/env bash
# The mini-app's particle step beside the UCLA PICKSC skeleton codes, on their default
# problem, interleaved runs, nanoseconds per particle-step.  2D (the default): 512 x 512 cells,
# 3072 x 3072 = 9,437,184 particles, v_th 1, dt 0.1, 100 steps, electrostatic, spectral, CIC.
# 3D (--dim 3): 128^3 cells, 384^3 = 56,623,104 particles, v_th 1, dt 0.1, 10 steps (the
# peers' tend set to match; --steps N for another count), beside openmp/mpic3 (OpenMP, tiles)
# and mpi/ppic3 (MPI, 2D slab decomposition), with the peak memory per rank.
#
#   scripts/compare_picksc.sh PEER_DIR [--dim 2|3] [--steps N] [--runs N] [--threads "1 2"]
#                             [--work DIR]
#
# PEER_DIR: a checkout of github.com/UCLA-Plasma-Simulation-Group/PIC-skeleton-codes (nothing is
# fetched here).  Its serial/pic2, openmp/mpic2 and openmp_vectorization/vmpic2 are copied to
# the work folder (default: build/picksc) and built there with gfortran: pic2 (serial), mpic2
# (OpenMP, tiles), vmpic2 (OpenMP with its SSE2 kernels: kvec = 2), and mpi/ppic2 (MPI, 1D
# slab decomposition) with mpif90 when mpiexec exists.  Ours: build/apps/pic/pic (BUILD_DIR to
# change), OpenMP threads, the replicated grid on N MPI ranks x 1 thread, and the decomposed
# grid (--decompose) on 1 and N ranks x 1 thread, beside ppic2 on as many ranks.
# Each figure is the median over the runs of the loop's time (particles and field solve) per
# particle-step; ours runs in double, single and mixed precision (--precision); the table
# also gives the memory-bandwidth bound of our step in each: the bytes it moves per particle
# over the STREAM triad measured here, and its share of the measured time; and (2D) our push
# phase alone beside the same on a problem that stays in cache (32^2 cells, 36 particles a cell
# as here): equal times say the core, not memory, bounds the step on this machine.
set -euo pipefail
source "$(dirname "$0")/env.sh"

peer="${1:?usage: compare_picksc.sh PEER_DIR [--runs N] [--threads \"1 2\"] [--work DIR]}"
shift
runs=3
threads="1 2"
work="$CUNUMPY_ROOT/build/picksc"
dim=2
steps=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dim) dim="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    *) echo "compare_picksc.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ "$dim" == 2 || "$dim" == 3 ]] || { echo "compare_picksc.sh: --dim 2 or 3, got $dim" >&2; exit 2; }
if [[ "$dim" == 3 ]]; then peers=(openmp/mpic3); else peers=(serial/pic2 openmp/mpic2 openmp_vectorization/vmpic2); fi
for d in "${peers[@]}"; do
  [[ -d "$peer/$d" ]] || { echo "compare_picksc.sh: $peer/$d not found (a PIC-skeleton-codes checkout?)" >&2; exit 2; }
done
command -v gfortran >/dev/null || { echo "compare_picksc.sh: gfortran is needed (apt-get install gfortran)" >&2; exit 2; }
build="${BUILD_DIR:-$CUNUMPY_ROOT/build}"
ours="$build/apps/pic/pic"
[[ -x "$ours" ]] || { echo "compare_picksc.sh: $ours not built (scripts/build.sh)" >&2; exit 2; }

mkdir -p "$work"
# Newer gfortran rejects the codes' mismatched actual arguments unless told to allow them.
allow=""
if echo 'end' > "$work/probe.f90" && gfortran -fallow-argument-mismatch -c "$work/probe.f90" -o "$work/probe.o" 2>/dev/null; then
  allow="-fallow-argument-mismatch"
fi
build_peer() {  # folder, make target
  local from="$1" target="$2" to="$work/$(basename "$1")"
  if [[ ! -x "$to/$target" ]]; then
    rm -rf "$to"
    cp -r "$peer/$from" "$to"
    if [[ "$target" == fvmpic2 ]]; then sed -i 's/integer :: kvec = 1/integer :: kvec = 2/' "$to/vmpic2.f90"; fi
    # 3D: the run's length in steps of dt = 0.1 (tend = steps * dt).
    for f in "$to"/mpic3.f90 "$to"/ppic3.f90; do
      if [[ -f "$f" ]]; then sed -i "s/tend = 10.0, dt = 0.1/tend = $steps.0*0.1, dt = 0.1/" "$f"; fi
    done
    make -C "$to" "$target" FC90=gfortran FC03=gfortran CC=gcc MPFC="gfortran -fopenmp" MPCC="gcc -fopenmp" \
      MPIFC=mpif90 MPICC=mpicc OPTS77="-O3 $allow" \
      OPTS90="-O3 $allow" OPTS03="-O3" CCOPTS="-O3 -std=c99" LEGACY= >"$to/build.log" 2>&1 ||
      { echo "compare_picksc.sh: building $target failed, see $to/build.log" >&2; exit 1; }
  fi
}
if [[ "$dim" == 3 ]]; then
  steps="${steps:-10}"
  work="$work/3d_$steps"  # the peers' step count is compiled in
  mkdir -p "$work"
  build_peer openmp/mpic3 fmpic3
  mpi_peer=ppic3
else
  steps="${steps:-100}"
  build_peer serial/pic2 fpic2
  build_peer openmp/mpic2 fmpic2
  build_peer openmp_vectorization/vmpic2 fvmpic2
  mpi_peer=ppic2
fi
have_mpi=0
if command -v mpiexec >/dev/null && command -v mpif90 >/dev/null && [[ -d "$peer/mpi/$mpi_peer" ]]; then
  build_peer "mpi/$mpi_peer" "f$mpi_peer"
  have_mpi=1
fi

# STREAM triad on 1 and 2 threads.
cat >"$work/triad.c" <<'EOF'
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  const long n = 1L << 25;
  double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8), best = 0;
#pragma omp parallel for
  for (long i = 0; i < n; ++i) { a[i] = 1; b[i] = 2; c[i] = 3; }
  for (int r = 0; r < 5; ++r) {
    double t = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    t = omp_get_wtime() - t;
    if (24.0 * n / t > best) best = 24.0 * n / t;
  }
  printf("%.1f\n", best / 1e9 + a[7] * 0);
  return 0;
}
EOF
gcc -O3 -march=native -fopenmp "$work/triad.c" -o "$work/triad"

if [[ "$dim" == 3 ]]; then
  particles=56623104
  k=0.04908738521234052  # 2 pi / 128: a 128^3 box with unit cells, as the peer's
  ours_args=(--dim 3 --case custom --cells 128 --particles "$particles" --steps "$steps" --dt 0.1
             --vth 1 --amplitude 0 --k "$k" --no-progress --overwrite)
else
  particles=9437184
  k=0.01227184630308513  # 2 pi / 512: a 512 x 512 box with unit cells, as the peer's
  ours_args=(--dim 2 --case custom --cells 512 --particles "$particles" --steps "$steps" --dt 0.1
             --vth 1 --amplitude 0 --k "$k" --no-progress --overwrite)
fi
# The peak resident memory of a peer's run (the largest process's), in MiB.
peer_mib() { awk '/Maximum resident/ {m = $NF > m ? $NF : m} END {printf "%.0f", m / 1024}' "$1"; }
peer_ns() {  # total time (particles + solver) in seconds -> ns per particle-step
  awk -v n="$particles" -v s="$steps" '/total time =/ {t = $4} END {printf "%.2f", t / (n * s) * 1e9}'
}
# A figure of our run's summary.json: a Python expression of its dict d, formatted.
summary_of() {
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[3] % eval(sys.argv[2]))" \
    "$1/summary.json" "$2" "$3"
}
ours_ns() { summary_of "$1" "d['ns_per_particle_step']" %.2f; }
# The push phase alone (gather, push, move and the fused deposit) per particle-step.
ours_push() { summary_of "$1" "d['phase_seconds']['push'] / (d['particles'] * d['steps_done']) * 1e9" %.2f; }
ours_mib() { summary_of "$1" "d['peak_memory_mb_per_rank']" %.0f; }
results="$work/results.txt"
# record NAME THREADS COMMAND...: the figure the command prints, as a line of the results; a
# command that fails (a summary that cannot be read) stops the script here.
record() {
  local figure
  figure=$("${@:3}")
  echo "$1 $2 $figure" >>"$results"
}
: >"$results"
timed() { /usr/bin/time -v -o "$work/time.txt" "$@"; }
for r in $(seq "$runs"); do
  if [[ "$dim" == 3 ]]; then
    for t in $threads; do
      export OMP_NUM_THREADS="$t"
      echo "mpic3 $t $( (cd "$work/mpic3" && timed ./fmpic3) | peer_ns)" >>"$results"
      echo "mem-mpic3 $t $(peer_mib "$work/time.txt")" >>"$results"
      "$ours" "${ours_args[@]}" --output "$work/ours" >/dev/null
      record ours "$t" ours_ns "$work/ours"
      record mem-ours "$t" ours_mib "$work/ours"
      "$ours" "${ours_args[@]}" --precision single --output "$work/ours_single" >/dev/null
      record ours-single "$t" ours_ns "$work/ours_single"
      record mem-ours-single "$t" ours_mib "$work/ours_single"
      "$ours" "${ours_args[@]}" --precision mixed --output "$work/ours_mixed" >/dev/null
      record ours-mixed "$t" ours_ns "$work/ours_mixed"
      record mem-ours-mixed "$t" ours_mib "$work/ours_mixed"
      if [[ "$have_mpi" == 1 ]]; then
        if [[ "$t" -gt 1 ]]; then
          OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe --bind-to none "$ours" "${ours_args[@]}" \
            --output "$work/ours_ranks" >/dev/null
          record "ours-${t}ranks" "$t" ours_ns "$work/ours_ranks"
        fi
        OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe --bind-to none "$ours" "${ours_args[@]}" \
          --decompose --output "$work/ours_decomposed" >/dev/null
        record ours-decomposed "$t" ours_ns "$work/ours_decomposed"
        record mem-ours-decomposed "$t" ours_mib "$work/ours_decomposed"
        # GNU time of mpiexec: the largest peak among the processes it waited for (the ranks).
        echo "ppic3 $t $( (cd "$work/ppic3" && OMP_NUM_THREADS=1 timed mpiexec -n "$t" --oversubscribe \
          --bind-to none ./fppic3) | peer_ns)" >>"$results"
        echo "mem-ppic3 $t $(peer_mib "$work/time.txt")" >>"$results"
      fi
    done
    continue
  fi
  for t in $threads; do
    export OMP_NUM_THREADS="$t"
    echo "pic2 $t $( (cd "$work/pic2" && ./fpic2) | peer_ns)" >>"$results"
    echo "mpic2 $t $( (cd "$work/mpic2" && ./fmpic2) | peer_ns)" >>"$results"
    echo "vmpic2 $t $( (cd "$work/vmpic2" && ./fvmpic2) | peer_ns)" >>"$results"
    "$ours" "${ours_args[@]}" --output "$work/ours" >/dev/null
    record ours "$t" ours_ns "$work/ours"
    "$ours" "${ours_args[@]}" --precision single --output "$work/ours_single" >/dev/null
    record ours-single "$t" ours_ns "$work/ours_single"
    "$ours" "${ours_args[@]}" --precision mixed --output "$work/ours_mixed" >/dev/null
    record ours-mixed "$t" ours_ns "$work/ours_mixed"
    # The push alone, here and in cache (the header says why).
    for p in double single mixed; do
      case "$p" in double) dir="$work/ours" ;; *) dir="$work/ours_$p" ;; esac
      record "push-$p" "$t" ours_push "$dir"
      "$ours" --dim 2 --case custom --cells 32 --particles 36864 --steps "$((256 * steps))" \
        --dt 0.1 --vth 1 --amplitude 0 --k 0.19634954084936207 --no-progress --overwrite \
        --precision "$p" --output "$work/ours_cached" >/dev/null
      record "cached-$p" "$t" ours_push "$work/ours_cached"
    done
    "$ours" "${ours_args[@]}" --output "$work/ours_separate" --host-step separate >/dev/null
    record ours-separate "$t" ours_ns "$work/ours_separate"
    if [[ "$t" -gt 1 ]] && command -v mpiexec >/dev/null; then
      OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe --bind-to none "$ours" "${ours_args[@]}" \
        --output "$work/ours_ranks" >/dev/null
      record "ours-${t}ranks" "$t" ours_ns "$work/ours_ranks"
    fi
    if [[ "$have_mpi" == 1 ]]; then  # the decomposed grids: ours and ppic2 on t ranks x 1 thread
      OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe --bind-to none "$ours" "${ours_args[@]}" \
        --decompose --output "$work/ours_decomposed" >/dev/null
      record ours-decomposed "$t" ours_ns "$work/ours_decomposed"
      OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe --bind-to none "$ours" "${ours_args[@]}" \
        --decompose --precision single --output "$work/ours_decomposed_single" >/dev/null
      record ours-decomposed-single "$t" ours_ns "$work/ours_decomposed_single"
      OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe --bind-to none "$ours" "${ours_args[@]}" \
        --decompose --precision mixed --output "$work/ours_decomposed_mixed" >/dev/null
      record ours-decomposed-mixed "$t" ours_ns "$work/ours_decomposed_mixed"
      echo "ppic2 $t $( (cd "$work/ppic2" && OMP_NUM_THREADS=1 mpiexec -n "$t" --oversubscribe \
        --bind-to none ./fppic2) | peer_ns)" >>"$results"
    fi
    echo "triad $t $(OMP_NUM_THREADS=$t "$work/triad")" >>"$results"
  done
done

python3 - "$results" "$threads" "$dim" "$steps" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    code, t, v = line.split()
    rows.setdefault(code, {}).setdefault(int(t), []).append(float(v))
threads = [int(t) for t in sys.argv[2].split()]
med = lambda code, t: statistics.median(rows[code][t]) if t in rows.get(code, {}) else None
fmt = lambda v: "-" if v is None else "%.2f" % v
if sys.argv[3] == "3":
    names = {"ours": "ours (pic --dim 3, fused host step)",
             "ours-single": "ours (--precision single)",
             "ours-mixed": "ours (--precision mixed)",
             "ours-decomposed": "ours (--decompose, N ranks x 1 thread)",
             "mpic3": "PICKSC mpic3 (OpenMP, tiles)", "ppic3": "PICKSC ppic3 (MPI, N ranks)"}
    for t in threads:
        if t > 1: names["ours-%dranks" % t] = "ours (%d MPI ranks x 1 thread)" % t
    print("3D, 128^3 cells, 56,623,104 particles, %s steps: ns per particle-step, median of %d "
          "interleaved runs (peak MiB per rank)" % (sys.argv[4], len(rows["ours"][threads[0]])))
    print("%-40s" % "code" + "".join("%20s" % ("%d core%s" % (t, "s" if t > 1 else "")) for t in threads))
    for code in (["ours", "ours-single", "ours-mixed"] + ["ours-%dranks" % t for t in threads if t > 1] +
                 ["ours-decomposed", "mpic3", "ppic3"]):
        if code not in rows: continue
        cells = []
        for t in threads:
            m, mem = med(code, t), med("mem-" + code, t)
            cells.append("%20s" % ("-" if m is None else "%.2f" % m + (" (%.0f)" % mem if mem else "")))
        print("%-40s" % names[code] + "".join(cells))
    for t in threads:
        print("ours / mpic3 on %d core(s): %.2fx" % (t, med("ours", t) / med("mpic3", t)))
        if med("ppic3", t) and med("ours-decomposed", t):
            print("ours decomposed / ppic3 on %d rank(s): %.2fx" % (t, med("ours-decomposed", t) / med("ppic3", t)))
    sys.exit(0)
names = {"ours": "ours (pic, one-pass host step)", "ours-separate": "ours (--host-step separate)",
         "ours-single": "ours (--precision single)",
         "ours-mixed": "ours (--precision mixed)",
         "ours-decomposed-single": "ours (--decompose --precision single)",
         "ours-decomposed-mixed": "ours (--decompose --precision mixed)",
         "pic2": "PICKSC pic2 (serial)", "mpic2": "PICKSC mpic2 (OpenMP, tiles)",
         "vmpic2": "PICKSC vmpic2 (OpenMP + SSE2)",
         "ours-decomposed": "ours (--decompose, N ranks x 1 thread)",
         "ppic2": "PICKSC ppic2 (MPI, N ranks x 1 thread)"}
for t in threads:
    if t > 1: names["ours-%dranks" % t] = "ours (%d MPI ranks x 1 thread)" % t
print("ns per particle-step, median of %d interleaved runs" % len(rows["ours"][threads[0]]))
print("%-36s" % "code" + "".join("%12s" % ("%d core%s" % (t, "s" if t > 1 else "")) for t in threads))
for code in (["ours", "ours-single", "ours-mixed", "ours-separate"] +
             ["ours-%dranks" % t for t in threads if t > 1] +
             ["ours-decomposed", "ours-decomposed-single", "ours-decomposed-mixed", "pic2", "mpic2",
              "vmpic2", "ppic2"]):
    if code not in rows: continue
    cells = []
    for t in threads:
        m = med(code, t)
        cells.append("%12s" % ("-" if m is None or (code == "pic2" and t > 1) else "%.2f" % m))
    print("%-36s" % names[code] + "".join(cells))
# x, y, vx, vy read and written once: 64 bytes in double, 32 in single, 48 in mixed (the
# offsets, the cells and the velocities).
for t in threads:
    tri = med("triad", t)
    for code, moved in (("ours", 64), ("ours-single", 32), ("ours-mixed", 48)):
        bound = moved / tri
        print("triad %d thread(s): %.1f GB/s; %s moves %d B per particle-step: bound %.2f ns, "
              "%.0f%% of the measured %.2f" % (t, tri, code, moved, bound,
                                             100 * bound / med(code, t), med(code, t)))
for t in threads:
    print("the push alone on %d core(s), ns per particle-step, this problem / in cache (32^2 "
          "cells, 36,864 particles): %s" % (t, ", ".join(
              "%s %s / %s" % (p, fmt(med("push-" + p, t)), fmt(med("cached-" + p, t)))
              for p in ("double", "single", "mixed"))))
best = {t: min(med(c, t) for c in ("mpic2", "vmpic2") + (("pic2",) if t == 1 else ())) for t in threads}
for t in threads:
    print("ours / best peer on %d core(s): %.2fx; single: %.2fx; mixed: %.2fx" %
          (t, med("ours", t) / best[t], med("ours-single", t) / best[t],
           med("ours-mixed", t) / best[t]))
for t in threads:
    if med("ppic2", t) and med("ours-decomposed", t):
        print("ours decomposed / ppic2 on %d rank(s): %.2fx" % (t, med("ours-decomposed", t) / med("ppic2", t)))
EOF
