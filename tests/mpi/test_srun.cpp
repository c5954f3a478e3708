// Launched by `srun -n 4 --overcommit --mpi=pmix` on the local one-node Slurm
// (scripts/slurm_local.sh): the Runtime starts MPI through PMIx, sees 4 ranks, reads the
// node-local rank from SLURM_LOCALID, and an allreduce (host and staged device) works.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

TEST(Srun, FourRanksWithSlurmLocalIds) {
  const cn::Runtime& rt = cn::runtime();
  const char* localid = std::getenv("SLURM_LOCALID");
  ASSERT_NE(localid, nullptr) << "not started by srun";
  EXPECT_EQ(rt.launcher().launcher, "Slurm srun") << rt.launcher().evidence;
  EXPECT_TRUE(cn::launched_under_mpi());
  EXPECT_EQ(rt.world().size(), 4);
  EXPECT_EQ(cn::local_rank(), std::atoi(localid));
  EXPECT_EQ(cn::local_size(), 4);
  EXPECT_EQ(rt.world().allreduce(rt.world().rank(), cn::Op::sum), 6);
}

TEST(Srun, StagedDeviceAllreduce) {
  auto emulated = cn::use_backend(cn::Backend::emulated);
  auto x = cn::full<double>({16}, 1.0);
  auto counter = cn::count_transfers();
  cn::allreduce(cn::runtime().world(), x, cn::Op::sum);
  EXPECT_EQ(counter.mpi_stagings(), 2) << "staged both ways: " << counter.report();
  EXPECT_EQ(counter.to_host() + counter.to_device(), 0) << counter.report();
  EXPECT_EQ(cn::to_host(x)(15), 4.0);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  {
    cn::Runtime rt(argc, argv);
    if (rt.world().rank() == 0) std::printf("%s\n", rt.summary().c_str());
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    failed = rt.world().allreduce(failed, cn::Op::max);
  }
  return failed;
}
