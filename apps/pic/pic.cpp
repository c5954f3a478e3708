// The mini-app's driver (pic.hpp): a field layout and a particle step chosen from their tables,
// then the time loop.  Compiled as CUDA when the CUDA backend is built (the re-sort's loop).
#include "pic.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <cunumpy/atomic_counter.hpp>

#include "checkpoint.hpp"
#include "dispersion.hpp"
#include "layout.hpp"
#include "output.hpp"
#include "particles.hpp"
#include "pic_kernels.hpp"
#include "step.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

std::vector<Species> species_of(const Config& c) {
  if (c.beam_velocity > 0.0) return {{0.5, c.beam_velocity, c.vth}, {0.5, -c.beam_velocity, c.vth}};
  return {{1.0, 0.0, c.vth}};
}

// A phase of the step: an NVTX range and a timed region, accumulated under `name`.
class Phases {
 public:
  template <typename Body>
  void run(const char* name, Body&& body) {
    cn::TimedRegion region(name, true);
    body();
    seconds_[name] += *region.stop().elapsed;
  }
  void clear() { seconds_.clear(); }
  const std::map<std::string, double>& seconds() const { return seconds_; }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace

namespace {
// The stable order of the keys (given up by the caller, released with the sorted keys before
// the first column moves): the peak is the sort's (keys, sorted keys, order).
cn::Array<std::int64_t> order_of(cn::Array<std::uint64_t> keys) {
  cn::Array<std::int64_t> order = std::get<1>(cn::sort_by_key(keys));
  keys = cn::Array<std::uint64_t>();
  return order;
}
}  // namespace

// The particles re-sorted along a Morton curve of their cells (the grid accesses of the next
// steps stay local).  Only rows [0, n) move; the spare rows' values are not kept.
template <typename Real>
void resort(Particles<Real>& p, const LocalGrid& grid) {
  // The cell along an axis: x / dx truncated and wrapped, or the stored cell (mixed precision).
  const cn::PeriodicCells cells{p.dim,
                                {grid.nx, grid.ny, grid.nz},
                                {p.cells ? 1.0 : 1.0 / grid.dx, p.cells ? 1.0 : 1.0 / grid.dy,
                                 p.cells ? 1.0 : 1.0 / grid.dz}};
  cn::Array<std::uint64_t> keys;
  {  // (the columns' extra handles gone before the permutation frees their blocks)
    const std::array<cn::Array<Real>, 3> x = {p.x, p.y, p.z};
    const std::array<cn::Array<std::int32_t>, 3> c = {p.cx, p.cy, p.cz};
    keys = cn::periodic_cell_keys(cells, std::span(x.data(), static_cast<std::size_t>(p.dim)), p.n,
                                  p.cells ? std::span(c.data(), static_cast<std::size_t>(p.dim))
                                          : std::span<const cn::Array<std::int32_t>>());
  }
  // Every column of the particles, its rows reordered.
  p.permute(order_of(std::move(keys)));
}
template void resort<double>(Particles<double>&, const LocalGrid&);
template void resort<float>(Particles<float>&, const LocalGrid&);

namespace {

// Rows [0, n) of a particle array, on the host.
template <typename T>
std::vector<T> rows_of(const cn::Array<T>& a, long long n) {
  const auto h = cn::to_host(a.leading(n));
  return std::vector<T>(h.host_span().begin(), h.host_span().end());
}

// The checkpoint of the run after `steps_done` steps: its particles' columns as they are.
template <typename Real>
Checkpoint<Real> checkpoint_of(const Config& config, const Particles<Real>& p, const Results& r,
                               int steps_done) {
  return {.config = config, .step = steps_done, .history = r, .total = p.global, .particles = p};
}

// The checkpoint's particles as the run's (with the layout's spare rows).
template <typename Real>
Particles<Real> particles_of(const Config& config, Checkpoint<Real>& c, const FieldLayout& layout) {
  Particles<Real> p;
  static_cast<cn::ParticleSet<Real>&>(p) = std::move(c.particles);
  p.global = c.total;
  p.charge_density = static_cast<double>(total_cells(config)) / static_cast<double>(p.global);
  p.mass = particle_weight(config);
  p.reserve(p.n + layout.spare_rows(p.n));
  return p;
}

// The sums over the box of the fields at t_n (the diagnostics).
struct FieldSums {
  double energy = 0, charge = 0, mode = 0;
  bool redeposited = false;  // a posted density was dropped: a particle had been left out
};

// After a push that deposited the next density: fold it into ne and start its reduction, so
// that the migration and the diagnostics overlap the guard sum's messages.  Returns whether
// the reduction is in flight (fields_of completes it).
template <typename Real>
bool post_density(Particles<Real>& p, FieldLayout& layout, ParticleStep<Real>& step,
                  Phases& phases) {
  if (!step.deposited_by_push()) return false;
  // Speculative: no particle left out anywhere (the ranks learn it in the diagnostics);
  // fields_of deposits again if one was.
  phases.run("deposit", [&] { step.deposit(p, layout, 0); });
  phases.run("reduce", [&] { layout.begin_reduce_density(); });
  return true;
}

// The fields of the particles where they are now: deposit, reduce (completed when
// post_density started it), solve, fill; the field diagnostics are summed while E's guards
// travel.
template <typename Real>
FieldSums fields_of(Particles<Real>& p, FieldLayout& layout, ParticleStep<Real>& step,
                    Phases& phases, long long undeposited, bool density_posted) {
  if (density_posted) phases.run("reduce", [&] { layout.end_reduce_density(); });
  FieldSums sums;
  sums.redeposited = density_posted && undeposited != 0;  // then that density is dropped
  if (!density_posted || sums.redeposited) {
    phases.run("deposit", [&] { step.deposit(p, layout, undeposited); });
    phases.run("reduce", [&] { layout.reduce_density(); });
  }
  phases.run("solve", [&] { layout.solve(step.density_scale(p)); });
  phases.run("fill", [&] { layout.begin_fill_fields(); });
  phases.run("diagnostics", [&] {
    sums.energy = layout.field_energy();
    sums.charge = layout.total_charge();
    sums.mode = layout.mode_energy();
  });
  phases.run("fill", [&] { layout.end_fill_fields(); });
  return sums;
}

}  // namespace

namespace {
// The run with particles of precision Real.
template <typename Real>
Results run_as(const Config& config, const cn::Comm& comm) {
  const cn::Backend backend = cn::get_backend();
  const std::unique_ptr<FieldLayout> layout = make_layout(config, comm, backend);
  const std::unique_ptr<ParticleStep<Real>> step = make_step<Real>(config, backend, *layout);
  // The output folders are checked before the first step.
  std::unique_ptr<StagedOutput> snapshots;
  if (config.output_every > 0)
    snapshots = std::make_unique<StagedOutput>(config.output_folder, comm, config.overwrite);
  Results r;
  r.ranks = comm.size();
#if defined(_OPENMP)
  r.threads_per_rank = omp_get_max_threads();
#endif
  r.backend = std::string(cn::to_string(backend));
  r.layout = layout->name();
  r.step = step->name();
  r.solver = layout->solver_name();
  r.decomposed = r.layout == "decomposed";
  const std::complex<double> theory = solve_dispersion(config.k, species_of(config));
  r.omega_theory = theory.real();
  r.gamma_theory = theory.imag();
  Phases phases;

  // The particles at x_n and v_{n-1/2}: a checkpoint's, or the initial ones with their
  // velocities taken back half a step (leapfrog).
  Particles<Real> p;
  int first_step = 0;
  std::optional<FieldSums> first_fields;  // a new run's fields at t_0
  if (!config.restart.empty()) {
    Checkpoint<Real> c = read_checkpoint<Real>(config.restart, comm, backend);
    first_step = c.step;
    if (first_step > config.steps)
      throw cn::ValueError("the checkpoint is at step " + std::to_string(first_step) +
                           ", past --steps " + std::to_string(config.steps));
    for (auto m : {&Results::time, &Results::field_energy, &Results::mode_energy,
                   &Results::kinetic_energy, &Results::momentum, &Results::total_charge})
      r.*m = c.history.*m;
    p = particles_of<Real>(config, c, *layout);
    layout->migrate(p);  // to their owners (another rank count, or none moves)
  } else {
    const long long n = config.particles / comm.size() + 1;
    p = make_particles<Real>(config, comm, backend, layout->spare_rows(n), &layout->grid());
    layout->migrate(p);  // born on their owners: none moves (checked by the migration)
    if (config.sort_every > 0 && !step->sorts_particles()) resort(p, layout->grid());
    // The fields at t_0, which the first step uses as they are (the half push back moves no
    // particle): not deposited and solved again.
    first_fields = fields_of(p, *layout, *step, phases, -1, false);
    step->push(p, *layout, -0.5, false);
  }
  r.first_step = first_step;
  r.steps_done = first_step;
  phases.clear();
  layout->reset_stats();

  const int report_every = std::max(1, config.steps / 10);
  const auto start = std::chrono::steady_clock::now();
  auto counter = cn::count_transfers();
  std::optional<cn::AtomicCounter> atomics;  // the emulated kernels' atomics
  if (backend == cn::Backend::emulated) atomics.emplace();
  long long undeposited = -1;   // the first deposit: every particle where it is
  bool density_posted = false;  // the last push's density is being reduced
  for (int n = first_step; n < config.steps; ++n) {
    if (config.sort_every > 0 && !step->sorts_particles() && n > 0 && n % config.sort_every == 0)
      phases.run("sort", [&] { resort(p, layout->grid()); });
    // The fields at t_n from x_n.
    const FieldSums field = n == first_step && first_fields
                                ? *first_fields
                                : fields_of(p, *layout, *step, phases, undeposited, density_posted);
    r.redeposits += field.redeposited ? 1 : 0;
    if (snapshots && n % config.output_every == 0)  // E_n and the particles at x_n
      phases.run("output", [&] { snapshots->start(p, *layout, n); });
    StepSums sums;
    phases.run("push", [&] { sums = step->push(p, *layout, 1.0, true); });
    density_posted = post_density(p, *layout, *step, phases);
    phases.run("migration", [&] { layout->migrate(p); });
    phases.run("diagnostics", [&] {
      double global[3];
      const double local[3] = {sums.kinetic, sums.momentum, sums.undeposited};
      comm.allreduce<double>(local, std::span<double>(global), cn::Op::sum);
      undeposited = static_cast<long long>(global[2]);
      r.time.push_back(n * config.dt);
      r.field_energy.push_back(field.energy);
      r.mode_energy.push_back(field.mode);
      r.kinetic_energy.push_back(global[0]);
      r.momentum.push_back(global[1]);
      r.total_charge.push_back(field.charge);
    });
    r.steps_done = n + 1;
    if (snapshots && snapshots->pending())  // the copies started after the fill, written now
      phases.run("output", [&] {
        const std::string file = snapshots->write(*layout, config.dt, p.mass);
        if (comm.rank() == 0) r.snapshots.push_back(file);
      });
    if (config.checkpoint_every > 0 && (n + 1) % config.checkpoint_every == 0)
      phases.run("output", [&] {
        const std::string file =
            write_checkpoint(config.output_folder, comm, checkpoint_of(config, p, r, n + 1));
        if (comm.rank() == 0) r.checkpoints.push_back(file);
      });
    if (config.flush_every > 0 && config.on_flush && comm.rank() == 0 &&
        (n + 1) % config.flush_every == 0 && n + 1 < config.steps)
      config.on_flush(r);
    if (config.progress && comm.rank() == 0 &&
        ((n + 1) % report_every == 0 || n + 1 == config.steps)) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double rate = static_cast<double>(config.particles) * (n + 1 - first_step) / elapsed;
      std::printf("step %d/%d (%3.0f%%)  %.3g particle-steps/s  ETA %.1f s\n", n + 1, config.steps,
                  100.0 * (n + 1) / config.steps, rate, elapsed / (n + 1) * (config.steps - n - 1));
      std::fflush(stdout);
    }
  }
  if (density_posted) layout->end_reduce_density();  // the last push's, not needed
  counter.stop();
  r.mpi_staging_in_loop = counter.mpi_stagings();
  r.transfers_in_loop = counter.total() - r.mpi_staging_in_loop;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double particle_steps =
      static_cast<double>(config.particles) * std::max(1, config.steps - first_step);
  r.particle_steps_per_second = particle_steps / r.seconds;
  r.ns_per_particle_step = 1e9 * r.seconds / particle_steps;
  r.model_bytes_per_particle_step = step->bytes_per_particle_step(p, *layout);
  if (atomics) {
    cn::synchronize();  // queued launches have run
    const long long local[3] = {atomics->global(), atomics->shared(), atomics->launches()};
    long long total[3];
    comm.allreduce<long long>(local, std::span<long long>(total), cn::Op::sum);
    if (total[2] > 0) {
      r.global_atomics_per_particle_step = static_cast<double>(total[0]) / particle_steps;
      r.shared_atomics_per_particle_step = static_cast<double>(total[1]) / particle_steps;
    }
  }
  r.phase_seconds = phases.seconds();
  {
    // The slowest rank's time per phase, and the halo exchanges' overlap since reset_stats()
    // (summed over the ranks).
    std::vector<double> mine;
    for (const auto& [name, seconds] : r.phase_seconds) mine.push_back(seconds);
    std::vector<double> slowest(mine.size());
    comm.allreduce<double>(mine, std::span<double>(slowest), cn::Op::max);
    std::size_t k = 0;
    for (const auto& [name, seconds] : r.phase_seconds) r.phase_seconds_max[name] = slowest[k++];
    const cn::HaloStats& sum = layout->sum_stats();
    const cn::HaloStats& fill = layout->fill_stats();
    const double local[4] = {sum.overlapped_seconds, sum.waited_seconds, fill.overlapped_seconds,
                             fill.waited_seconds};
    double total[4];
    comm.allreduce<double>(local, std::span<double>(total), cn::Op::sum);
    r.guard_sum_overlap = {total[0], total[1]};
    r.field_fill_overlap = {total[2], total[3]};
  }
  {
    const LocalGrid& g = layout->grid();
    const double mine = layout->bytes_sent_per_step(config.steps - first_step);
    r.bytes_sent_per_step = comm.allreduce(mine, cn::Op::sum) / comm.size();
    r.max_bytes_sent_per_step = comm.allreduce(mine, cn::Op::max);
    r.replicated_bytes_per_step =
        2.0 * (comm.size() - 1.0) / comm.size() * static_cast<double>(g.nx * g.ny) * sizeof(double);
    r.particles_final = comm.allreduce(p.n, cn::Op::sum);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: kilobytes on Linux
    r.peak_memory_mb = comm.allreduce(static_cast<double>(usage.ru_maxrss) / 1024.0, cn::Op::max);
    if (config.keep_ids) {
      const auto ids = cn::to_host(p.id.leading(p.n));
      r.ids.assign(ids.host_span().begin(), ids.host_span().end());
      std::sort(r.ids.begin(), r.ids.end());
    }
  }

  const Fit fit =
      r.gamma_theory < 0.0 ? fit_damped(r.time, r.mode_energy) : fit_growing(r.time, r.mode_energy);
  r.gamma_fit = fit.gamma;
  r.omega_fit = fit.omega;
  r.fit_points = fit.points;
  r.fit_t_begin = fit.t_begin;
  r.fit_t_end = fit.t_end;
  r.fit_failure = fit.failure;
  r.precision = config.precision;
  r.bytes_per_particle =
      static_cast<double>(Particles<Real>::bytes_per_particle(config.dim, p.cells));
  r.complete = true;
  return r;
}
}  // namespace

Results run(const Config& config, const cn::Comm& comm) {
  validate(config, comm.size());
  return config.precision == "double" ? run_as<double>(config, comm) : run_as<float>(config, comm);
}

namespace {
template <typename Real>
cn::Array<double> initial_density_as(const Config& config, const cn::Comm& comm) {
  const cn::Backend backend = cn::get_backend();
  const auto layout = make_layout(config, comm, backend);
  const auto step = make_step<Real>(config, backend, *layout);
  Particles<Real> p =
      make_particles<Real>(config, comm, backend,
                           layout->spare_rows(config.particles / comm.size() + 1), &layout->grid());
  layout->migrate(p);
  step->deposit(p, *layout, -1);
  layout->reduce_density();
  // Each rank's owned nodes, scaled, put together into the whole grid.
  const LocalGrid& g = layout->grid();
  const double scale = step->density_scale(p);
  const auto ne = cn::to_host(layout->ne);
  std::vector<double> block(static_cast<std::size_t>(g.owned()));
  const LocalGrid::OwnedIndices owned = g.owned_indices();
  for (long long k = 0; k < g.owned(); ++k)
    block[static_cast<std::size_t>(k)] = ne.host_span()[owned(k)] * scale;
  const std::vector<long long> global = g.global_nodes();
  auto out = cn::empty<double>(cn::Shape(std::span<const long long>(global)), cn::Backend::host);
  if (g.whole_box) {  // every rank holds every node
    std::copy(block.begin(), block.end(), out.host_span().begin());
    return out;
  }
  // Each rank's block (first node and extent per axis, 1 past the dimension).
  const long long mine[6] = {g.x0, g.lnx, g.y0, g.lny, g.z0, g.lnz};
  std::vector<long long> blocks(6 * static_cast<std::size_t>(comm.size()));
  comm.allgather<long long>(std::span<const long long>(mine, 6), std::span<long long>(blocks));
  std::vector<long long> counts(comm.size()), displs(comm.size());
  for (int rank = 0; rank < comm.size(); ++rank) {
    const long long* b = &blocks[6 * static_cast<std::size_t>(rank)];
    counts[rank] = b[1] * b[3] * b[5];
    displs[rank] = rank == 0 ? 0 : displs[rank - 1] + counts[rank - 1];
  }
  std::vector<double> all(static_cast<std::size_t>(g.nx * g.ny * g.nz));
  comm.allgatherv<double>(block, std::span<double>(all), counts, displs);
  for (int rank = 0; rank < comm.size(); ++rank) {
    const long long* b = &blocks[6 * static_cast<std::size_t>(rank)];
    for (long long k = 0; k < counts[rank]; ++k) {
      const long long l = k % b[5], j = (k / b[5]) % b[3], i = k / (b[5] * b[3]);
      out.host_span()[((b[0] + i) * g.ny + b[2] + j) * g.nz + b[4] + l] = all[displs[rank] + k];
    }
  }
  return out;
}

template <typename Real>
cn::Array<double> initial_particles_as(const Config& config, const cn::Comm& comm) {
  const Particles<Real> p = make_particles<Real>(config, comm, cn::get_backend(), 0);
  const int cols = 2 * config.dim;
  auto out = cn::zeros<double>({p.n, cols}, cn::Backend::host);
  const cn::Array<Real>* columns[] = {&p.x, &p.vx, &p.y, &p.vy, &p.z, &p.vz};
  // Mixed precision: the position (cell + offset) * cell size.
  const cn::Array<std::int32_t>* cells[] = {&p.cx, nullptr, &p.cy, nullptr, &p.cz, nullptr};
  const BoxLengths box = box_of(config);
  const double cell_size[] = {box.lx / config.cells_x, 0.0, box.ly / config.cells_y, 0.0,
                              box.lz / config.cells_z, 0.0};
  for (int c = 0; c < cols; ++c) {
    auto h = cn::to_host(*columns[c]);
    if (p.cells && cells[c] != nullptr) {
      auto k = cn::to_host(*cells[c]);
      for (long long i = 0; i < p.n; ++i)
        out(i, c) = (static_cast<double>(k(i)) + static_cast<double>(h(i))) * cell_size[c];
    } else {
      for (long long i = 0; i < p.n; ++i) out(i, c) = h(i);
    }
  }
  return out;
}

}  // namespace

cn::Array<double> initial_density(const Config& config, const cn::Comm& comm) {
  validate(config, comm.size());
  return config.precision == "double" ? initial_density_as<double>(config, comm)
                                      : initial_density_as<float>(config, comm);
}

cn::Array<double> initial_particles(const Config& config, const cn::Comm& comm) {
  validate(config, comm.size());
  return config.precision == "double" ? initial_particles_as<double>(config, comm)
                                      : initial_particles_as<float>(config, comm);
}

}  // namespace pic
