// The leapfrog push: v += dv E; then, if `move`, x += dt v (periodic).  energy[i] is the
// particle's kinetic energy with time-centred velocities (mass / 2 * v_old . v_new).  In 1D
// y, vy and ey_p are not read or written (pass x, vx and ex_p).
#include "pic_kernels.hpp"

extern "C" __global__ void push(double* x, double* y, double* vx, double* vy, const double* ex_p,
                                const double* ey_p, double* energy, double dv, double dt, double lx,
                                double ly, double mass, bool move, bool two, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double old_x = vx[i];
  const double new_x = old_x + dv * ex_p[i];
  vx[i] = new_x;
  double e = old_x * new_x;
  if (move) x[i] = pic::kernels::periodic(x[i] + dt * new_x, lx);
  if (two) {
    const double old_y = vy[i];
    const double new_y = old_y + dv * ey_p[i];
    vy[i] = new_y;
    e += old_y * new_y;
    if (move) y[i] = pic::kernels::periodic(y[i] + dt * new_y, ly);
  }
  energy[i] = 0.5 * mass * e;
}
