// The leapfrog push: v += dv E; then, if `move`, x += dt v (periodic).  energy[i] is the
// particle's kinetic energy with time-centred velocities (mass / 2 * v_old . v_new).  Past the
// dimension the coordinates, velocities and fields are not read or written (pass x, vx, ex_p).
// push_single is the same on float particles.
#include "pic_kernels.hpp"

extern "C" __global__ void push(double* x, double* y, double* z, double* vx, double* vy, double* vz,
                                const double* ex_p, const double* ey_p, const double* ez_p,
                                double* energy, double dv, double dt, double lx, double ly,
                                double lz, double mass, bool move, int dim, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double* const p[3] = {x, y, z};
  double* const v[3] = {vx, vy, vz};
  const double* const f[3] = {ex_p, ey_p, ez_p};
  const double l[3] = {lx, ly, lz};
  energy[i] = pic::kernels::push_particle(p, v, f, l, dv, dt, mass, move, dim, i);
}
