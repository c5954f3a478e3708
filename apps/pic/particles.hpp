// apps/pic/particles.hpp: a rank's electrons, rows [0, n) of arrays on the run's backend.
#pragma once

#include <cstdint>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "pic_kernels.hpp"

namespace pic {

struct Config;
class FieldLayout;
struct LocalGrid;

// Real: the precision the particles are stored in (double, or float for --precision single
// and mixed); the arithmetic of the steps is done in double either way, each new position and
// velocity rounded once when stored (positions kept inside the box: kernels::periodic_as), but
// for the fused host step's 2D and 3D CIC loops, which step float particles in float
// (host_step.hpp).  Mixed (`cells`, float): each axis's position is an int32 cell index (cx,
// cy, cz) and a float offset within the cell in cell units, [0, 1) (x, y, z): the position
// (cell + offset) * cell size keeps a float's 24 bits within the cell however far from the
// origin, where a float coordinate keeps 24 bits of the whole box.
template <typename Real>
struct Particles : cunumpy::ParticleSet<Real> {
  using cunumpy::ParticleSet<Real>::dim, cunumpy::ParticleSet<Real>::cells,
      cunumpy::ParticleSet<Real>::x, cunumpy::ParticleSet<Real>::y, cunumpy::ParticleSet<Real>::z,
      cunumpy::ParticleSet<Real>::cx, cunumpy::ParticleSet<Real>::cy,
      cunumpy::ParticleSet<Real>::cz, cunumpy::ParticleSet<Real>::capacity;
  // The library's container holds the particle columns (positions or offsets, velocities, the
  // cells with `cells`, the global ids: the particles are functions of them) and n.

  // Per-particle work of the separate steps (the field at the particles, energies), as many
  // rows as the particle arrays when in use: each step allocates what it uses
  // (use_work_arrays; the fused host step none, or the energies when deterministic: 32 bytes a
  // particle less in 3D), and follow() keeps them so after the arrays grew.
  cunumpy::Array<double> ex, ey, ez, work;
  double mass = 0;            // a macro-particle's mass and weight: the box volume over N
  double charge_density = 0;  // its density in a cell: cells over N
  long long global = 0;       // over all ranks
  // The rows whose position left the layout's stay region in the last move (increasing), when
  // the step found them (`leavers_known`): the migration then examines those rows only.
  std::vector<std::int64_t> leavers;
  bool leavers_known = false;

  // The work arrays in use at the particle arrays' row count (after a migration grew them).
  void follow();
  // The field at the particles (ex[, ey[, ez]]) and the energies (work): allocated at the row
  // count when wanted, released when not.
  void use_work_arrays(bool fields, bool energies);
  // Bytes a particle takes in the particle arrays (positions, velocities, id; the cells).
  static long long bytes_per_particle(int dim, bool cells) {
    return cunumpy::ParticleSet<Real>::bytes_per_particle({dim, cells, true});
  }
  // The loops' view of the positions (axes past the dimension point at axis 0, unread).
  kernels::Positions<Real> positions() const {
    const Real* px = x.data();
    const std::int32_t* c0 = cells ? cx.data() : nullptr;
    return {{px, dim >= 2 ? y.data() : px, dim == 3 ? z.data() : px},
            {c0, dim >= 2 && cells ? cy.data() : c0, dim == 3 && cells ? cz.data() : c0}};
  }
  // kernels::Grid in the positions' units: `grid`, in cell units with cells.
  kernels::Grid grid_for(kernels::Grid grid) const {
    return cells ? kernels::in_cell_units(grid) : grid;
  }
};

// Whether a configuration's particles are stored as cells and offsets (--precision mixed).
bool stored_in_cells(const Config& config);

// This rank's initial particles (positions and velocities functions of the global id: the same
// particles at every rank count), `spare` rows beyond them.  With the block of a decomposed
// grid, exactly the particles whose initial position lies in it (by the migration's rule: none
// moves at the first migration); else an even share of the ids.  Instantiated for double and
// float.
template <typename Real>
Particles<Real> make_particles(const Config& config, const cunumpy::Comm& comm,
                               cunumpy::Backend backend, long long spare,
                               const LocalGrid* block = nullptr);

}  // namespace pic
