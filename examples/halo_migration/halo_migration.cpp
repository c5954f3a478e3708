// A periodic 2D box of 64 x 48 cells split over the ranks (as MPI_Dims_create would).  Each
// rank deposits one unit per particle into its guarded field, the guards are summed into their
// owners, then filled from them; the particles then move a few cells and migrate to their new
// owners.  Checks: the total charge, every cell and guard right, every particle on the rank
// that owns it and none lost.
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  const cn::Comm world = cn::Comm::world();
  const long long nx = 64, ny = 48;
  const double lx = 1.0, ly = 0.75;  // cells of 1/64
  const cn::CartesianDecomposition d(world, {nx, ny});
  cn::HaloExchange halo(world, d, {.guard = 1});
  cn::ParticleMigration migration(world, d, {0.0, 0.0, 0.0}, {lx, ly, 0.0});

  // Four particles per owned cell, at the cell's centre, on the host.
  const cn::IndexRange ox = d.owned(0), oy = d.owned(1);
  const long long n = 4 * (ox.end - ox.begin) * (oy.end - oy.begin);
  auto x = cn::empty<double>({n}, cn::Backend::host), y = cn::empty<double>({n}, cn::Backend::host);
  auto id = cn::empty<std::int64_t>({n}, cn::Backend::host);
  long long k = 0;
  for (long long i = ox.begin; i < ox.end; ++i)
    for (long long j = oy.begin; j < oy.end; ++j)
      for (int c = 0; c < 4; ++c, ++k) {
        x(k) = (static_cast<double>(i) + 0.5) * lx / nx;
        y(k) = (static_cast<double>(j) + 0.5) * ly / ny;
        id(k) = (i * ny + j) * 4 + c;
      }

  // The deposit: each particle's unit into its cell and, to exercise the guards, half a unit
  // into the cell on its left (a guard for the first owned column).
  auto rho = cn::zeros<double>(halo.field_shape(), cn::Backend::host);
  for (long long p = 0; p < n; ++p) {
    const long long i = static_cast<long long>(x(p) * nx / lx) - ox.begin + 1;
    const long long j = static_cast<long long>(y(p) * ny / ly) - oy.begin + 1;
    rho(i, j) += 1.0;
    rho(i - 1, j) += 0.5;
  }
  halo.sum(rho);   // guards added into their owners
  halo.fill(rho);  // owners copied into the neighbours' guards
  // Every cell holds 4 units of its own and 4 halves from the cell on its right; after the fill
  // the guards (corners included) hold their owners' values, the same 6.
  double local = 0;
  long long bad_cells = 0;
  const long long lnx = ox.end - ox.begin, lny = oy.end - oy.begin;
  for (long long i = 0; i <= lnx + 1; ++i)
    for (long long j = 0; j <= lny + 1; ++j) {
      const bool owned = i >= 1 && i <= lnx && j >= 1 && j <= lny;
      if (owned) local += rho(i, j);
      if (rho(i, j) != 6.0) ++bad_cells;
    }
  const double total = world.allreduce(local, cn::Op::sum);

  // Move every particle 3 cells right and 2 up (periodic), then to its owner.
  for (long long p = 0; p < n; ++p) {
    x(p) = std::fmod(x(p) + 3.0 * lx / nx, lx);
    y(p) = std::fmod(y(p) + 2.0 * ly / ny, ly);
  }
  cn::ParticleColumns columns;
  columns.position(x).position(y).column(id);
  const long long kept = migration.migrate(columns, n);
  long long misplaced = 0;
  for (long long p = 0; p < kept; ++p)
    if (migration.owner_of({x(p), y(p), 0.0}) != world.rank()) ++misplaced;
  const long long everyone = world.allreduce(kept, cn::Op::sum);
  const long long lost = 4 * nx * ny - everyone;
  const long long wrong = world.allreduce(misplaced + bad_cells, cn::Op::sum);

  const bool ok = total == 6.0 * nx * ny && lost == 0 && wrong == 0;
  if (world.rank() == 0)
    std::printf(
        "%d rank(s) as %d x %d: charge %.1f (expected %.1f), %lld particles, %lld lost, "
        "%lld wrong\n%s\n",
        world.size(), d.dims()[0], d.dims()[1], total, 6.0 * nx * ny, everyone, lost, wrong,
        ok ? "halo_migration: ok" : "halo_migration: WRONG");
  return ok ? 0 : 1;
}
