// tests/support/kernel_sources.hpp: the Python reference's CudaKernel examples, and the structs
// of the kernel tests, shared by the host-compiled and the nvcc-compiled tests.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/transfer.hpp>

CUNUMPY_CUDA_STRUCT(Particles, (double*, x), (double*, v), (int, n), (double, charge))
CUNUMPY_CUDA_STRUCT(MarkerArgs, (cunumpy::Array2D<double>, markers), (long long, n_markers),
                    (bool*, valid))

namespace cunumpy_test {

inline const char* kAxpy = R"(
extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";

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

// The message of the exception f throws ("(no exception)" when it throws none).
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// Runs kBlockSum over 0, 1, ..., n-1 (on the active backend) and returns the sum of the
// per-block partial sums and block 0's partial.
inline std::pair<double, double> run_block_sum(cunumpy::CudaKernel& block_sum, long long n) {
  auto x = cunumpy::arange<double>(0.0, static_cast<double>(n), 1.0);
  const auto [grid, block] = block_sum.launch_shape(n);
  auto partial = cunumpy::zeros<double>({grid.x});
  block_sum({.n_threads = n, .shared_mem = static_cast<std::size_t>(block.x) * sizeof(double)}, x,
            partial, static_cast<int>(n));
  const auto h = cunumpy::to_host(partial);
  double total = 0;
  for (long long b = 0; b < grid.x; ++b) total += h(b);
  return {total, h(0)};
}

}  // namespace cunumpy_test
