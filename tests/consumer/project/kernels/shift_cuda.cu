// The consumer's own CUDA kernel: its header through include_dirs, cunumpy's views, and
// module-scope data the host sets and reads (set_global / get_global), and a second kernel of
// the same module that sees the same data.
#include <cunumpy/array_view.cuh>
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
