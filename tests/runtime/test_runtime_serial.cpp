// Runtime without a launcher: the serial stand-in, the start-up steps, one Runtime per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/internal/core_context.hpp>

namespace cn = cunumpy;

namespace {
std::ptrdiff_t step_index(const cn::Runtime& rt, const std::string& prefix) {
  const auto& steps = rt.startup_steps();
  auto it = std::find_if(steps.begin(), steps.end(),
                         [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
  return it == steps.end() ? -1 : it - steps.begin();
}
}  // namespace

TEST(RuntimeSerial, StartsInOrderWithTheStandIn) {
  cn::Runtime& before = cn::runtime();
  EXPECT_TRUE(before.is_default()) << "no Runtime constructed yet: the default runtime";
  EXPECT_TRUE(before.world().is_serial());
  EXPECT_NE(before.summary().find("default runtime"), std::string::npos) << before.summary();
  {
    cn::Runtime rt(cn::RuntimeOptions{cn::Backend::emulated, false, true, 1234});
    EXPECT_EQ(&cn::runtime(), &rt);
    EXPECT_TRUE(rt.world().is_serial());
    EXPECT_FALSE(rt.initialized_mpi());
    EXPECT_FALSE(rt.device().has_value());
    EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
    EXPECT_EQ(step_index(rt, "environment"), 0);
    EXPECT_EQ(step_index(rt, "host threads"), 1);
    EXPECT_EQ(step_index(rt, "bind device: none (emulated backend)"), 2);
    EXPECT_EQ(step_index(rt, "MPI not started"), 3);
    EXPECT_GT(step_index(rt, "CUDA-aware MPI"), 3);
    const std::string s = rt.summary();
    EXPECT_NE(s.find("backend emulated"), std::string::npos) << s;
    EXPECT_NE(s.find("rank 0/1 (serial stand-in)"), std::string::npos) << s;
    EXPECT_NE(s.find("CUDA-aware MPI:"), std::string::npos) << s;
    EXPECT_NE(s.find("OpenMP thread(s)"), std::string::npos) << s;
    EXPECT_THROW(cn::Runtime second, cn::Error) << "one Runtime per process";
    EXPECT_FALSE(rt.is_default());
    EXPECT_EQ(rt.seed(), 1234u);
    EXPECT_EQ(cn::random_streams().seed_value(), 1234u) << "the Runtime seeds the random streams";
    EXPECT_GT(step_index(rt, "random streams: seed 1234 (given)"), 2);
    std::printf("%s\n", s.c_str());
  }
  EXPECT_EQ(&cn::runtime(), &before) << "after the Runtime, the default runtime goes on";
  cn::set_backend(cn::Backend::host);
}

// The Runtime owns the state it starts: arrays come from its pools, counters report to its
// ledger, and its end releases the pools' cached blocks (blocks still in use go back later).
TEST(RuntimeSerial, OwnsThePoolsAndReleasesThemAtTheEnd) {
  cn::Array<double> survivor;
  {
    cn::Runtime rt(cn::RuntimeOptions{cn::Backend::host, false, false, 7});
    const auto start = cn::host_cache_stats();
    { auto big = cn::zeros<double>({1 << 18}); }  // 2 MiB: cached when freed
    EXPECT_EQ(cn::host_cache_stats().cached_blocks, start.cached_blocks + 1);
    auto counter = cn::count_transfers();
    EXPECT_TRUE(cn::detail::counting_active());
    survivor = cn::pinned_empty<double>({1000});
    { auto staging = cn::pinned_empty<double>({1000}); }
    EXPECT_GE(cn::pinned_pool_stats().cached_blocks, 1u);
  }
  EXPECT_EQ(cn::host_cache_stats().cached_blocks, 0u)
      << "the Runtime's end released the cached blocks";
  EXPECT_EQ(cn::pinned_pool_stats().cached_blocks, 0u);
  EXPECT_TRUE(survivor.is_pinned()) << "a block still in use outlives the Runtime";
  survivor = {};
  EXPECT_EQ(cn::pinned_pool_stats().cached_blocks, 1u) << "and goes back to its pool when released";
  cn::free_memory_pool();
}

// The Runtime's copy stream (HostStaging's) is created on first use and released at its end.
TEST(RuntimeSerial, ReleasesItsStreamsAtTheEnd) {
  cn::detail::release_runtime_streams();  // the default runtime's, if a test made one
  const long long streams = cn::detail::live_streams();
  {
    cn::Runtime rt(cn::RuntimeOptions{cn::Backend::emulated, false, false, 1});
    auto d = cn::zeros<double>({8});
    cn::HostStaging<double> staging({8}, 2);
    (void)staging.copy(d).result();
    EXPECT_EQ(cn::detail::live_streams(), streams + 1) << "the Runtime's copy stream";
    EXPECT_NE(cn::copy_stream().native_handle(), nullptr);
  }
  EXPECT_EQ(cn::detail::live_streams(), streams) << "the Runtime's end released its copy stream";
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

TEST(HostThreads, RanksShareTheNodesCores) {
  EXPECT_EQ(cn::detail::threads_per_rank(2, 2, 4), 1) << "4 ranks on 2 cores: one thread each";
  EXPECT_EQ(cn::detail::threads_per_rank(64, 64, 4), 16);
  EXPECT_EQ(cn::detail::threads_per_rank(64, 8, 4), 8) << "bound by the launcher: its affinity";
  EXPECT_EQ(cn::detail::threads_per_rank(8, 0, 1), 8);
  EXPECT_EQ(cn::detail::threads_per_rank(0, 0, 0), 1);
}

// Asking for MPI in a build without it raises with the fix (the Python reference's
// get_mpi(True) raises ImportError), before anything starts; left unset, the run is serial.
TEST(RuntimeSerial, AskingForMpiInABuildWithoutItRaises) {
  if (CUNUMPY_HAS_MPI()) GTEST_SKIP() << "this build has MPI";
  cn::RuntimeOptions options;
  options.mpi = true;
  try {
    cn::Runtime rt(options);
    FAIL() << "expected BackendError";
  } catch (const cn::BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("RuntimeOptions::mpi = true"), std::string::npos) << what;
    EXPECT_NE(what.find("-DCUNUMPY_ENABLE_MPI=ON"), std::string::npos) << what;
  }
  cn::Runtime rt(cn::RuntimeOptions{});  // the failed one left nothing behind
  EXPECT_TRUE(rt.world().is_serial());
}
