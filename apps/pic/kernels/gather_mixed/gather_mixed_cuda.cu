// gather_cuda.cu's gather on mixed-precision particles (deposit_mixed_cuda.cu): float offsets
// within int32 cells, on the grid in cell units.
#include "pic_kernels.hpp"

extern "C" __global__ void gather_mixed(const float* x, const float* y, const float* z,
                                        const int* cx, const int* cy, const int* cz,
                                        const double* ex, const double* ey, const double* ez,
                                        double* ex_p, double* ey_p, double* ez_p, long long x0,
                                        long long y0, long long z0, long long guard, long long row,
                                        long long col, int order, int dim, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid_of(order, dim, 1.0, 1.0, 1.0, x0, y0, z0, guard, row, col);
  const pic::kernels::Positions<float> pos{{x, y, z}, {cx, cy, cz}};
  pic::kernels::gather_particle(grid, pos, ex, ey, ez, ex_p, ey_p, ez_p, dim, i);
}
