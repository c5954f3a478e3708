#!/usr/bin/env bash
# On a machine with a GPU: builds cunumpy with CUDA, runs the test suite (the GPU tests run
# instead of skipping), then the benchmarks that matter on a GPU, and prints one table:
#   - the PIC mini-app, 2D CIC, 10^8 particles on the cuda backend: particle-steps per second
#     and the share of the HBM roofline for the bytes a step moves (PIC_BYTES per particle-step,
#     default 160: six double arrays swept about five times, as the host analysis counts);
#   - the separate (rtc) and the tiled particle steps side by side, 2D and 3D, double and single
#     precision: ns a particle-step, the share of the roofline for the bytes each design moves
#     (docs/mini-app.md's model) and the tiled step's speed-up;
#   - device sort_by_key against CUB's SortPairs called directly (bench_gpu);
#   - HostStaging's device->host copy against the pinned-copy peak (bench_staging);
#   - a checked CudaKernel launch against a raw <<<>>> launch (bench_gpu).
# Exits non-zero when a test fails (after printing what ran), 77 when there is no GPU.
#   bash scripts/gpu_check.sh                     # HBM_GBS=4800 (H200) unless given
#   HBM_GBS=3350 PARTICLES=100000000 bash scripts/gpu_check.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$here/build-gpu}"
hbm="${HBM_GBS:-4800}"
particles="${PARTICLES:-100000000}"
bytes="${PIC_BYTES:-160}"
jobs="${JOBS:-$(nproc)}"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no GPU here (nvidia-smi -L fails): nothing to check"
  exit 77
fi
nvidia-smi -L
start=$(date +%s)
echo "== build (CUDA ON, $jobs jobs) in $build"
bash "$here/scripts/install_deps.sh" >/dev/null || exit 1
source "$here/scripts/env.sh" >/dev/null
cmake -S "$here" -B "$build" -DCUNUMPY_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 ||
  { tail -20 "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" >"$build.build.log" 2>&1 || { grep -E "error" -A3 "$build.build.log" | head -40; exit 1; }
echo "== tests ($(( $(date +%s) - start )) s so far)"
ctest --test-dir "$build" -j "$jobs" --timeout 600 --output-on-failure >"$build.ctest.log" 2>&1
tests_rc=$?
grep -E "tests passed|tests failed" "$build.ctest.log"
grep -E "\(Failed\)|\(Timeout\)" "$build.ctest.log" | head -20
# The GPU tests must have run, not skipped.
skipped_gpu=$(grep -cE "no CUDA device|GPU.*skip" "$build.ctest.log" || true)

echo "== benchmarks ($(( $(date +%s) - start )) s so far)"
out=$(mktemp -d)
CUNUMPY_BACKEND=cuda "$build/apps/pic/pic" --case custom --dim 2 --cells 2048 --particles "$particles" \
  --steps 20 --sort-every 0 --no-progress --output "$out/pic" --overwrite --flush-every 0 >"$out/pic.log" 2>&1 ||
  { tail -5 "$out/pic.log"; tests_rc=1; }
# The separate and the tiled particle steps side by side: 2D (2048^2 cells) and 3D (128^3),
# double and single precision.
for dim in 2 3; do
  for precision in double single; do
    for step in auto tiled; do
      run="$out/steps/${dim}d_${precision}_${step}"
      mkdir -p "$run"
      CUNUMPY_BACKEND=cuda "$build/apps/pic/pic" --case custom --dim "$dim" \
        --cells "$([ "$dim" = 2 ] && echo 2048 || echo 128)" --particles "$particles" --steps 20 \
        --precision "$precision" --particle-step "$step" --kernels rtc --no-progress \
        --output "$run" --overwrite --flush-every 0 >"$run.log" 2>&1 ||
        { tail -5 "$run.log"; tests_rc=1; }
    done
  done
done
"$build/apps/bench_gpu" >"$out/gpu.txt" 2>&1 || { cat "$out/gpu.txt"; tests_rc=1; }
CUNUMPY_BACKEND=cuda "$build/apps/bench_staging" --benchmark_out="$out/staging.csv" --benchmark_out_format=csv \
  >"$out/staging.txt" 2>"$out/staging.err" ||
  { tail -5 "$out/staging.err"; tests_rc=1; }

python3 "$here/scripts/gpu_table.py" "$out" "$hbm" "$bytes"
echo "== gpu_check finished in $(( $(date +%s) - start )) s"
[ "$skipped_gpu" -eq 0 ] || echo "gpu_check: warning: $skipped_gpu GPU test lines say they skipped"
exit $tests_rc
