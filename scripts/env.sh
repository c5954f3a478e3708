# Sourced by the scripts: the toolchain environment shared by build, test and demo.
# CUDA toolkit on PATH when installed in the usual place.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
# Open MPI refuses to run as root without these; --oversubscribe lets 4 ranks share 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
CUNUMPY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CUNUMPY_ROOT
JOBS="${JOBS:-2}"
# ccache: paths below the checkout are hashed relative to it, so a clone in another folder
# (CI's) reuses what an earlier build of the same sources compiled.
export CCACHE_BASEDIR="$CUNUMPY_ROOT"
export CCACHE_NOHASHDIR=1
