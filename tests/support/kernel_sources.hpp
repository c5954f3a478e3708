// tests/support/kernel_sources.hpp: the Python reference's CudaKernel examples, and the structs
// of the kernel tests, shared by the host-compiled and the nvcc-compiled tests.
#pragma once

#include <cunumpy/cuda_struct.hpp>

CUNUMPY_CUDA_STRUCT(Particles, (double*, x), (double*, v), (int, n), (double, charge))
CUNUMPY_CUDA_STRUCT(MarkerArgs, (cunumpy::Array2D<double>, markers), (long long, n_markers),
                    (bool*, valid))

namespace cunumpy_test {

inline const char* kBlockSum = R"(
extern "C" __global__ void block_sum(const double* x, double* out, int n) {
  extern __shared__ double buffer[];
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  buffer[threadIdx.x] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) buffer[threadIdx.x] += buffer[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = buffer[0];
}
)";

inline const char* kScaleColumn = R"(
#include <cunumpy/array_view.cuh>
#include <cunumpy/index.cuh>
extern "C" __global__
void scale_column(Array2D<double> a, long long column, double factor) {
  CUNUMPY_THREAD_1D(i, a.shape[0]);
  a(i, column) *= factor;
}
)";

inline const char* kScale = R"(
template <typename T, int N>
__global__ void scale(T* x, T factor, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) x[i] = factor * x[i] * (T)N;
}
)";

// The struct push of the reference, after Particles' declaration.
inline const char* kPush = R"(
extern "C" __global__ void push(Particles p, double dt) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < p.n) p.x[i] += dt * p.charge * p.v[i];
}
)";

}  // namespace cunumpy_test
