// apps/pic/particles.hpp: a rank's electrons, rows [0, n) of arrays on the run's backend.
#pragma once

#include <cstdint>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace pic {

struct Config;
class FieldLayout;
struct LocalGrid;

// Real: the precision the particles are stored in (double, or float for --precision single);
// the arithmetic of the steps is done in double either way, each new position and velocity
// rounded once when stored (positions kept inside the box: kernels::periodic_as), but for the
// fused host step's 2D CIC loop, which steps float particles in float (host_step.hpp).
template <typename Real>
struct Particles {
  using real_type = Real;
  int dim = 1;
  // Positions and velocities (y, vy empty in 1D; z, vz but in 3D).
  cunumpy::Array<Real> x, y, z, vx, vy, vz;
  cunumpy::Array<std::int64_t> id;  // global ids: the particles are functions of them
  // Per-particle work of the separate steps (the field at the particles, energies), as many
  // rows as the particle arrays when in use: each step allocates what it uses
  // (use_work_arrays; the fused host step none, or the energies when deterministic: 32 bytes a
  // particle less in 3D), and follow() keeps them so after the arrays grew.
  cunumpy::Array<double> ex, ey, ez, work;
  long long n = 0;            // rows [0, n) are the particles
  double mass = 0;            // a macro-particle's mass and weight: the box volume over N
  double charge_density = 0;  // its density in a cell: cells over N
  long long global = 0;       // over all ranks
  // The rows whose position left the layout's stay region in the last move (increasing), when
  // the step found them (`leavers_known`): the migration then examines those rows only.
  std::vector<std::int64_t> leavers;
  bool leavers_known = false;

  long long capacity() const { return x.ndim() == 0 ? 0 : x.shape(0); }
  // The work arrays in use at the particle arrays' row count (after a migration grew them).
  void follow();
  // The field at the particles (ex[, ey[, ez]]) and the energies (work): allocated at the row
  // count when wanted, released when not.
  void use_work_arrays(bool fields, bool energies);
  // Bytes a particle takes in the particle arrays (positions, velocities, id).
  static long long bytes_per_particle(int dim) {
    return 2 * dim * static_cast<long long>(sizeof(Real)) + 8;
  }
};

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
