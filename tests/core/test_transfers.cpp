// Counted transfers: every kind with the caller's file:line, nothing for no-op conversions,
// nested counters, the report text, assert_no_transfers.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {
std::string here(int line) {
  return std::string(__FILE__) + ":" + std::to_string(line);
}

using Transfers = cn::testing::OnEmulated;
}  // namespace

TEST_F(Transfers, EveryKindIsCountedWithTheCallersLine) {
  const std::vector<double> values{1, 2, 3};
  auto counter = cn::count_transfers();
  const int l1 = __LINE__ + 1;
  auto d = cn::from_host<double>(values);
  const int l2 = __LINE__ + 1;
  auto h = cn::to_host(d);
  const int l3 = __LINE__ + 1;
  auto d2 = cn::to_device(h);
  auto h2 = cn::zeros<double>({3}, cn::Backend::host);
  const int l4 = __LINE__ + 1;
  cn::copy(h2, d2);
  const int l5 = __LINE__ + 1;
  cn::copy(d2, h2);
  const int l6 = __LINE__ + 1;
  auto a = cn::to_active(h2);

  ASSERT_EQ(counter.total(), 6) << counter.report();
  EXPECT_EQ(counter.to_host(), 2);
  EXPECT_EQ(counter.to_device(), 4);
  EXPECT_EQ(counter.kernel_conversions(), 0);
  EXPECT_EQ(counter.fallbacks(), 0);
  const auto& ev = counter.events();
  EXPECT_EQ(ev[0].kind, cn::TransferKind::to_device);
  EXPECT_EQ(ev[0].where, here(l1));
  EXPECT_EQ(ev[0].description, "from_host(shape=(3,), dtype=float64)");
  EXPECT_EQ(ev[1].kind, cn::TransferKind::to_host);
  EXPECT_EQ(ev[1].where, here(l2));
  EXPECT_EQ(ev[1].description, "to_host(shape=(3,), dtype=float64)");
  EXPECT_EQ(ev[2].where, here(l3));
  EXPECT_EQ(ev[2].description, "to_device(shape=(3,), dtype=float64)");
  EXPECT_EQ(ev[3].kind, cn::TransferKind::to_host);
  EXPECT_EQ(ev[3].where, here(l4));
  EXPECT_EQ(ev[3].description, "copy(device->host)(shape=(3,), dtype=float64)");
  EXPECT_EQ(ev[4].kind, cn::TransferKind::to_device);
  EXPECT_EQ(ev[4].where, here(l5));
  EXPECT_EQ(ev[5].where, here(l6));
  EXPECT_TRUE(a.is_device());
  EXPECT_EQ(h2.host_span()[2], 3.0) << "the copies moved the values";
}

TEST_F(Transfers, NoOpConversionsRecordNothing) {
  auto d = cn::zeros<float>({8});
  auto h = cn::zeros<float>({8}, cn::Backend::host);
  auto counter = cn::count_transfers();
  EXPECT_TRUE(cn::to_device(d).shares_memory_with(d));
  EXPECT_TRUE(cn::to_host(h).shares_memory_with(h));
  EXPECT_TRUE(cn::to_active(d).shares_memory_with(d));
  auto d2 = cn::zeros<float>({8});
  cn::copy(d2, d);  // device -> device: nothing crosses
  auto h2 = cn::zeros<float>({8}, cn::Backend::host);
  cn::copy(h2, h);  // host -> host
  {
    auto host = cn::use_backend(cn::Backend::host);
    EXPECT_TRUE(cn::to_active(h).shares_memory_with(h));
    (void)cn::from_host<float>(h.host_span());  // host creation is not a transfer
  }
  EXPECT_EQ(counter.total(), 0) << counter.report();
}

TEST_F(Transfers, ShapeMismatchInCopyIsAValueError) {
  auto a = cn::zeros<double>({3});
  auto b = cn::zeros<double>({4}, cn::Backend::host);
  try {
    cn::copy(b, a);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("destination shape (4,) differs from source shape (3,)"),
              std::string::npos);
  }
}

TEST_F(Transfers, NestedCountersSeeEveryEventInsideThem) {
  auto d = cn::zeros<double>({4});
  auto outer = cn::count_transfers();
  (void)cn::to_host(d);
  {
    auto inner = cn::count_transfers();
    (void)cn::to_host(d);
    (void)cn::to_host(d);
    EXPECT_EQ(inner.total(), 2);
  }
  (void)cn::to_host(d);
  EXPECT_EQ(outer.total(), 4);
  EXPECT_TRUE(cn::detail::counting_active());
  outer.stop();
  (void)cn::to_host(d);
  EXPECT_EQ(outer.total(), 4) << "a stopped counter sees nothing";
  EXPECT_FALSE(cn::detail::counting_active());
}

TEST_F(Transfers, ReportGroupsByKindAndCallSite) {
  auto d = cn::zeros<double>({100000});
  auto counter = cn::count_transfers();
  int l_loop = 0;
  for (int i = 0; i < 3; ++i) {
    l_loop = __LINE__ + 1;
    (void)cn::to_host(d);
  }
  auto h = cn::zeros<double>({100000}, cn::Backend::host);
  const int l_dev = __LINE__ + 1;
  (void)cn::to_device(h);
  const std::string expected =
      "4 transfer(s) through cunumpy (3 to_host, 1 to_device, 0 kernel_conversion, 0 fallback, 0 "
      "mpi_staging)\n"
      "  to_host (3):\n"
      "    " +
      here(l_loop) +
      ": to_host(shape=(100000,), dtype=float64) (x3)\n"
      "  to_device (1):\n"
      "    " +
      here(l_dev) + ": to_device(shape=(100000,), dtype=float64)";
  EXPECT_EQ(counter.report(), expected);
}

TEST_F(Transfers, ReportListsSynchronisationsAfterTransfers) {
  auto counter = cn::count_transfers();
  const int l = __LINE__ + 1;
  cn::synchronize();
  EXPECT_EQ(counter.report(),
            "0 transfer(s) through cunumpy (0 to_host, 0 to_device, 0 kernel_conversion, 0 "
            "fallback, 0 mpi_staging)\n"
            "1 synchronisation(s) through cunumpy (1 device, 0 stream, 0 mpi, 0 reduction, 0 "
            "timer)\n"
            "  device (1):\n"
            "    " +
                here(l) + ": synchronize()");
}

TEST_F(Transfers, AssertNoTransfersFailsWithTheReport) {
  auto d = cn::zeros<double>({5});
  EXPECT_NO_THROW(cn::assert_no_transfers([&] { d.fill(1.0); }));
  int line = 0;
  try {
    cn::assert_no_transfers([&] {
      line = __LINE__ + 1;
      (void)cn::to_host(d);
    });
    FAIL() << "expected TransferAssertionError";
  } catch (const cn::TransferAssertionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("1 transfer(s) through cunumpy (1 to_host"), std::string::npos) << what;
    EXPECT_NE(what.find(here(line) + ": to_host(shape=(5,), dtype=float64)"), std::string::npos)
        << what;
  }
  EXPECT_FALSE(cn::detail::counting_active());
}

TEST_F(Transfers, AssertNoTransfersLetsTheBodysExceptionThrough) {
  auto d = cn::zeros<double>({5});
  // The body transfers and then throws: the body's exception arrives, not the assertion.
  EXPECT_THROW(cn::assert_no_transfers([&] {
                 (void)cn::to_host(d);
                 throw std::out_of_range("from the body");
               }),
               std::out_of_range);
  // The scope form never throws from its destructor while unwinding.
  EXPECT_THROW(
      {
        cn::AssertNoTransfers guard;
        (void)cn::to_host(d);
        throw std::logic_error("unwinding");
      },
      std::logic_error);
  EXPECT_THROW(
      {
        cn::AssertNoTransfers guard;
        (void)cn::to_host(d);
      },
      cn::TransferAssertionError);
  EXPECT_FALSE(cn::detail::counting_active());
}

TEST_F(Transfers, CountingCostsNothingWhenNoCounterIsActive) {
  // With no counter the description is never built: a describe callable that would fail
  // the test is not called.
  ASSERT_FALSE(cn::detail::counting_active());
  bool called = false;
  cn::detail::record_transfer(
      cn::TransferKind::to_host,
      [&] {
        called = true;
        return std::string();
      },
      std::source_location::current());
  EXPECT_FALSE(called);
}
