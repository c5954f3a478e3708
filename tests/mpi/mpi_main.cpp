// GoogleTest main for MPI tests: starts MPI (the launcher detection decides nothing here: the
// tests are always started by mpiexec), gives each rank its share of the node's cores for
// OpenMP as the Runtime does (4 ranks of 2 OpenMP threads each on 2 cores spend their time in
// OpenMP's spinning barriers), runs the tests on every rank, and fails the program on every
// rank if any rank failed.
#include <gtest/gtest.h>

#include <cunumpy/comm.hpp>
#include <cunumpy/launcher.hpp>
#include <cunumpy/runtime.hpp>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  cunumpy::init_mpi(&argc, &argv);
  cunumpy::detail::configure_host_threads(cunumpy::launcher_info());
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  {
    const cunumpy::Comm world = cunumpy::Comm::world();
    failed = world.allreduce(failed, cunumpy::Op::max);
  }
  cunumpy::finalize_mpi();
  return failed;
}
