// tests/pic/host_step_case.hpp: one particle step of the mini-app's host loop (host_step.hpp)
// on a small random 2D CIC case (far movers, a position that rounds to the last node), through
// the vector loop or the scalar loop alone, on a grid that is the whole box or a block of it
// (a decomposed rank's, whose particles' images may lie beyond its guards), with real or
// integer (deterministic) grids.  Shared by test_pic and tests/arm/pic_step_check.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "host_step.hpp"
#include "host_step_simd.hpp"

namespace pic::host_step {

struct CaseResult {
  std::vector<double> x, y, vx, vy, ne, energies;
  Sums sums;
};

// A guarded block of an nx x ny periodic grid: nodes [x0, x0 + lnx) x [y0, y0 + lny) with
// `guard` nodes around, E random on the whole grid (the guards its periodic images).
struct CaseGrid {
  long long nx = 16, ny = 12, x0 = 0, y0 = 0, lnx = 16, lny = 12, guard = 2;
  long long row() const { return lny + 2 * guard; }
  long long nodes() const { return (lnx + 2 * guard) * row(); }
  long long base() const { return (guard - x0) * row() + (guard - y0); }
  bool whole() const { return lnx == nx && lny == ny; }
};

inline CaseResult run_case(bool vectors, const CaseGrid& g = {}, bool integer = false) {
  const long long n = 1003;
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> gex(g.nx * g.ny), gey(g.nx * g.ny);
  for (auto& e : gex) e = u(gen) - 0.5;
  for (auto& e : gey) e = u(gen) - 0.5;
  std::vector<double> ex(g.nodes()), ey(g.nodes()), exy, cells;
  for (long long i = 0; i < g.lnx + 2 * g.guard; ++i)
    for (long long j = 0; j < g.row(); ++j) {
      const long long gi = ((g.x0 + i - g.guard) % g.nx + g.nx) % g.nx;
      const long long gj = ((g.y0 + j - g.guard) % g.ny + g.ny) % g.ny;
      ex[i * g.row() + j] = gex[gi * g.ny + gj];
      ey[i * g.row() + j] = gey[gi * g.ny + gj];
    }
  interleave_fields(g.nodes(), ex.data(), ey.data(), nullptr, exy);
  fill_cell_fields(g.nodes(), g.row(), ex.data(), ey.data(), cells);
  CaseResult r;
  r.x.resize(n);
  r.y.resize(n);
  r.vx.resize(n);
  r.vy.resize(n);
  r.energies.assign(n, 0.0);
  for (long long i = 0; i < n; ++i) {  // at x_n in the block
    r.x[i] = static_cast<double>(g.x0) + u(gen) * static_cast<double>(g.lnx);
    r.y[i] = static_cast<double>(g.y0) + u(gen) * static_cast<double>(g.lny);
    r.vx[i] = 4.0 * (u(gen) - 0.5);
    r.vy[i] = 4.0 * (u(gen) - 0.5);
  }
  r.vx[17] = 31.0 * g.nx;  // far moves, inside the vector loop's range
  r.vy[18] = -22.0 * g.ny;
  r.x[40] = static_cast<double>(g.x0 + g.lnx) - 0.5;  // moves 3 cells: beyond a block's guards
  r.vx[40] = 30.0;
  r.x[17] = static_cast<double>(g.x0 + g.lnx) - 0.25;  // 49.6 cells on: beyond them too
  if (g.whole()) r.x[19] = std::nextafter(static_cast<double>(g.nx), 0.0);  // the last node
  Step s{};
  s.x = r.x.data();
  s.y = r.y.data();
  s.vx = r.vx.data();
  s.vy = r.vy.data();
  s.n = n;
  s.dim = 2;
  s.order = 1;
  s.inv_dx = 1.0;
  s.inv_dy = 1.0;
  s.lx = static_cast<double>(g.nx);
  s.ly = static_cast<double>(g.ny);
  s.dv = -0.1;
  s.dt = 0.1;
  s.charge = 0.5;
  s.base = g.base();
  s.row = g.row();
  s.nx = g.nx;
  s.ny = g.ny;
  s.i_lo = g.x0 - g.guard;
  s.i_hi = g.x0 + g.lnx + g.guard - 1;
  s.j_lo = g.y0 - g.guard;
  s.j_hi = g.y0 + g.lny + g.guard - 1;
  s.whole_box = g.whole();
  s.exy = exy.data();
  s.cells = vectors ? cells.data() : nullptr;
  s.integer = integer;
  if (integer) {
    s.energies = r.energies.data();
    s.half_mass = 0.5;
  }
  ThreadGrids grids;
  grids.ensure(1, g.nodes(), integer);
  r.sums = push_and_deposit(s, grids);
  r.ne.assign(g.nodes(), 0.0);
  fold(grids, g.nodes(), r.ne.data());
  return r;
}

}  // namespace pic::host_step
