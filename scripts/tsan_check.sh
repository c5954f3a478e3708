#!/usr/bin/env bash
# The threaded tests under ThreadSanitizer:  bash scripts/tsan_check.sh
#
# Host-only configuration (no CUDA, MPI, HDF5 or PETSc) built with clang and LLVM's OpenMP
# runtime: its Archer tool (OMP_TOOL_LIBRARIES=libarcher.so) tells TSan about OpenMP's
# barriers and tasks, so OpenMP needs no suppression.  GCC's libgomp synchronises through
# futexes TSan cannot see, which is why this job does not use g++.  The kernel emulator's
# block threads (Boost.Context fibers) are announced to TSan (__tsan_switch_to_fiber); the
# kernels it compiles at run time are not instrumented (TSan ignores them:
# ignore_noninstrumented_modules).  Nothing is suppressed.  Any report fails the job.
# BUILD_DIR (default build-tsan); CLANG_VERSION (default 16).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
version="${CLANG_VERSION:-16}"
BUILD_DIR="${BUILD_DIR:-$CUNUMPY_ROOT/build-tsan}"

bash "$here/install_deps.sh" "clang-$version" "libomp-$version-dev" "libclang-rt-$version-dev"
archer="/usr/lib/llvm-$version/lib/libarcher.so"
[ -f "$archer" ] || { echo "tsan_check: $archer is missing (libomp-$version-dev)"; exit 1; }

launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$CUNUMPY_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_C_COMPILER="clang-$version" -DCMAKE_CXX_COMPILER="clang++-$version" \
  -DCUNUMPY_SANITIZE_THREAD=ON -DCUNUMPY_ENABLE_CUDA=OFF -DCUNUMPY_ENABLE_MPI=OFF \
  -DCUNUMPY_ENABLE_HDF5=OFF -DCUNUMPY_ENABLE_PETSC=OFF -DCUNUMPY_ENABLE_NVTX=OFF \
  -DCUNUMPY_BUILD_APPS=OFF
programs=(test_threads test_emulated_streams test_parallel)
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${programs[@]}"

export OMP_TOOL_LIBRARIES="$archer"
export ARCHER_OPTIONS="verbose=1"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
export OMP_NUM_THREADS=2
status=0
for p in "${programs[@]}"; do
  for streams in async deferred; do
    echo "== $p under TSan (CUNUMPY_EMULATED_STREAMS=$streams)"
    if ! CUNUMPY_EMULATED_STREAMS=$streams CUNUMPY_TEST_EXPECT_STREAMS=$streams \
        "$BUILD_DIR/tests/$p" 2>&1 | tee "$BUILD_DIR/$p.$streams.log" | tail -n 3; then
      status=1
    fi
    if grep -q "WARNING: ThreadSanitizer" "$BUILD_DIR/$p.$streams.log"; then
      grep -A30 -m1 "WARNING: ThreadSanitizer" "$BUILD_DIR/$p.$streams.log"
      status=1
    fi
    grep -q "Archer detected OpenMP application with TSan" "$BUILD_DIR/$p.$streams.log" ||
      { echo "tsan_check: Archer did not attach to $p (OpenMP unannotated)"; status=1; }
  done
done
# The job must be able to fail: a race planted in test_threads is reported (TSan's exit code).
echo "== a planted race, which TSan must report"
set +e
CUNUMPY_TEST_PLANT_RACE=1 "$BUILD_DIR/tests/test_threads" \
  --gtest_filter=Threads.APlantedRaceIsReportedUnderThreadSanitizer > "$BUILD_DIR/planted.log" 2>&1
planted=$?
set -e
if [ "$planted" -ne 66 ] || ! grep -q "WARNING: ThreadSanitizer: data race" "$BUILD_DIR/planted.log"; then
  echo "tsan_check: the planted race was not reported (exit $planted)"
  tail -n 20 "$BUILD_DIR/planted.log"
  status=1
else
  echo "tsan_check: the planted race was reported"
fi
[ "$status" -eq 0 ] && echo "tsan_check: ${#programs[@]} programs race-free under ThreadSanitizer"
exit "$status"
