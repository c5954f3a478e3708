// The mini-app's CIC vector loops, 2D and 3D (apps/pic/host_step_simd.cpp) against the scalar loop:
// positions, velocities and density bit for bit, far movers included, on the whole box and on a
// block, with real and integer grids, double and float particles (tests/pic/host_step_case.hpp).
// Built and run by scripts/arm_check.sh under qemu-user for NEON, SVE and SVE2.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <cunumpy/algorithms.hpp>

#include "host_simd/targets.hpp"
#include "host_step_case.hpp"

int main() {
  int failures = 0;
  // double, float, and float in cells and offsets (mixed precision)
  for (int precision : {0, 1, 2})
    for (const auto& g : pic::host_step::vector_loop_cases())
      for (bool integer : {false, true}) {
        const bool single = precision > 0, cells = precision == 2;
        const auto both = pic::host_step::scalar_and_vector(single, g, integer, cells);
        const bool same = both.same();
        std::printf("%dD %s%s, %s grids, %s particles: %s%s\n", g.dim,
                    g.whole() ? "whole box" : "block", g.cells_text().c_str(),
                    integer ? "integer" : "real",
                    cells    ? "mixed"
                    : single ? "float"
                             : "double",
                    same ? "vector loop == scalar loop" : "DIFFERENT: ",
                    same ? "" : both.differs().c_str());
        failures += same ? 0 : 1;
      }
  return failures == 0 ? 0 : 1;
}
