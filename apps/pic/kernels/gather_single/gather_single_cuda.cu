// gather_cuda.cu's gather at float particles (--precision single); the field stays double.
#include "pic_kernels.hpp"

extern "C" __global__ void gather_single(const float* x, const float* y, const float* z,
                                         const double* ex, const double* ey, const double* ez,
                                         double* ex_p, double* ey_p, double* ez_p, long long x0,
                                         long long y0, long long z0, long long guard, long long row,
                                         long long col, int order, int dim, double inv_dx,
                                         double inv_dy, double inv_dz, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid_of(order, dim, inv_dx, inv_dy, inv_dz, x0, y0, z0, guard, row, col);
  pic::kernels::gather_particle(grid, x, y, z, ex, ey, ez, ex_p, ey_p, ez_p, dim, i);
}
