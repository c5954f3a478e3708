// cunumpy/index.cuh: thread-index macros for hand-written CUDA kernels.
//
// CUNUMPY_THREAD_1D(i, n) declares `long long i` as the global thread index and returns
// from the kernel when i >= n; the 2D and 3D forms do the same per axis (x, y, z).
// CUNUMPY_GRID_STRIDE_1D(i, n) { ... } loops i over [0, n) with the grid's stride, so any
// grid size covers any n.  They read blockIdx/blockDim/threadIdx/gridDim, so they are used
// in CUDA code (or under the kernel emulator, which provides those names).
#pragma once

#include "cunumpy/config.cuh"

// The calling thread's global indices, and a return for threads past the extents: 1, 2 and 3
// dimensions (i over x, j over y, k over z).
#define CUNUMPY_THREAD_1D(i, n)                                                      \
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; \
  if (i >= static_cast<long long>(n)) return
#define CUNUMPY_THREAD_2D(i, j, ni, nj)                                              \
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; \
  const long long j = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; \
  if (i >= static_cast<long long>(ni) || j >= static_cast<long long>(nj)) return
#define CUNUMPY_THREAD_3D(i, j, k, ni, nj, nk)                                       \
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; \
  const long long j = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; \
  const long long k = static_cast<long long>(blockIdx.z) * blockDim.z + threadIdx.z; \
  if (i >= static_cast<long long>(ni) || j >= static_cast<long long>(nj) ||          \
      k >= static_cast<long long>(nk))                                               \
  return

// A grid-stride loop over [0, n): each thread takes every (grid size)-th index.
#define CUNUMPY_GRID_STRIDE_1D(i, n)                                                \
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; \
       i < static_cast<long long>(n); i += static_cast<long long>(blockDim.x) * gridDim.x)
