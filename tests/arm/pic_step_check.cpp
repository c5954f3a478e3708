// The mini-app's CIC vector loop (apps/pic/host_step_simd.cpp) against its scalar loop: positions,
// velocities and density bit for bit, far movers included, on the whole box and on a block,
// with real and integer grids (tests/pic/host_step_case.hpp).  Built
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
  pic::host_step::CaseGrid whole, block;  // the whole box, and a decomposed rank's block
  block.x0 = 4;
  block.lnx = 8;
  block.y0 = 3;
  block.lny = 6;
  int failures = 0;
  for (const auto& g : {whole, block})
    for (bool integer : {false, true}) {
      const auto scalar = pic::host_step::run_case(false, g, integer);
      const auto vector = pic::host_step::run_case(true, g, integer);
      const bool same = vector.x == scalar.x && vector.y == scalar.y && vector.vx == scalar.vx &&
                        vector.vy == scalar.vy && vector.ne == scalar.ne &&
                        vector.energies == scalar.energies &&
                        vector.sums.undeposited == scalar.sums.undeposited;
      std::printf("%s, %s grids: %s\n", g.whole() ? "whole box" : "block",
                  integer ? "integer" : "real", same ? "vector loop == scalar loop" : "DIFFERENT");
      failures += same ? 0 : 1;
    }
  return failures == 0 ? 0 : 1;
}
