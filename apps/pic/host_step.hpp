// apps/pic/host_step.hpp: the host backend's particle step in one pass (2D, CIC or TSC): each
// particle's field is gathered, its velocity and position advanced, and its charge at the new
// position deposited into the calling thread's grid, while its four numbers are in registers.
// Separate passes (gather, push, deposit) sweep the particle arrays three times and keep the
// field at the particles in two more arrays; this one reads x, y, vx, vy once and writes them
// once.  Fields and grids are guarded (GuardedGrid): no node index wraps.
//
// The same math as the separate kernels of pic.cpp per particle (kernels::stencil's weights,
// the gather's sums in the same order, the push's two roundings); only the deposit's sums run
// in another order.  Measured by scripts/compare_picksc.sh (ns per particle-step).
#pragma once

#include <vector>

namespace pic::host_step {

// A field or a density on the nx x ny periodic nodes with one guard node on every side: node
// (i, j), i in [-1, nx + 1], j in [-1, ny + 1], at (i + 1) * row + (j + 1), row = ny + 3.  CIC
// touches nodes 0..nx (a position that rounds to L lands on node nx), TSC -1..nx + 1.
struct GuardedGrid {
  long long nx = 0, ny = 0, row = 0;
  long long nodes() const { return (nx + 3) * row; }
  long long at(long long i, long long j) const { return (i + 1) * row + (j + 1); }
};
GuardedGrid guarded(long long nx, long long ny);

// ex, ey (nx x ny, row-major) into `exy`: the guarded grid's nodes, E_x and E_y interleaved
// (2 doubles a node), guards holding their periodic images.
void fill_guarded_fields(const GuardedGrid& g, const double* ex, const double* ey,
                         std::vector<double>& exy);

// ne (nx x ny) = the sum of the threads' guarded grids, each guard added to its periodic
// image; then the grids are cleared for the next deposit.
void fold_densities(const GuardedGrid& g, std::vector<std::vector<double>>& grids, double* ne);

struct Step {
  double* x;
  double* y;
  double* vx;
  double* vy;
  long long n;
  int order;              // 1: CIC, 2: TSC
  double inv_dx, inv_dy;  // 1 / cell size
  double lx, ly;          // box
  double dv, dt;          // v += dv * E; x += dt * v
  double charge;          // a particle's density per unit weight
  const double* exy;      // fill_guarded_fields
  // CIC: fill_cell_fields (host_step_simd.hpp), for the loop over whole vectors of particles;
  // null: the scalar loop alone.
  const double* cells = nullptr;
};

struct Sums {
  double energy = 0.0;    // sum of v_old . v_new (time-centred kinetic energy / (m / 2))
  double momentum = 0.0;  // sum of v_x after the push
};

// Particles [0, n) over the OpenMP threads (2 (nx + 3) (ny + 3) < 2^31: nodes are 32-bit indices)
// (static split, as parallel_for); thread t deposits into grids[t] (guarded, cleared), which must
// hold one grid per thread of the team.
Sums push_and_deposit(const GuardedGrid& g, const Step& s, std::vector<std::vector<double>>& grids);

}  // namespace pic::host_step
