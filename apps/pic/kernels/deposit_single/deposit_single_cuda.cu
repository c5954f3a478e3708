// deposit_cuda.cu's deposit of float particles (--precision single) into the double density.
#include <cunumpy/atomic.cuh>

#include "pic_kernels.hpp"

extern "C" __global__ void deposit_single(const float* x, const float* y, const float* z,
                                          double* ne, long long x0, long long y0, long long z0,
                                          long long guard, long long row, long long col, int order,
                                          int dim, double inv_dx, double inv_dy, double inv_dz,
                                          double q, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid_of(order, dim, inv_dx, inv_dy, inv_dz, x0, y0, z0, guard, row, col);
  pic::kernels::for_each_node(grid, x[i], y[i], z[i], [&](long long c, double w, int) {
    cunumpy_atomic_add(&ne[c], q * w);
  });
}
