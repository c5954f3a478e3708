// The leapfrog push: v += dv E; then, if `move`, x += dt v (periodic).  energy[i] is the
// particle's kinetic energy with time-centred velocities (mass / 2 * v_old . v_new).  Past the
// dimension the coordinates, velocities and fields are not read or written (pass x, vx, ex_p).
#include "pic_kernels.hpp"

extern "C" __global__ void push(double* x, double* y, double* z, double* vx, double* vy, double* vz,
                                const double* ex_p, const double* ey_p, const double* ez_p,
                                double* energy, double dv, double dt, double lx, double ly,
                                double lz, double mass, bool move, int dim, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double old_x = vx[i];
  const double new_x = old_x + dv * ex_p[i];
  vx[i] = new_x;
  double e = old_x * new_x;
  if (move) x[i] = pic::kernels::periodic(x[i] + dt * new_x, lx);
  if (dim >= 2) {
    const double old_y = vy[i];
    const double new_y = old_y + dv * ey_p[i];
    vy[i] = new_y;
    e += old_y * new_y;
    if (move) y[i] = pic::kernels::periodic(y[i] + dt * new_y, ly);
  }
  if (dim == 3) {
    const double old_z = vz[i];
    const double new_z = old_z + dv * ez_p[i];
    vz[i] = new_z;
    e += old_z * new_z;
    if (move) z[i] = pic::kernels::periodic(z[i] + dt * new_z, lz);
  }
  energy[i] = 0.5 * mass * e;
}
