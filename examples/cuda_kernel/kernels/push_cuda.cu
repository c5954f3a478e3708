// The particle push: v += q/m E dt, x += v dt, one thread per particle.
#include <cunumpy/array_view.cuh>
#include <push_math.cuh>

extern "C" __global__ void push(Array1D<double> x, Array1D<double> v, const double* e,
                                double q_over_m, double dt) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= x.shape[0]) return;
  v(i) = accelerate(v(i), e[i], q_over_m, dt);
  x(i) += v(i) * dt;
}
