// A device header of the program's own, included by the kernel as <push_math.cuh>.
#pragma once

__device__ inline double accelerate(double v, double e, double q_over_m, double dt) {
  return v + q_over_m * e * dt;
}
