// push_cuda.cu's push on mixed-precision particles (deposit_mixed_cuda.cu): the moves in cell
// units, dt_x = dt / dx (and so on) and the cells per axis (nx, ny, nz) for the box; each new
// offset rounded once, below 1, the cell moved by the whole cells crossed and wrapped.
#include "pic_kernels.hpp"

extern "C" __global__ void push_mixed(float* x, float* y, float* z, int* cx, int* cy, int* cz,
                                      float* vx, float* vy, float* vz, const double* ex_p,
                                      const double* ey_p, const double* ez_p, double* energy,
                                      double dv, double dt_x, double dt_y, double dt_z, double nx,
                                      double ny, double nz, double mass, bool move, int dim,
                                      long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* const p[3] = {x, y, z};
  int* const c[3] = {cx, cy, cz};
  float* const v[3] = {vx, vy, vz};
  const double* const f[3] = {ex_p, ey_p, ez_p};
  const double cells[3] = {nx, ny, nz};
  const double steps[3] = {dt_x, dt_y, dt_z};
  energy[i] = pic::kernels::push_particle(p, c, v, f, cells, steps, dv, mass, move, dim, i);
}
