// apps/pic/layout.hpp: where the grid lives, one interface, two layouts (a file each).
//
//   replicated (replicated_layout.cpp): every rank holds the whole grid; the density of each
//     rank's particles is summed by an allreduce; the guards are the periodic images, summed
//     and filled on the rank (HaloExchange over a one-rank decomposition); the solve is one
//     FFT per rank; particles never migrate.
//   decomposed (decomposed_layout.cpp): each rank owns a block of cells and the particles in
//     it; HaloExchange sums the deposit's guards into their owners and fills the field's,
//     DistributedFft solves, ParticleMigration moves the particles that left.
//
// Both give the particle steps (step.hpp) the same thing: a guarded local grid (grid.hpp) to
// deposit into and gather from.  The layout owns the grid arrays, their guards, the density's
// reduction, the Poisson solve, the field's guards and the diagnostics' sums over the box.
#pragma once

#include <array>
#include <complex>
#include <memory>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "blocks.hpp"
#include "grid.hpp"
#include "solver.hpp"

namespace pic {

struct Config;
template <typename Real>
struct Particles;

class FieldLayout {
 public:
  virtual ~FieldLayout();
  FieldLayout(const FieldLayout&) = delete;
  FieldLayout& operator=(const FieldLayout&) = delete;

  // "replicated" or "decomposed".
  virtual std::string name() const = 0;
  const LocalGrid& grid() const noexcept { return grid_; }
  const cunumpy::Comm& comm() const noexcept { return world_; }
  cunumpy::Backend backend() const noexcept { return backend_; }

  // The guarded local arrays: the density the steps deposit into, rho and E (E_y from 2D,
  // E_z in 3D; empty otherwise).
  cunumpy::Array<double> ne, rho, ex, ey, ez;
  // E's components of the dimension.
  std::vector<cunumpy::Array<double>> fields() const;

  // ne, which holds this rank's particles' deposit (guards included), becomes the density of
  // every owned node: summed over the ranks (replicated) and the guards into their owners.
  // In two halves, so that work between them overlaps the messages (decomposed: the guard sum
  // posted in begin, completed in end; replicated: begin does it all): ne must not be written
  // in between.
  virtual void begin_reduce_density() = 0;
  virtual void end_reduce_density() = 0;
  void reduce_density() {
    begin_reduce_density();
    end_reduce_density();
  }
  // rho = 1 - ne * ne_scale on the owned nodes; E from Poisson's equation (the solver's).
  void solve(double ne_scale);
  // E's guards from their owners (every component in one round of messages), in two halves like
  // the density's: the owned nodes may be read in between (the field diagnostics).
  void begin_fill_fields();
  void end_fill_fields();
  // The density's guard sum and the field's fill since reset_stats(): what they moved, and how
  // long their messages travelled under other work (cunumpy::HaloStats).
  const cunumpy::HaloStats& sum_stats() const { return halo_->stats(); }
  const cunumpy::HaloStats& fill_stats() const { return fill_->stats(); }
  // Particles that left this rank's block go to its owner (replicated: nothing to do).
  virtual void migrate(Particles<double>& particles) = 0;
  virtual void migrate(Particles<float>& particles) = 0;
  // The region of positions whose particles stay on this rank (the migration's stay_region);
  // false when no particle ever moves between ranks (the replicated layout).
  virtual bool stay_region(double* lower, double* upper) const {
    (void)lower;
    (void)upper;
    return false;
  }

  // The diagnostics over the whole box (the same value on every rank).
  double field_energy();
  double total_charge();
  double mode_energy();  // of the perturbed mode (--direction's), from the last solve's rho
  std::string solver_name() const { return solver_->name(); }

  // Rows to keep free beyond a rank's `particles` (decomposed: particles arrive from the
  // neighbours; the migration grows the arrays when more do).
  virtual long long spare_rows(long long particles) const = 0;
  // Bytes this rank sent to others per step over the `steps` since reset_stats() (decomposed:
  // halo, migration, FFT), or what one step's allreduce of the replicated grid sends per rank
  // (ring: 2 (P - 1) / P of it).
  virtual double bytes_sent_per_step(int steps) const = 0;
  virtual void reset_stats() = 0;
  // This rank's part of rho and E for the output, from host copies of the guarded rho, E_x[,
  // E_y]; and the region its particles lie in (openPMD's particle patches).
  virtual MeshBlock mesh_block(const std::vector<cunumpy::Array<double>>& host_fields) const = 0;
  virtual void particle_region(std::vector<double>& offset, std::vector<double>& extent) const = 0;

 protected:
  // `halo_comm`: the communicator of the decomposition the halo exchange and the FFT run on
  // (the world when decomposed; this rank alone when replicated).
  FieldLayout(const Config& config, const cunumpy::Comm& world, const cunumpy::Comm& halo_comm,
              cunumpy::Backend backend, bool whole_box);
  // This rank's block without its guards, on the host (the mesh output).
  cunumpy::Array<double> owned_block(const cunumpy::Array<double>& guarded) const;

  cunumpy::Comm world_;
  cunumpy::Backend backend_;
  LocalGrid grid_;
  cunumpy::CartesianDecomposition decomposition_;
  // The density's guard sum and E's fill (E_x, E_y together): one exchange each, so that
  // their overlap is measured apart.
  std::unique_ptr<cunumpy::HaloExchange> halo_, fill_;
  std::unique_ptr<FieldSolver> solver_;  // rho -> E (solver.hpp)
  bool sums_over_ranks_;  // the owned nodes differ between ranks: their sums are allreduced
  std::array<int, 3> mode_{1, 0, 0};  // the perturbed mode's index per axis
};

// The layouts, by name: "replicated" or "decomposed" (Config::decompose).
std::unique_ptr<FieldLayout> make_replicated_layout(const Config& config,
                                                    const cunumpy::Comm& world,
                                                    cunumpy::Backend backend);
std::unique_ptr<FieldLayout> make_decomposed_layout(const Config& config,
                                                    const cunumpy::Comm& world,
                                                    cunumpy::Backend backend);
std::unique_ptr<FieldLayout> make_layout(const Config& config, const cunumpy::Comm& world,
                                         cunumpy::Backend backend);

// The guard width every layout gives its grid: the stencil reaches `order` nodes past the
// particle's cell (and one before it for TSC); one more covers a position that rounds to the
// block's upper edge.
long long guard_width(int order);

}  // namespace pic
