// The mini-app's CIC vector loop (apps/pic/host_step_simd.cpp) against its scalar loop: positions,
// velocities and density bit for bit, far movers included (tests/pic/host_step_case.hpp).  Built
// and run by scripts/arm_check.sh under qemu-user for NEON, SVE and SVE2.
#include <cstdio>

#include <cunumpy/algorithms.hpp>

#include "host_simd/targets.hpp"
#include "host_step_case.hpp"

// The library's cunumpy::host_simd() (kernels/src/algorithms.cpp), which the mini-app's vector
// loop follows; this check links the target choice alone.
std::string cunumpy::host_simd() {
  return detail::host_simd::choice().report;
}

int main() {
  const auto scalar = pic::host_step::run_case(false);
  const auto vector = pic::host_step::run_case(true);
  const bool same = vector.x == scalar.x && vector.y == scalar.y && vector.vx == scalar.vx &&
                    vector.vy == scalar.vy && vector.ne == scalar.ne;
  std::printf("%s\n", same ? "vector loop == scalar loop" : "DIFFERENT");
  return same ? 0 : 1;
}
