// The mini-app's CIC vector loops, 2D and 3D (apps/pic/host_step_simd.cpp) against the scalar loop:
// positions, velocities and density bit for bit, far movers included, on the whole box and on a
// block, with real and integer grids, double and float particles (tests/pic/host_step_case.hpp).
// The re-sort's Morton keys (apps/pic/resort_keys.cpp) against their scalar formula too.
// Built and run by scripts/arm_check.sh under qemu-user for NEON, SVE and SVE2.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <cunumpy/algorithms.hpp>

#include "host_simd/targets.hpp"
#include "host_step_case.hpp"
#include "resort_keys.hpp"

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
  // The re-sort's keys (resort_keys.cpp) against the scalar formula, float and double positions
  // and cells with offsets, some outside the box.
  {
    const long long n = 1003, cells[3] = {48, 40, 36};
    std::vector<float> pf[3], off[3];
    std::vector<double> pd[3];
    std::vector<int> c[3];
    unsigned state = 7;
    for (int a = 0; a < 3; ++a)
      for (long long i = 0; i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        const double x = (static_cast<double>(state >> 8) / 16777216.0 * 1.2 - 0.1) * cells[a];
        pf[a].push_back(static_cast<float>(x));
        pd[a].push_back(x);
        c[a].push_back(static_cast<int>(std::floor(x)));
        off[a].push_back(std::min(static_cast<float>(x - std::floor(x)), 0.99999994f));
      }
    const auto same = [&](const auto& cell, const char* what) {
      for (int dim = 1; dim <= 3; ++dim) {
        std::vector<std::uint64_t> keys(n);
        pic::morton_keys(cell, dim, n, keys.data());
        bool equal = true;
        for (long long i = 0; i < n; ++i) equal = equal && keys[i] == cell.key(dim, i);
        std::printf("%dD re-sort keys, %s: %s\n", dim, what,
                    equal ? "vectors == scalar formula" : "DIFFERENT");
        failures += equal ? 0 : 1;
      }
    };
    pic::kernels::Positions<float> f{{pf[0].data(), pf[1].data(), pf[2].data()}, {}};
    pic::kernels::Positions<double> d{{pd[0].data(), pd[1].data(), pd[2].data()}, {}};
    pic::kernels::Positions<float> m{{off[0].data(), off[1].data(), off[2].data()},
                                     {c[0].data(), c[1].data(), c[2].data()}};
    same(pic::CellOf<float>{f, {1.0, 1.0, 1.0}, {cells[0], cells[1], cells[2]}}, "float");
    same(pic::CellOf<double>{d, {1.0, 1.0, 1.0}, {cells[0], cells[1], cells[2]}}, "double");
    same(pic::CellOf<float>{m, {1.0, 1.0, 1.0}, {cells[0], cells[1], cells[2]}}, "cells");
  }
  return failures == 0 ? 0 : 1;
}
