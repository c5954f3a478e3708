// The tiled particle step (--particle-step tiled) on the emulated device: the separate step's
// physics to the rounding of the deposit's sums in 1D-3D, CIC and TSC, double, single and mixed
// precision; empty tiles and particles that cross several tiles in a step; the emulator's atomic
// counters (the separate deposit's one global atomic per node and particle, the tiled step's
// nearly none); --deterministic bit for bit the host's; Landau damping and the two-stream
// instability at their rates; the host backend refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <cunumpy/cunumpy.hpp>

#include "config.hpp"
#include "pic.hpp"
#include "step.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;

namespace {

pic::Config small(int dim, int order, const char* precision) {
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.progress = false;
  c.dim = dim;
  c.order = order;
  c.precision = precision;
  // Several tiles along every axis (1D: 32 tiles of 4 cells; 2D 8 x 4; 3D 4 x 2 x 2).
  c.cells_x = dim == 1 ? 128 : dim == 2 ? 32 : 16;
  c.cells_y = dim == 2 ? 16 : 8;
  c.cells_z = 8;
  c.particles = 4096;
  c.steps = 8;
  return c;
}

pic::Results run_on_emulated(const pic::Config& c) {
  auto b = cn::use_backend(cn::Backend::emulated);
  return pic::run(c, cn::Comm::serial());
}

// The tiled run's histories against the separate step's: the same particles, the deposit's sums
// in another order.
void expect_same_physics(const pic::Results& tiled, const pic::Results& separate,
                         const std::string& what) {
  ASSERT_EQ(tiled.field_energy.size(), separate.field_energy.size()) << what;
  for (std::size_t i = 0; i < tiled.field_energy.size(); ++i) {
    EXPECT_NEAR(tiled.field_energy[i], separate.field_energy[i],
                1e-9 * separate.field_energy[i] + 1e-12 * separate.field_energy[0])
        << what << ", step " << i;
    EXPECT_NEAR(tiled.kinetic_energy[i], separate.kinetic_energy[i],
                1e-12 * separate.kinetic_energy[i])
        << what << ", step " << i;
    EXPECT_NEAR(tiled.momentum[i], separate.momentum[i], 1e-9 * separate.kinetic_energy[0])
        << what << ", step " << i;
    EXPECT_LT(std::abs(tiled.total_charge[i]), 1e-9) << what << ", step " << i;
  }
}

}  // namespace

TEST(TiledStep, AgreesWithTheSeparateStepInEveryDimensionShapeAndPrecision) {
  for (int dim : {1, 2, 3})
    for (int order : {1, 2})
      for (const char* precision : {"double", "single", "mixed"}) {
        const std::string what =
            std::to_string(dim) + "D " + (order == 1 ? "CIC " : "TSC ") + precision;
        pic::Config c = small(dim, order, precision);
        // The builtin loops round as the tiled kernels (no contraction); the catalog's kernels
        // (rtc) are the separate step whose atomics the emulator counts.
        const pic::Results separate = run_on_emulated(c);
        c.particle_step = "tiled";
        const pic::Results tiled = run_on_emulated(c);
        EXPECT_EQ(tiled.step, "tiled") << what;
        EXPECT_EQ(tiled.transfers_in_loop, 0) << what;
        expect_same_physics(tiled, separate, what);
        // The counters: the separate deposit one global atomic per stencil node and particle at
        // every deposit of the loop (all but the first step's); the tiled step its deposit and
        // its reorder's count in shared memory, almost nothing global (a particle whose stencil
        // leaves its tile's region).  A particle sorted into the wrong tile would be a global
        // atomic too.
        const double nodes = std::pow(order + 1, dim);
        if (dim >= 2 && order == 1 && std::string(precision) == "double") {
          c.kernels = "rtc";
          c.particle_step = "auto";
          EXPECT_DOUBLE_EQ(run_on_emulated(c).global_atomics_per_particle_step,
                           nodes * (c.steps - 1) / c.steps)
              << what;
        }
        EXPECT_LE(tiled.global_atomics_per_particle_step, 0.1) << what;
        EXPECT_GT(tiled.model_bytes_per_particle_step, 0.0) << what;
        EXPECT_EQ(separate.model_bytes_per_particle_step, -1.0) << what;
        EXPECT_LE(tiled.shared_atomics_per_particle_step, nodes + 1) << what;
        EXPECT_GE(tiled.shared_atomics_per_particle_step, 0.95 * (nodes + 1)) << what;
      }
}

// --deterministic: the weights' quanta summed exactly in shared memory and in the slots, so the
// density, and with it the fields and the particles, are the host's deterministic step's bit for
// bit; only the energy and momentum sums, over the particles in another order, round otherwise.
TEST(TiledStep, DeterministicGivesTheHostsBits) {
  for (int dim : {1, 2, 3})
    for (int order : {1, 2})
      for (const char* precision : {"double", "mixed"}) {
        const std::string what =
            std::to_string(dim) + "D " + (order == 1 ? "CIC " : "TSC ") + precision;
        pic::Config c = small(dim, order, precision);
        c.deterministic = true;
        c.host_step = "separate";
        pic::Results host;
        {
          auto b = cn::use_backend(cn::Backend::host);
          host = pic::run(c, cn::Comm::serial());
        }
        c.particle_step = "tiled";
        const pic::Results tiled = run_on_emulated(c);
        ASSERT_EQ(tiled.field_energy.size(), host.field_energy.size()) << what;
        for (std::size_t i = 0; i < host.field_energy.size(); ++i) {
          ASSERT_EQ(tiled.field_energy[i], host.field_energy[i]) << what << ", step " << i;
          ASSERT_EQ(tiled.mode_energy[i], host.mode_energy[i]) << what << ", step " << i;
          ASSERT_EQ(tiled.total_charge[i], host.total_charge[i]) << what << ", step " << i;
          EXPECT_NEAR(tiled.kinetic_energy[i], host.kinetic_energy[i],
                      1e-13 * host.kinetic_energy[i])
              << what << ", step " << i;
        }
      }
}

TEST(TiledStep, EmptyTilesAndParticlesCrossingSeveralTiles) {
  // 40 particles on 64 x 64 cells (64 tiles of 8 x 8): most tiles hold none.
  pic::Config c = small(2, 1, "double");
  c.cells_x = c.cells_y = 64;
  c.particles = 40;
  const pic::Results sparse_separate = run_on_emulated(c);
  c.particle_step = "tiled";
  expect_same_physics(run_on_emulated(c), sparse_separate, "40 particles");
  // Every particle in one tile (1D, 4 cells: one tile, its own neighbour on both sides).
  c = small(1, 2, "double");
  c.cells_x = 4;
  const pic::Results one_separate = run_on_emulated(c);
  c.particle_step = "tiled";
  expect_same_physics(run_on_emulated(c), one_separate, "one tile");
  // Particles that move about 20 cells a step, across two or three tiles of 8 cells: the far
  // path (their deposit by global atomics, their reorder past the neighbours), counted.
  c = small(2, 1, "double");
  c.cells_x = c.cells_y = 64;
  c.vth = 40.0;
  const pic::Results fast_separate = run_on_emulated(c);
  c.particle_step = "tiled";
  const pic::Results fast = run_on_emulated(c);
  expect_same_physics(fast, fast_separate, "fast particles");
  EXPECT_GT(fast.global_atomics_per_particle_step, 1.0) << "the far path's atomics";
}

TEST(TiledStep, LandauAndTwoStreamRates) {
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.progress = false;
  c.particles = 100000;
  c.steps = 250;
  c.particle_step = "tiled";
  const pic::Results landau = run_on_emulated(c);
  EXPECT_NEAR(landau.gamma_fit / landau.gamma_theory, 1.0, 0.10)
      << landau.gamma_fit << " vs " << landau.gamma_theory;
  EXPECT_NEAR(landau.omega_fit / landau.omega_theory, 1.0, 0.02);
  c.case_name = "two_stream";
  pic::apply_case(c);
  c.steps = 320;
  const pic::Results streams = run_on_emulated(c);
  EXPECT_NEAR(streams.gamma_fit / streams.gamma_theory, 1.0, 0.10)
      << streams.gamma_fit << " vs " << streams.gamma_theory;
}

TEST(TiledStep, RefusesTheHostBackend) {
  pic::Config c = small(2, 1, "double");
  c.particle_step = "tiled";
  auto b = cn::use_backend(cn::Backend::host);
  try {
    (void)pic::run(c, cn::Comm::serial());
    ADD_FAILURE() << "the host backend was accepted";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--particle-step auto"), std::string::npos) << e.what();
  }
}

// The kernels compile for the GPU (NVRTC) where there is none to run them.
// On the emulated device the step's kernels that synchronise run split into regions (each
// piece between two barriers a loop over the block's threads), not as fibers.
TEST(TiledStep, TheEmulatorSplitsTheKernelsThatSynchronise) {
  auto module = pic::tiled_step_module<double>();
  for (const char* name : {"tiled_push<double>", "tiled_count"})
    EXPECT_EQ(module.kernel(name).emulated_as(), "regions") << name;
  EXPECT_EQ(module.kernel("tiled_starts").emulated_as(), "loop");
}

TEST(TiledStep, KernelsCompileWithNvrtc) {
  if (!cunumpy_test::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  pic::tiled_step_module<double>().compile_for(cn::Backend::cuda);
  pic::tiled_step_module<float>().compile_for(cn::Backend::cuda);
}
