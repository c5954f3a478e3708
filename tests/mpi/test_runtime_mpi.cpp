// Runtime under mpiexec: the GPU is bound before MPI_Init, MPI is started by the Runtime,
// the launcher's size matches MPI's, and summary() tells it all.  Its own main: the Runtime
// is what starts MPI here.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {
std::ptrdiff_t step_index(const std::string& prefix) {
  const auto& steps = cn::runtime().startup_steps();
  auto it = std::find_if(steps.begin(), steps.end(),
                         [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
  return it == steps.end() ? -1 : it - steps.begin();
}
}  // namespace

TEST(RuntimeMpi, StartUpOrder) {
  const cn::Runtime& rt = cn::runtime();
  ASSERT_TRUE(rt.initialized_mpi());
  const auto bind = step_index("bind device");
  const auto init = step_index("MPI_Init_thread");
  ASSERT_GE(bind, 0);
  ASSERT_GE(init, 0);
  EXPECT_LT(bind, init) << "the device is bound before MPI_Init";
  EXPECT_LT(init, step_index("world size checked"));
  EXPECT_LT(step_index("world size checked"), step_index("CUDA-aware MPI"));
}

// The binding rule with the launcher's real node-local ranks: for 1, 2, 4 and 8 devices a node,
// the ranks of this node (one node here) spread over the devices evenly, one each while there
// are enough.
TEST(RuntimeMpi, TheLaunchersLocalRanksSpreadOverTheDevices) {
  const cn::Comm& world = cn::runtime().world();
  const int local = cn::local_rank(), ranks = cn::local_size();
  EXPECT_EQ(ranks, world.size()) << "one node";
  const std::vector<int> locals = world.allgather(local);
  std::vector<int> sorted = locals;
  std::sort(sorted.begin(), sorted.end());
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(sorted[static_cast<std::size_t>(r)], r);
  for (int devices : {1, 2, 4, 8}) {
    const cn::DeviceBinding b = cn::device_binding(local, ranks, devices, nullptr);
    const std::vector<int> all = world.allgather(b.device);
    std::vector<int> per_device(static_cast<std::size_t>(devices), 0);
    for (int d : all) ++per_device[static_cast<std::size_t>(d)];
    for (int d = 0; d < devices; ++d)
      EXPECT_EQ(per_device[static_cast<std::size_t>(d)],
                ranks / devices + (d < ranks % devices ? 1 : 0))
          << devices << " devices, device " << d;
  }
}

TEST(RuntimeMpi, WorldMatchesTheLauncher) {
  const cn::Runtime& rt = cn::runtime();
  EXPECT_FALSE(rt.world().is_serial());
  EXPECT_EQ(rt.world().size(), rt.launcher().world_size.value_or(-1));
  EXPECT_EQ(rt.world().allreduce(1, cn::Op::sum), rt.world().size());
  EXPECT_EQ(rt.cuda_awareness().state, cn::query_cuda_awareness().state)
      << "off cuda, the start-up records the library's answer: " << rt.cuda_awareness().reason;
  const std::string s = rt.summary();
  EXPECT_NE(s.find("rank " + std::to_string(rt.world().rank()) + "/" +
                   std::to_string(rt.world().size()) + " (MPI)"),
            std::string::npos)
      << s;
  // Ranks sharing the node share its cores when OMP_NUM_THREADS is unset.
  if (std::getenv("OMP_NUM_THREADS") == nullptr && rt.launcher().local_size > 1) {
    EXPECT_NE(rt.host_threads().find("rank(s) on the node"), std::string::npos)
        << rt.host_threads();
#if defined(_OPENMP)
    EXPECT_LE(omp_get_max_threads() * rt.launcher().local_size,
              std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)) + rt.launcher().local_size)
        << "no more threads on the node than cores (rounding down, at least one per rank)";
#endif
  }
  for (int r = 0; r < rt.world().size(); ++r) {
    if (r == rt.world().rank()) std::printf("%s\n", s.c_str());
    std::fflush(stdout);
    rt.world().barrier();
  }
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  {
    cn::Runtime rt(argc, argv);
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    failed = rt.world().allreduce(failed, cn::Op::max);
  }
  return failed;
}
