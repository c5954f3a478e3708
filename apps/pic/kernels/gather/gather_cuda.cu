// The field at the particles: E interpolated from the nodes of each particle's stencil.  In 1D
// y, ey and ey_p are not read or written (pass x, ex and ex_p).  The grid: a rank's guarded
// local grid (deposit_cuda.cu).
#include "pic_kernels.hpp"

extern "C" __global__ void gather(const double* x, const double* y, const double* ex,
                                  const double* ey, double* ex_p, double* ey_p, long long x0,
                                  long long y0, long long guard, long long row, int order, bool two,
                                  double inv_dx, double inv_dy, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid(order, two, inv_dx, inv_dy, x0, y0, guard, row);
  double e0 = 0.0, e1 = 0.0;
  pic::kernels::for_each_node(grid, x[i], y[i], [&](long long c, double w, int) {
    e0 += w * ex[c];
    if (two) e1 += w * ey[c];
  });
  ex_p[i] = e0;
  if (two) ey_p[i] = e1;
}
