// Under mpiexec -n 1 and -n 4: every rank's initial particles are the corresponding slice of
// the particles one process makes alone, and the summed initial density equals the serial one
// (bit for bit in the deterministic mode, to rounding with atomics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "layout.hpp"
#include "particles.hpp"
#include "pic.hpp"

namespace cn = cunumpy;

namespace {
pic::Config config(bool deterministic, int dim) {
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.particles = 40001;  // not a multiple of the rank count
  c.dim = dim;
  c.cells_x = dim == 3 ? 16 : 32;
  c.cells_y = 8;
  c.cells_z = 8;
  c.deterministic = deterministic;
  c.quiet = false;
  c.progress = false;
  return c;
}
}  // namespace

TEST(PicRanks, InitialParticlesDoNotDependOnTheRankCount) {
  const cn::Comm world = cn::Comm::world();
  for (int dim : {1, 2, 3}) {
    const auto mine = pic::initial_particles(config(false, dim), world);
    const auto all = pic::initial_particles(config(false, dim), cn::Comm::serial());
    const long long first = 40001LL * world.rank() / world.size();
    for (long long i = 0; i < mine.shape(0); ++i)
      for (long long c = 0; c < mine.shape(1); ++c)
        ASSERT_EQ(mine(i, c), all(first + i, c)) << i << "," << c;
  }
}

TEST(PicRanks, DensityIsBitIdenticalInTheDeterministicMode) {
  const cn::Comm world = cn::Comm::world();
  for (int dim : {1, 2, 3}) {
    const auto summed = pic::initial_density(config(true, dim), world);
    const auto serial = pic::initial_density(config(true, dim), cn::Comm::serial());
    EXPECT_EQ(std::memcmp(summed.data(), serial.data(), summed.nbytes()), 0) << dim << "D";
    const auto atomic = pic::initial_density(config(false, dim), world);
    const auto atomic_serial = pic::initial_density(config(false, dim), cn::Comm::serial());
    for (long long c = 0; c < atomic.size(); ++c)
      ASSERT_NEAR(atomic.host_span()[c], atomic_serial.host_span()[c], 1e-12)
          << "atomics: equal up to summation order";
    // The deterministic mode's quantisation (2^-24 of a particle's weight) is far below noise.
    for (long long c = 0; c < atomic.size(); ++c)
      ASSERT_NEAR(atomic.host_span()[c], serial.host_span()[c], 1e-6);
  }
}

// The decomposed grid: each rank owns a block of cells and the particles in it.
namespace {
pic::Config decomposed(pic::Config c) {
  c.decompose = true;
  return c;
}
}  // namespace

namespace {
// The particles made on their owners are the even split's, and the first migration moves none.
// Particle i's coordinate along an axis: stored, or (mixed precision) (cell + offset) * cell
// size, as initial_particles gives it.
template <typename Real>
double coordinate(const pic::Particles<Real>& p, const pic::Config& c, int axis, long long i) {
  const cn::Array<Real>* stored[] = {&p.x, &p.y, &p.z};
  if (!p.cells) return (*stored[axis])(i);
  const cn::Array<std::int32_t>* cells[] = {&p.cx, &p.cy, &p.cz};
  const pic::BoxLengths box = pic::box_of(c);
  const double size[] = {box.lx / c.cells_x, box.ly / c.cells_y, box.lz / c.cells_z};
  const double offset = (*stored[axis])(i);
  EXPECT_TRUE(offset >= 0.0 && offset < 1.0) << offset;
  return (static_cast<double>((*cells[axis])(i)) + offset) * size[axis];
}

template <typename Real>
void check_born_on_owners(const pic::Config& c, const cn::Comm& world, pic::FieldLayout& layout,
                          pic::Particles<Real> p) {
  const auto all = pic::initial_particles(c, cn::Comm::serial());
  ASSERT_EQ(p.cells, c.precision == "mixed");
  for (long long i = 0; i < p.n; ++i) {
    const long long id = p.id(i);
    ASSERT_EQ(coordinate(p, c, 0, i), all(id, 0)) << id;
    ASSERT_EQ(p.vx(i), all(id, 1)) << id;
    if (c.dim >= 2) {
      ASSERT_EQ(coordinate(p, c, 1, i), all(id, 2)) << id;
      ASSERT_EQ(p.vy(i), all(id, 3)) << id;
    }
    if (c.dim == 3) {
      ASSERT_EQ(coordinate(p, c, 2, i), all(id, 4)) << id;
      ASSERT_EQ(p.vz(i), all(id, 5)) << id;
    }
  }
  EXPECT_EQ(world.allreduce(p.n, cn::Op::sum), c.particles);
  layout.reset_stats();
  const long long before = p.n;
  layout.migrate(p);
  EXPECT_EQ(p.n, before);
  EXPECT_EQ(layout.bytes_sent_per_step(1), 0.0)
      << c.dim << "D, quiet " << c.quiet << ", " << c.precision;
}
}  // namespace

// On a decomposed grid each rank creates the particles born in its block: the same particles
// (the same ids, positions and velocities) as the even split, and the first migration sends
// nothing.  1D to 3D, the quiet and the random start, double, single and mixed precision
// (floats decided on as stored; mixed by the cells).
TEST(PicDecomposed, ParticlesAreBornOnTheirOwners) {
  const cn::Comm world = cn::Comm::world();
  for (const char* precision : {"double", "single", "mixed"})
    for (int dim : {1, 2, 3})
      for (bool quiet : {true, false}) {
        pic::Config c = decomposed(config(false, dim));
        c.quiet = quiet;
        c.precision = precision;
        const auto layout = pic::make_layout(c, world, cn::Backend::host);
        const auto made = [&]<typename Real>() {
          return pic::make_particles<Real>(c, world, cn::Backend::host,
                                           layout->spare_rows(c.particles), &layout->grid());
        };
        if (c.precision != "double")
          check_born_on_owners(c, world, *layout, made.template operator()<float>());
        else
          check_born_on_owners(c, world, *layout, made.template operator()<double>());
      }
}

TEST(PicDecomposed, DensityIsBitIdenticalToTheReplicatedOneAtAnyRankCount) {
  const cn::Comm world = cn::Comm::world();
  for (int dim : {1, 2, 3})
    for (int order : {1, 2}) {
      pic::Config c = config(true, dim);
      c.order = order;
      const auto split = pic::initial_density(decomposed(c), world);
      const auto serial = pic::initial_density(c, cn::Comm::serial());
      ASSERT_EQ(split.shape(), serial.shape());
      EXPECT_EQ(std::memcmp(split.data(), serial.data(), split.nbytes()), 0)
          << dim << "D, order " << order;
      // With atomics: the same density up to the order of the sums.
      pic::Config a = config(false, dim);
      a.order = order;
      const auto atomic = pic::initial_density(decomposed(a), world);
      const auto atomic_serial = pic::initial_density(a, cn::Comm::serial());
      for (long long k = 0; k < atomic.size(); ++k)
        ASSERT_NEAR(atomic.host_span()[k], atomic_serial.host_span()[k], 1e-12);
    }
}

namespace {
// Every particle id of [0, particles) at the end of the run, each on exactly one rank.
void expect_every_id_once(const cn::Comm& world, const pic::Results& r, long long particles) {
  const auto counts = world.allgather(static_cast<long long>(r.ids.size()));
  std::vector<long long> displs(counts.size(), 0);
  for (std::size_t k = 1; k < counts.size(); ++k) displs[k] = displs[k - 1] + counts[k - 1];
  std::vector<long long> all(static_cast<std::size_t>(particles));
  world.allgatherv<long long>(r.ids, std::span<long long>(all), counts, displs);
  std::sort(all.begin(), all.end());
  for (long long k = 0; k < particles; ++k) ASSERT_EQ(all[k], k);
}
}  // namespace

TEST(PicDecomposed, LandauAndTwoStreamRatesAtThisRankCount) {
  const cn::Comm world = cn::Comm::world();
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.progress = false;
  c.keep_ids = true;
  c = decomposed(c);
  const pic::Results r = pic::run(c, world);
  EXPECT_TRUE(r.decomposed);
  EXPECT_NEAR(r.gamma_fit / r.gamma_theory, 1.0, 0.05) << r.gamma_fit << " vs " << r.gamma_theory;
  EXPECT_NEAR(r.omega_fit / r.omega_theory, 1.0, 0.02) << r.omega_fit << " vs " << r.omega_theory;
  for (double q : r.total_charge) ASSERT_LT(std::abs(q), 1e-9);
  EXPECT_EQ(r.transfers_in_loop, 0);
  // Every particle once, whichever rank it ended on.
  EXPECT_EQ(r.particles_final, c.particles);
  expect_every_id_once(world, r, c.particles);
  if (world.size() > 1) {
    EXPECT_GT(r.bytes_sent_per_step, 0.0);
  }

  pic::Config t;
  t.case_name = "two_stream";
  pic::apply_case(t);
  t.steps = 320;
  t.progress = false;
  const pic::Results g = pic::run(decomposed(t), world);
  EXPECT_NEAR(g.gamma_fit / g.gamma_theory, 1.0, 0.05) << g.gamma_fit << " vs " << g.gamma_theory;
}

// 3D on a 3D-decomposed grid (the rank grid MPI_Dims_create's): the Landau rates of the
// replicated run, the charge zero to rounding, every particle id on exactly one rank at the end.
TEST(PicDecomposed, ThreeDimensionsGiveTheLandauRatesAndKeepEveryParticle) {
  const cn::Comm world = cn::Comm::world();
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.dim = 3;
  c.cells_x = 32;
  c.cells_y = 8;
  c.cells_z = 4;
  c.particles = 131072;
  c.steps = 250;
  c.progress = false;
  c.keep_ids = true;
  const pic::Results r = pic::run(decomposed(c), world);
  EXPECT_TRUE(r.decomposed);
  EXPECT_NEAR(r.gamma_fit / r.gamma_theory, 1.0, 0.05) << r.gamma_fit << " vs " << r.gamma_theory;
  EXPECT_NEAR(r.omega_fit / r.omega_theory, 1.0, 0.02) << r.omega_fit << " vs " << r.omega_theory;
  for (double q : r.total_charge) ASSERT_LT(std::abs(q), 1e-9);
  EXPECT_EQ(r.particles_final, c.particles);
  expect_every_id_once(world, r, c.particles);
  if (world.size() > 1) {
    EXPECT_GT(r.bytes_sent_per_step, 0.0);
  }
}

// --solver petsc: finite differences through PETSc (geometric multigrid where the blocks halve,
// algebraic otherwise) give the Landau and two-stream rates like the spectral solver, on the
// decomposed and the replicated grid, 1D and 2D; in 2D the perturbed mode follows the spectral
// run's to the stencil's error.  On a device backend it is a clear error.
TEST(PicSolvers, TheFiniteDifferenceSolverGivesTheRatesOfTheSpectralOne) {
  const cn::Comm world = cn::Comm::world();
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.progress = false;
  c.solver = "petsc";
#if CUNUMPY_HAS_PETSC()
  for (bool decompose : {true, false}) {
    c.decompose = decompose;
    const pic::Results r = pic::run(c, world);
    const std::string what = decompose ? "decomposed" : "replicated";
    EXPECT_EQ(r.solver, "petsc") << what;
    EXPECT_NEAR(r.gamma_fit / r.gamma_theory, 1.0, 0.05) << what << ": " << r.gamma_fit;
    EXPECT_NEAR(r.omega_fit / r.omega_theory, 1.0, 0.02) << what << ": " << r.omega_fit;
  }
  pic::Config t;
  t.case_name = "two_stream";
  pic::apply_case(t);
  t.steps = 320;
  t.progress = false;
  t.solver = "petsc";
  const pic::Results g = pic::run(decomposed(t), world);
  EXPECT_NEAR(g.gamma_fit / g.gamma_theory, 1.0, 0.05) << g.gamma_fit << " vs " << g.gamma_theory;

  // 2D, 64 x 32 cells (blocks that halve: geometric multigrid) and 60 x 30 (algebraic).
  for (int cells : {64, 60}) {
    pic::Config d;
    d.case_name = "landau";
    pic::apply_case(d);
    d.dim = 2;
    d.cells_x = cells;
    d.cells_y = cells / 2;
    d.particles = 200000;
    d.steps = 40;
    d.progress = false;
    d = decomposed(d);
    const pic::Results spectral = pic::run(d, world);
    d.solver = "petsc";
    const pic::Results fd = pic::run(d, world);
    // The perturbed mode to the stencil's error ((k dx)^2 / 12 relative).  (Not the whole
    // field energy: the particles' noise sits in short waves, which centred differences weaken
    // by tens of percent.)
    ASSERT_EQ(fd.mode_energy.size(), spectral.mode_energy.size());
    for (std::size_t k = 0; k < fd.mode_energy.size(); ++k)
      ASSERT_NEAR(fd.mode_energy[k], spectral.mode_energy[k], 0.02 * spectral.mode_energy[0])
          << cells << " cells, step " << k;
  }
  {
    auto on = cn::use_backend(cn::Backend::emulated);
    try {
      (void)pic::run(c, world);
      ADD_FAILURE() << "no error";
    } catch (const cn::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("host backend"), std::string::npos) << e.what();
    }
  }
#else
  EXPECT_THROW((void)pic::run(c, world), cn::ValueError);  // built without PETSc: said so
#endif
}

TEST(PicDecomposed, TwoDimensionsWithTscMatchTheReplicatedRun) {
  const cn::Comm world = cn::Comm::world();
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.dim = 2;
  c.cells_x = 32;
  c.cells_y = 8;
  c.particles = 100000;
  c.steps = 60;
  c.order = 2;
  c.deterministic = true;
  c.progress = false;
  const pic::Results split = pic::run(decomposed(c), world);
  const pic::Results whole = pic::run(c, cn::Comm::serial());
  ASSERT_EQ(split.field_energy.size(), whole.field_energy.size());
  // The same particles and the same density bits; the FFT's sums differ in order across
  // slabs, so the fields agree to rounding, and the trajectories stay close over 60 steps.
  for (std::size_t k = 0; k < whole.field_energy.size(); ++k) {
    ASSERT_NEAR(split.field_energy[k], whole.field_energy[k], 1e-6 * whole.field_energy[0]) << k;
    ASSERT_NEAR(split.kinetic_energy[k], whole.kinetic_energy[k], 1e-9 * whole.kinetic_energy[0])
        << k;
  }
}

// The tiled device step on a decomposed grid (emulated): each rank's particles sorted by tile
// again after the migration, those that left past the guards deposited after it; the histories
// of the separate passes on one process, to rounding (1D and 2D, CIC in double and TSC in mixed
// precision, fast particles too).
TEST(PicDecomposed, TheTiledStepMatchesTheSeparatePassesOnOneProcess) {
  const cn::Comm world = cn::Comm::world();
  auto on = cn::use_backend(cn::Backend::emulated);
  for (int dim : {1, 2})
    for (int order : {1, 2}) {
      pic::Config c;
      c.case_name = "landau";
      pic::apply_case(c);
      c.dim = dim;
      c.order = order;
      c.precision = order == 1 ? "double" : "mixed";  // (mixed: migrated by their cells)
      c.cells_x = dim == 1 ? 128 : 32;
      c.cells_y = 16;
      c.particles = 16384;
      c.steps = 12;
      c.vth = order == 2 ? 4.0 : 1.0;  // TSC: particles that cross several cells a step
      c.progress = false;
      const pic::Results whole = pic::run(c, cn::Comm::serial());
      c.particle_step = "tiled";
      const pic::Results split = pic::run(decomposed(c), world);
      EXPECT_EQ(split.step, "tiled");
      EXPECT_EQ(split.particles_final, c.particles);
      ASSERT_EQ(split.field_energy.size(), whole.field_energy.size());
      for (std::size_t k = 0; k < whole.field_energy.size(); ++k) {
        ASSERT_NEAR(split.field_energy[k], whole.field_energy[k], 1e-6 * whole.field_energy[0])
            << dim << "D order " << order << ", step " << k;
        ASSERT_NEAR(split.kinetic_energy[k], whole.kinetic_energy[k],
                    1e-9 * whole.kinetic_energy[0])
            << dim << "D order " << order << ", step " << k;
        ASSERT_LT(std::abs(split.total_charge[k]), 1e-9) << dim << "D order " << order;
      }
    }
}

// The fused step lists the rows that left the rank's stay region while it moves them, and the
// migration examines those rows only: under the checked mode the migration also searches every
// row, so a leaver the step missed is an error.  Fast particles (many cross every step), 1D and
// 2D (the 2D CIC push runs whole vectors of particles, the rest the scalar loop), TSC too;
// double, and mixed precision (the leavers found by their cells).
TEST(PicDecomposed, TheFusedStepListsEveryParticleThatLeaves) {
  const cn::Comm world = cn::Comm::world();
  const bool checks = cn::mpi_checks();
  cn::set_mpi_checks(true);
  for (const char* precision : {"double", "mixed"})
    for (int dim : {1, 2})
      for (int order : {1, 2}) {
        pic::Config c;
        c.precision = precision;
        c.case_name = "landau";
        pic::apply_case(c);
        c.dim = dim;
        c.cells_x = 32;
        c.cells_y = 16;
        c.particles = 40000;
        c.steps = 15;
        c.order = order;
        c.vth = 3.0;
        c.progress = false;
        c = decomposed(c);
        ASSERT_EQ(c.host_step, "fused");
        EXPECT_NO_THROW((void)pic::run(c, world))
            << dim << "D, order " << order << ", " << precision;
      }
  cn::set_mpi_checks(checks);
}

// The fused step's density is posted for its guard sum right after the push, and the migration
// and the diagnostics run while it travels: the same bits as the separate passes, which reduce
// after the migration; when a particle moved past the guards somewhere (fast particles) that
// density is dropped and deposited again, still the same bits.  With other ranks the messages'
// flight is measured, and work covers part of it.
TEST(PicDecomposed, TheOverlappedGuardSumGivesTheSeparatePassesBits) {
  const cn::Comm world = cn::Comm::world();
  for (double vth : {1.0, 12.0})
    for (int dim : {1, 2, 3}) {
      pic::Config c = config(true, dim);
      c.particles = 20000;
      c.steps = 10;
      c.vth = vth;
      c.case_name = "custom";
      c = decomposed(c);
      pic::Config ref_config = c;
      ref_config.host_step = "separate";
      const pic::Results fused = pic::run(c, world);
      const pic::Results ref = pic::run(ref_config, world);
      const std::string what = std::to_string(dim) + "D, v_th " + std::to_string(vth);
      ASSERT_EQ(fused.step, "fused host (deterministic)") << what;
      ASSERT_EQ(ref.step, "deterministic") << what;
      ASSERT_EQ(fused.field_energy.size(), ref.field_energy.size()) << what;
      for (std::size_t k = 0; k < ref.field_energy.size(); ++k) {
        ASSERT_EQ(fused.field_energy[k], ref.field_energy[k]) << what << ", step " << k;
        ASSERT_EQ(fused.kinetic_energy[k], ref.kinetic_energy[k]) << what << ", step " << k;
      }
      if (vth > 1.0 && world.size() > 1) {
        EXPECT_GT(fused.redeposits, 0) << what;  // the dropped-density path ran
      }
      if (vth == 1.0) {
        EXPECT_EQ(fused.redeposits, 0) << what;
      }
      EXPECT_EQ(ref.redeposits, 0) << what;  // the separate passes post nothing
      if (world.size() > 1) {
        EXPECT_GT(fused.guard_sum_overlap.overlapped, 0.0) << what;
        EXPECT_GT(fused.field_fill_overlap.overlapped, 0.0) << what;
        EXPECT_GT(fused.guard_sum_overlap.hidden(), 0.0) << what;
      } else {
        EXPECT_EQ(fused.guard_sum_overlap.overlapped + fused.guard_sum_overlap.waited, 0.0);
      }
    }
}

// Every particle step on both layouts, 1D to 3D, at this rank count, with double, single and
// mixed precision particles (rtc: the catalog's *_single and *_mixed kernels): the table
// picks the step asked for (by its name), the
// deterministic steps give the same bits as each other, the rest the same run to rounding
// (their deposits sum in other orders).
TEST(PicSteps, EveryStepRunsOnBothLayouts) {
  const cn::Comm world = cn::Comm::world();
  struct Variant {
    const char* step;  // the name the run reports
    cn::Backend backend;
    const char* kernels;
    const char* host_step;
    bool deterministic;
  };
  const Variant variants[] = {
      {"fused host (deterministic)", cn::Backend::host, "builtin", "fused", true},
      {"fused host", cn::Backend::host, "builtin", "fused", false},
      {"builtin host", cn::Backend::host, "builtin", "separate", false},
      {"rtc", cn::Backend::host, "rtc", "fused", false},
      {"builtin device", cn::Backend::emulated, "builtin", "fused", false},
      {"deterministic", cn::Backend::emulated, "builtin", "fused", true},
      {"rtc", cn::Backend::emulated, "rtc", "fused", false},
  };
  for (const std::string precision : {"double", "single", "mixed"})
    for (bool decompose : {false, true})
      for (int dim : {1, 2, 3}) {
        pic::Config c = config(false, dim);
        c.particles = 20000;
        c.steps = 12;
        c.sort_every = 5;
        c.decompose = decompose;
        c.precision = precision;
        const bool single = precision != "double";
        const std::string where = std::string(decompose ? "decomposed" : "replicated") + ", " +
                                  std::to_string(dim) + "D, " + precision;
        // The reference: the separate host passes, deterministic.
        pic::Config ref_config = c;
        ref_config.deterministic = true;
        ref_config.host_step = "separate";
        pic::Results ref;
        {
          auto on = cn::use_backend(cn::Backend::host);
          ref = pic::run(ref_config, world);
        }
        ASSERT_EQ(ref.step, "deterministic") << where;
        ASSERT_EQ(ref.layout, decompose ? "decomposed" : "replicated");
        for (const Variant& v : variants) {
          pic::Config vc = c;
          vc.kernels = v.kernels;
          vc.host_step = v.host_step;
          vc.deterministic = v.deterministic;
          auto on = cn::use_backend(v.backend);
          const pic::Results r = pic::run(vc, world);
          const std::string what =
              where + ", " + v.step + " on " + std::string(cn::to_string(v.backend));
          // Float particles on 2D and 3D CIC grids: the fused host step's float lanes.
          const bool lanes = std::string(v.step) == "fused host" && single && dim >= 2;
          ASSERT_EQ(r.step, lanes ? "fused host (float lanes)" : v.step) << what;
          ASSERT_EQ(r.layout, ref.layout) << what;
          ASSERT_EQ(r.field_energy.size(), ref.field_energy.size()) << what;
          if (decompose && world.size() > 1 && v.backend != cn::Backend::host) {
            // A device's distributed FFT stages its slabs through the host (DistributedFft): the
            // loop's only transfers, rho in and E out (dim + 1 arrays a step).
            EXPECT_LE(r.transfers_in_loop, (dim + 1) * c.steps) << what;
          } else {
            EXPECT_EQ(r.transfers_in_loop, 0) << what;
          }
          for (std::size_t k = 0; k < ref.field_energy.size(); ++k) {
            if (v.deterministic) {
              ASSERT_EQ(r.field_energy[k], ref.field_energy[k]) << what << ", step " << k;
              ASSERT_EQ(r.kinetic_energy[k], ref.kinetic_energy[k]) << what << ", step " << k;
              ASSERT_EQ(r.momentum[k], ref.momentum[k]) << what << ", step " << k;
            } else {
              ASSERT_NEAR(r.field_energy[k], ref.field_energy[k], 1e-5 * ref.field_energy[0])
                  << what << ", step " << k;
              // Single: the sums' order moves a position by a float's last bit now and then.
              ASSERT_NEAR(r.kinetic_energy[k], ref.kinetic_energy[k],
                          (single ? 1e-6 : 1e-9) * ref.kinetic_energy[0])
                  << what << ", step " << k;
            }
            // The deterministic weights are rounded to 2^-24 per node: the charge to about that.
            ASSERT_LT(std::abs(r.total_charge[k]), v.deterministic ? 1e-6 : 1e-9)
                << what << ", step " << k;
          }
        }
      }
}

// On the emulated device with an MPI that is not CUDA-aware (Debian's Open MPI), the replicated
// grid's sums go through host memory: counted as MPI staging, apart from the transfers of the
// time loop, which stay at zero.
TEST(PicRanks, MpiStagingIsCountedApartFromTheLoopsTransfers) {
  const cn::Comm world = cn::Comm::world();
  pic::Config c = config(false, 1);
  c.particles = 20000;
  c.steps = 5;
  auto on = cn::use_backend(cn::Backend::emulated);
  const pic::Results r = pic::run(c, world);
  EXPECT_EQ(r.transfers_in_loop, 0);
  if (world.size() > 1 && cn::mpi_cuda_aware().state != cn::Awareness::yes) {
    EXPECT_GT(r.mpi_staging_in_loop, 0) << "the replicated density's allreduce is staged";
  } else {
    EXPECT_EQ(r.mpi_staging_in_loop, 0);
  }
}
