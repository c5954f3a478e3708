// NVTX ranges and timed regions.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

TEST(NvtxRange, NamesAreRegisteredOnceAndRangesNest) {
  const std::size_t before = cn::detail::nvtx_registered_names();
  for (int i = 0; i < 3; ++i) {
    cn::NvtxRange outer("test_profiling outer");
    cn::NvtxRange inner("test_profiling inner", 2);
  }
#if CUNUMPY_HAS_NVTX()
  EXPECT_EQ(cn::detail::nvtx_registered_names(), before + 2) << "each name is registered once";
#else
  EXPECT_EQ(cn::detail::nvtx_registered_names(), 0u) << "NVTX is compiled out";
  (void)before;
#endif
}

TEST(NvtxRange, FactoryFunctionSpelling) {
  auto range = cn::nvtx_range("factory");
  auto region = cn::timed_region("factory region", false);
  const cn::Timing& t = region.stop();
  EXPECT_EQ(t.name, "factory region");
  EXPECT_TRUE(t.elapsed.has_value());
  EXPECT_EQ(&region.stop(), &t) << "stopping twice returns the same result";
}

TEST(NvtxRange, ClosesWhenLeftByAnException) {
  EXPECT_THROW(
      {
        cn::NvtxRange range("throws");
        throw std::runtime_error("inside a range");
      },
      std::runtime_error);
}

TEST(TimedRegion, HostIsAPlainTimer) {
  auto host = cn::use_backend(cn::Backend::host);
  cn::Timing t =
      cn::timed("sleep", [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  EXPECT_EQ(t.name, "sleep");
  ASSERT_TRUE(t.elapsed.has_value());
  EXPECT_GE(*t.elapsed, 0.015);
  EXPECT_LT(*t.elapsed, 5.0);
  EXPECT_FALSE(t.synced);
}

TEST(TimedRegion, DeviceBackendsSynchroniseOnEntryAndExit) {
  auto emulated = cn::use_backend(cn::Backend::emulated);
  auto counter = cn::count_transfers();
  cn::Timing out;
  {
    cn::TimedRegion region("synced", true, &out);
    EXPECT_FALSE(region.timing().elapsed.has_value()) << "elapsed is set when the region ends";
    EXPECT_EQ(counter.synchronizations(), 1) << "entry synchronisation";
  }
  EXPECT_TRUE(out.synced);
  EXPECT_TRUE(out.elapsed.has_value());
  EXPECT_EQ(counter.synchronizations(), 2) << "exit synchronisation";

  cn::Timing unsynced = cn::timed(
      "unsynced", [] {}, /*sync=*/false);
  EXPECT_FALSE(unsynced.synced);
  EXPECT_EQ(counter.synchronizations(), 3) << "only the entry synchronisation";
}

// A timed loop's synchronisations are counted as their own kind, listed after the code's own:
// a report of a timed host-only loop shows no device synchronisation among the real ones.
TEST(TimedRegion, TimerSynchronisationsAreTheirOwnKindListedLast) {
  auto emulated = cn::use_backend(cn::Backend::emulated);
  auto counter = cn::count_transfers();
  for (int step = 0; step < 3; ++step) (void)cn::timed("host loop", [] {});
  cn::synchronize();  // the code's own
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::timer), 6);
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::device), 1);
  const std::string r = counter.report();
  EXPECT_NE(r.find("(1 device, 0 stream, 0 mpi, 0 reduction, 6 timer)"), std::string::npos) << r;
  EXPECT_LT(r.find("  device (1):"), r.find("  timer (6):")) << r;
  EXPECT_NE(r.find("timed region"), std::string::npos) << r;
}

TEST(TimedRegion, ElapsedIsSetWhenTheBlockThrows) {
  cn::Timing out;
  try {
    cn::TimedRegion region("throws", true, &out);
    throw std::runtime_error("x");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(out.elapsed.has_value());
  EXPECT_EQ(out.name, "throws");
}
