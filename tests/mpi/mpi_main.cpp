// GoogleTest main for MPI tests: starts MPI (the launcher detection decides nothing here: the
// tests are always started by mpiexec), runs the tests on every rank, and fails the program
// on every rank if any rank failed.
#include <gtest/gtest.h>

#include <cunumpy/comm.hpp>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  cunumpy::init_mpi(&argc, &argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  {
    const cunumpy::Comm world = cunumpy::Comm::world();
    failed = world.allreduce(failed, cunumpy::Op::max);
  }
  cunumpy::finalize_mpi();
  return failed;
}
