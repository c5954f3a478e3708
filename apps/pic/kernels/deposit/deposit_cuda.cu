// The electron density at the grid nodes: each particle adds q * w to the nodes of its
// stencil (CIC or TSC), by atomics.  ne must be zero before.  Past the dimension y and z are
// not read (pass x).  The grid: a rank's guarded local grid, node (i, j, l) at (i - x0 + guard)
// * row + (j - y0 + guard) * col + (l - z0 + guard) in 3D (2D: col 1, no l; 1D: row 1).
#include <cunumpy/atomic.cuh>

#include "pic_kernels.hpp"

extern "C" __global__ void deposit(const double* x, const double* y, const double* z, double* ne,
                                   long long x0, long long y0, long long z0, long long guard,
                                   long long row, long long col, int order, int dim, double inv_dx,
                                   double inv_dy, double inv_dz, double q, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid_of(order, dim, inv_dx, inv_dy, inv_dz, x0, y0, z0, guard, row, col);
  pic::kernels::for_each_node(grid, x[i], y[i], z[i], [&](long long c, double w, int) {
    cunumpy_atomic_add(&ne[c], q * w);
  });
}
