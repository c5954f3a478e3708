// Launched by `srun -n 4 --overcommit --mpi=pmix` on the local one-node Slurm
// (scripts/slurm_local.sh): the Runtime starts MPI through PMIx, sees 4 ranks, reads the
// node-local rank from SLURM_LOCALID, and an allreduce (host and staged device) works.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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

// Slurm's local ids feed the binding rule: 4 ranks on 1, 2, 4 and 8 devices, evenly, one device
// each where there are enough; SLURM's CUDA_VISIBLE_DEVICES form (a list) names the entry.
TEST(Srun, SlurmLocalIdsSpreadOverTheDevices) {
  const cn::Comm& world = cn::runtime().world();
  for (int devices : {1, 2, 4, 8}) {
    const cn::DeviceBinding b =
        cn::device_binding(cn::local_rank(), cn::local_size(), devices, "0,1,2,3,4,5,6,7");
    EXPECT_EQ(b.visible_as, std::to_string(b.device));
    const std::vector<int> all = world.allgather(b.device);
    std::vector<int> per_device(static_cast<std::size_t>(devices), 0);
    for (int d : all) ++per_device[static_cast<std::size_t>(d)];
    for (int d = 0; d < devices; ++d)
      EXPECT_EQ(per_device[static_cast<std::size_t>(d)], 4 / devices + (d < 4 % devices ? 1 : 0))
          << devices << " devices, device " << d;
  }
}

TEST(Srun, StagedDeviceAllreduce) {
  auto emulated = cn::use_backend(cn::Backend::emulated);
  auto x = cn::full<double>({16}, 1.0);
  auto counter = cn::count_transfers();
  cn::allreduce(cn::runtime().world(), x, cn::Op::sum);
  const bool staging = !cn::detail::device_pointer_ok(cn::Backend::emulated);
  EXPECT_EQ(counter.mpi_stagings(), staging ? 2 : 0)
      << (staging ? "staged both ways: " : "CUDA-aware: direct: ") << counter.report();
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
