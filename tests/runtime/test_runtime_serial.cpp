// Runtime without a launcher: the serial stand-in, the start-up steps, one Runtime per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

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

// A job that must run on a device stops at start-up when its backend is host (cuda asked for
// on a node without a usable GPU falls back to host), naming the reason; a device backend passes.
TEST(RuntimeSerial, ARequiredDeviceStopsAHostStart) {
  cn::RuntimeOptions options;
  options.backend = cn::Backend::host;
  options.require_device = true;
  try {
    cn::Runtime rt(options);
    FAIL() << "expected BackendError";
  } catch (const cn::BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("must run on a device (RuntimeOptions::require_device)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("backend is host: set_backend(host)"), std::string::npos) << what;
  }
  if (!cn::cuda_available()) {
    options.backend = cn::Backend::cuda;  // falls back to host here: refused with the reason
    try {
      cn::Runtime rt(options);
      FAIL() << "cuda without a GPU must not run on the host when a device is required";
    } catch (const cn::BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA is unavailable"), std::string::npos) << e.what();
    }
  }
  options.backend = cn::Backend::emulated;
  {
    cn::Runtime rt(options);  // a device backend, chosen explicitly
    EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
  }
  cn::set_backend(cn::Backend::host);
  options.require_device = false;
  options.backend = cn::Backend::host;
  EXPECT_NO_THROW(cn::Runtime rt(options));
}

// The same from the environment (registered with CUNUMPY_BACKEND=cuda and
// CUNUMPY_REQUIRE_DEVICE=1): without a GPU the start stops; with one it runs on it.
TEST(RuntimeSerial, RequiredDeviceFromTheEnvironment) {
  const char* required = std::getenv("CUNUMPY_REQUIRE_DEVICE");
  if (required == nullptr)
    GTEST_SKIP() << "run by the registration that sets CUNUMPY_REQUIRE_DEVICE";
  if (cn::cuda_available()) {
    cn::Runtime rt;
    EXPECT_EQ(cn::get_backend(), cn::Backend::cuda);
    return;
  }
  try {
    cn::Runtime rt;
    FAIL() << "expected BackendError";
  } catch (const cn::BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("must run on a device (CUNUMPY_REQUIRE_DEVICE=1)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("CUNUMPY_BACKEND=cuda, but CUDA is unavailable"), std::string::npos)
        << what;
  }
}

// The node-local rank to device rule for 1, 2, 4 and 8 GPUs a node and up to 16 ranks: ranks up
// to the device count get a device each, more share them evenly (round robin), and the
// CUDA_VISIBLE_DEVICES entry of the chosen index is named.
TEST(DeviceBinding, RanksToDevicesForEveryCount) {
  for (int devices : {1, 2, 4, 8})
    for (int ranks = 1; ranks <= 16; ++ranks) {
      std::vector<int> per_device(static_cast<std::size_t>(devices), 0);
      for (int r = 0; r < ranks; ++r) {
        const cn::DeviceBinding b = cn::device_binding(r, ranks, devices, nullptr);
        ASSERT_GE(b.device, 0);
        ASSERT_LT(b.device, devices);
        ++per_device[static_cast<std::size_t>(b.device)];
        EXPECT_EQ(b.visible_as, std::to_string(b.device));
      }
      for (int d = 0; d < devices; ++d) {
        const int n = per_device[static_cast<std::size_t>(d)];
        EXPECT_EQ(n, ranks / devices + (d < ranks % devices ? 1 : 0))
            << devices << " devices, " << ranks << " ranks, device " << d;
        for (int r = 0; r < ranks; ++r) {
          const cn::DeviceBinding b = cn::device_binding(r, ranks, devices, nullptr);
          if (b.device == d) {
            EXPECT_EQ(b.ranks_sharing, n);
          }
        }
      }
      if (ranks <= devices) {
        for (int d = 0; d < devices; ++d)
          EXPECT_EQ(per_device[static_cast<std::size_t>(d)], d < ranks ? 1 : 0) << "one each";
      }
    }
  // CUDA_VISIBLE_DEVICES: CUDA's index 1 is the list's second entry.
  const cn::DeviceBinding b = cn::device_binding(1, 2, 2, "3, GPU-8f0c1d2e");
  EXPECT_EQ(b.device, 1);
  EXPECT_EQ(b.visible_as, "GPU-8f0c1d2e");
  EXPECT_NE(b.description.find("CUDA_VISIBLE_DEVICES entry GPU-8f0c1d2e"), std::string::npos)
      << b.description;
  const cn::DeviceBinding shared = cn::device_binding(5, 6, 4, "4,5,6,7");
  EXPECT_EQ(shared.device, 1);
  EXPECT_EQ(shared.visible_as, "5");
  EXPECT_EQ(shared.ranks_sharing, 2);
  EXPECT_NE(shared.description.find("2 of the node's 6 ranks share it"), std::string::npos)
      << shared.description;
  EXPECT_EQ(cn::device_binding(0, 1, 0, nullptr).device, -1) << "no devices: none";
  EXPECT_THROW((void)cn::device_binding(3, 2, 4, nullptr), cn::ValueError);
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
