// deposit_cuda.cu's deposit on mixed-precision particles (--precision mixed): each position a
// float offset within its cell, in cell units (x, y, z), beside the cell (cx, cy, cz), on the
// grid in cell units (no cell sizes).  Past the dimension y, z, cy and cz are not read (pass x
// and cx).
#include <cunumpy/atomic.cuh>

#include "pic_kernels.hpp"

extern "C" __global__ void deposit_mixed(const float* x, const float* y, const float* z,
                                         const int* cx, const int* cy, const int* cz, double* ne,
                                         long long x0, long long y0, long long z0, long long guard,
                                         long long row, long long col, int order, int dim, double q,
                                         long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const pic::kernels::Grid grid =
      pic::kernels::local_grid_of(order, dim, 1.0, 1.0, 1.0, x0, y0, z0, guard, row, col);
  const pic::kernels::Positions<float> pos{{x, y, z}, {cx, cy, cz}};
  pic::kernels::for_each_node(
      grid, pos, i, [&](long long c, double w, int) { cunumpy_atomic_add(&ne[c], q * w); });
}
