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
