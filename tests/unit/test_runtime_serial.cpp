// Runtime without a launcher: the serial stand-in, the start-up steps, one Runtime per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {
std::ptrdiff_t step_index(const cn::Runtime& rt, const std::string& prefix) {
  const auto& steps = rt.startup_steps();
  auto it = std::find_if(steps.begin(), steps.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
  return it == steps.end() ? -1 : it - steps.begin();
}
}  // namespace

TEST(RuntimeSerial, StartsInOrderWithTheStandIn) {
  EXPECT_THROW(cn::runtime(), cn::Error);
  {
    cn::Runtime rt(cn::RuntimeOptions{cn::Backend::emulated, false, true});
    EXPECT_EQ(&cn::runtime(), &rt);
    EXPECT_TRUE(rt.world().is_serial());
    EXPECT_FALSE(rt.initialized_mpi());
    EXPECT_FALSE(rt.device().has_value());
    EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
    EXPECT_EQ(step_index(rt, "environment"), 0);
    EXPECT_EQ(step_index(rt, "bind device: none (emulated backend)"), 1);
    EXPECT_EQ(step_index(rt, "MPI not started"), 2);
    EXPECT_GT(step_index(rt, "CUDA-aware MPI"), 2);
    const std::string s = rt.summary();
    EXPECT_NE(s.find("backend emulated"), std::string::npos) << s;
    EXPECT_NE(s.find("rank 0/1 (serial stand-in)"), std::string::npos) << s;
    EXPECT_NE(s.find("CUDA-aware MPI:"), std::string::npos) << s;
    EXPECT_THROW(cn::Runtime second, cn::Error) << "one Runtime per process";
    std::printf("%s\n", s.c_str());
  }
  EXPECT_THROW(cn::runtime(), cn::Error);
  cn::set_backend(cn::Backend::host);
}

TEST(RuntimeSerial, SingletonsUnderALauncherAreCaught) {
  cn::LauncherInfo l;
  l.under_mpi = true;
  l.launcher = "Slurm srun";
  l.world_size = 4;
  EXPECT_NO_THROW(cn::detail::check_world_size(l, 4));
  try {
    cn::detail::check_world_size(l, 1);
    FAIL() << "expected MpiError";
  } catch (const cn::MpiError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("declared 4 ranks, but MPI_Comm_size is 1"), std::string::npos) << what;
    EXPECT_NE(what.find("srun --mpi=pmix"), std::string::npos) << what;
  }
  l.world_size.reset();
  EXPECT_NO_THROW(cn::detail::check_world_size(l, 3)) << "no declared size: nothing to compare";
}
