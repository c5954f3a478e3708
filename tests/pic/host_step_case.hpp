// tests/pic/host_step_case.hpp: one particle step of the mini-app's host loop on a small
// random case (far movers and a position that rounds to the last node among its particles),
// through the CIC vector loop or the scalar loop alone.  Shared by test_pic's
// HostStep.VectorLoopGivesTheScalarLoopsBits and tests/arm/pic_step_check.cpp.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "host_step.hpp"
#include "host_step_simd.hpp"

namespace pic::host_step {

struct CaseResult {
  std::vector<double> x, y, vx, vy, ne;
  Sums sums;
};

inline CaseResult run_case(bool vectors) {
  const long long nx = 16, ny = 12, n = 1003;
  const GuardedGrid g = guarded(nx, ny);
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> ex(nx * ny), ey(nx * ny), exy, cells;
  for (auto& e : ex) e = u(gen) - 0.5;
  for (auto& e : ey) e = u(gen) - 0.5;
  fill_guarded_fields(g, ex.data(), ey.data(), exy);
  fill_cell_fields(nx, ny, ex.data(), ey.data(), cells);
  CaseResult r;
  r.x.resize(n);
  r.y.resize(n);
  r.vx.resize(n);
  r.vy.resize(n);
  for (long long i = 0; i < n; ++i) {
    r.x[i] = u(gen) * nx;
    r.y[i] = u(gen) * ny;
    r.vx[i] = 4.0 * (u(gen) - 0.5);
    r.vy[i] = 4.0 * (u(gen) - 0.5);
  }
  r.vx[17] = 31.0 * nx;  // far moves, inside the vector loop's range
  r.vy[18] = -22.0 * ny;
  r.x[19] = std::nextafter(static_cast<double>(nx), 0.0);  // rounds to the last node
  const Step step{
      r.x.data(), r.y.data(), r.vx.data(), r.vy.data(), n,
      1,          1.0,        1.0,         double(nx),  double(ny),
      -0.1,       0.1,        0.5,         exy.data(),  vectors ? cells.data() : nullptr};
  std::vector<std::vector<double>> grid(1, std::vector<double>(g.nodes(), 0.0));
  r.sums = push_and_deposit(g, step, grid);
  r.ne.assign(nx * ny, 0.0);
  fold_densities(g, grid, r.ne.data());
  return r;
}

}  // namespace pic::host_step
