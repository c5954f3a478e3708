// The field at the particles: E interpolated from the nodes of each particle's stencil.  Past
// the dimension the coordinates and components are not read or written (pass x, ex and ex_p).
// The grid: a rank's guarded local grid (deposit_cuda.cu).  gather_single: float particles.
#include "pic_kernels.hpp"

extern "C" __global__ void gather(const double* x, const double* y, const double* z,
                                  const double* ex, const double* ey, const double* ez,
                                  double* ex_p, double* ey_p, double* ez_p, long long x0,
                                  long long y0, long long z0, long long guard, long long row,
                                  long long col, int order, int dim, double inv_dx, double inv_dy,
                                  double inv_dz, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid_of(order, dim, inv_dx, inv_dy, inv_dz, x0, y0, z0, guard, row, col);
  pic::kernels::gather_particle(grid, x, y, z, ex, ey, ez, ex_p, ey_p, ez_p, dim, i);
}
