// Under mpiexec -n 1 and -n 4: every rank's initial particles are the corresponding slice of
// the particles one process makes alone, and the summed initial density equals the serial one
// (bit for bit in the deterministic mode, to rounding with atomics).
#include <gtest/gtest.h>

#include <cstring>

#include <cunumpy/cunumpy.hpp>

#include "pic.hpp"

namespace cn = cunumpy;

namespace {
pic::Config config(bool deterministic, int dim) {
  pic::Config c;
  c.case_name = "landau";
  pic::apply_case(c);
  c.particles = 40001;  // not a multiple of the rank count
  c.dim = dim;
  c.cells_x = 32;
  c.cells_y = 8;
  c.deterministic = deterministic;
  c.quiet = false;
  c.progress = false;
  return c;
}
}  // namespace

TEST(PicRanks, InitialParticlesDoNotDependOnTheRankCount) {
  const cn::Comm world = cn::Comm::world();
  for (int dim : {1, 2}) {
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
  for (int dim : {1, 2}) {
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
