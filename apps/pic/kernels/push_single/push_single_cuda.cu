// push_cuda.cu's push on float particles (--precision single): the arithmetic in double, each
// new position and velocity rounded once when stored.
#include "pic_kernels.hpp"

extern "C" __global__ void push_single(float* x, float* y, float* z, float* vx, float* vy,
                                       float* vz, const double* ex_p, const double* ey_p,
                                       const double* ez_p, double* energy, double dv, double dt,
                                       double lx, double ly, double lz, double mass, bool move,
                                       int dim, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* const p[3] = {x, y, z};
  float* const v[3] = {vx, vy, vz};
  const double* const f[3] = {ex_p, ey_p, ez_p};
  const double l[3] = {lx, ly, lz};
  energy[i] = pic::kernels::push_particle(p, v, f, l, dv, dt, mass, move, dim, i);
}
