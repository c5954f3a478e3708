// cunumpy/parallel_cuda.cuh: the CUDA side of parallel_for / parallel_reduce.
//
// Included by <cunumpy/parallel.hpp> in nvcc compilations only.  Loops are grid-stride
// kernels on the current stream; reductions are two deterministic passes (one partial per
// block, then one block combining the partials in order), read back to the host.
#pragma once

#include <cuda_runtime.h>

#include <source_location>
#include <string_view>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/array.hpp>
#include <cunumpy/cuda_check.hpp>
#include <cunumpy/ledger.hpp>
#include <cunumpy/reduce_op.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy::detail {

inline constexpr int kParallelBlock = 256;

inline unsigned int parallel_grid(long long n) {
  // Enough blocks to fill an H200 several times over; the grid-stride loop covers the rest.
  const long long blocks = ceil_div(n, static_cast<long long>(kParallelBlock));
  return static_cast<unsigned int>(blocks < 8192 ? blocks : 8192);
}

template <typename F>
__global__ void __launch_bounds__(kParallelBlock) parallel_for_kernel(long long n, F f) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(blockDim.x) * gridDim.x)
    f(i);
}

template <typename F>
void cuda_for(std::string_view name, long long n, F& f) {
  void* stream = current_stream(Backend::cuda).native_handle();
  note_kernel_launch(name, parallel_grid(n), kParallelBlock, stream);
  parallel_for_kernel<<<parallel_grid(n), kParallelBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      n, f);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
}

// Reduces the block's values in shared memory in a fixed order; thread 0 gets the result.
template <typename T>
__device__ T block_reduce_ordered(T value, ReduceOp op) {
  __shared__ T scratch[kParallelBlock];
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int s = kParallelBlock / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s)
      scratch[threadIdx.x] = reduce_combine<T>(op, scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  return scratch[0];
}

template <typename T, typename F>
__global__ void __launch_bounds__(kParallelBlock)
    parallel_reduce_partials(long long n, ReduceOp op, F f, T* partials) {
  T acc = reduce_identity<T>(op);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(blockDim.x) * gridDim.x)
    acc = reduce_combine<T>(op, acc, static_cast<T>(f(i)));
  const T block = block_reduce_ordered<T>(acc, op);
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

template <typename T>
__global__ void __launch_bounds__(kParallelBlock)
    parallel_reduce_final(const T* partials, unsigned int count, ReduceOp op, T* result) {
  T acc = reduce_identity<T>(op);
  for (unsigned int i = threadIdx.x; i < count; i += blockDim.x)
    acc = reduce_combine<T>(op, acc, partials[i]);
  const T total = block_reduce_ordered<T>(acc, op);
  if (threadIdx.x == 0) *result = total;
}

template <typename T, typename F>
T cuda_reduce(std::string_view name, long long n, ReduceOp op, F& f,
              const std::source_location& where) {
  const unsigned int grid = parallel_grid(n);
  Array<T> scratch(Shape{static_cast<long long>(grid) + 1}, Backend::cuda);
  T* partials = scratch.data();
  T* result = partials + grid;
  auto stream = static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle());
  note_kernel_launch(name, grid, kParallelBlock, stream);
  parallel_reduce_partials<T><<<grid, kParallelBlock, 0, stream>>>(n, op, f, partials);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
  note_kernel_launch(name, 1, kParallelBlock, stream);
  parallel_reduce_final<T><<<1, kParallelBlock, 0, stream>>>(partials, grid, op, result);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
  T host{};
  CUNUMPY_CUDA_CHECK(cudaMemcpyAsync(&host, result, sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUNUMPY_CUDA_CHECK(cudaStreamSynchronize(stream));
  record_sync(
      SyncKind::reduction, [&] { return "parallel_reduce(" + std::string(name) + ")"; }, where);
  return host;
}

}  // namespace cunumpy::detail
