// The electron density at the grid nodes: each particle adds q * w to the nodes of its
// stencil (CIC or TSC), by atomics.  ne must be zero before.  In 1D y is not read (pass x).
// The grid: a rank's guarded local grid, node (i, j) at (i - x0 + guard) * row + (j - y0 +
// guard).
#include <cunumpy/atomic.cuh>

#include "pic_kernels.hpp"

extern "C" __global__ void deposit(const double* x, const double* y, double* ne, long long x0,
                                   long long y0, long long guard, long long row, int order,
                                   bool two, double inv_dx, double inv_dy, double q, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid(order, two, inv_dx, inv_dy, x0, y0, guard, row);
  pic::kernels::for_each_node(
      grid, x[i], y[i], [&](long long c, double w, int) { cunumpy_atomic_add(&ne[c], q * w); });
}
