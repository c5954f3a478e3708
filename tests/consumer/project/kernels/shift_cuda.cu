// The consumer's own CUDA kernel: its header through include_dirs, cunumpy's views, and
// module-scope data the host sets and reads (set_global / get_global), and a second kernel of
// the same module that sees the same data; a block reduction (on the emulated device, split into
// regions at it).
#include <cunumpy/array_view.cuh>
#include <cunumpy/reduce.cuh>
#include <shift_amount.cuh>

__device__ int shifted;

extern "C" __global__ void shift(Array1D<double> x) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < x.shape[0]) {
    x(i) += shift_amount(i);
    atomicAdd(&shifted, 1);
  }
}

extern "C" __global__ void report(int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = shifted;
}

extern "C" __global__ void total(const double* x, double* partial, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const double s = cunumpy_block_sum(i < n ? x[i] : 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
