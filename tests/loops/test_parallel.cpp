// parallel_for and parallel_reduce on the host and on the emulated device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {
class Parallel : public cn::testing::OnBackend {};
}  // namespace

TEST_P(Parallel, For1D) {
  const long long n = 100003;
  auto a = cn::zeros<double>({n});
  EXPECT_EQ(a.backend(), GetParam());
  auto v = a.view<1>();
  cn::parallel_for(
      "fill", n, CUNUMPY_LAMBDA(long long i) { v(i) = 2.0 * static_cast<double>(i); });
  auto h = cn::to_host(a);
  for (long long i = 0; i < n; ++i) ASSERT_EQ(h(i), 2.0 * static_cast<double>(i)) << i;
}

TEST_P(Parallel, CunumpyForIsParallelForWithTheBodyOnce) {
  const long long n = 1001;
  auto a = cn::zeros<double>({n});
  auto v = a.view<1>();
  const double scale = 3.0;
  CUNUMPY_FOR("scaled", n, i, const double x = static_cast<double>(i), y = scale; v(i) = x * y;);
  auto h = cn::to_host(a);
  for (long long i = 0; i < n; ++i) ASSERT_EQ(h(i), 3.0 * static_cast<double>(i)) << i;
}

TEST_P(Parallel, For2DAnd3DVisitEveryIndexOnce) {
  auto a = cn::zeros<int>({7, 13});
  auto v = a.view<2>();
  cn::parallel_for(
      "2d", 7, 13,
      CUNUMPY_LAMBDA(long long i, long long j) { v(i, j) += static_cast<int>(100 * i + j + 1); });
  auto h = cn::to_host(a);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 13; ++j) ASSERT_EQ(h(i, j), 100 * i + j + 1);

  auto b = cn::zeros<long long>({3, 4, 5});
  auto w = b.view<3>();
  cn::parallel_for(
      "3d", 3, 4, 5, CUNUMPY_LAMBDA(long long i, long long j, long long k) {
        w(i, j, k) += 100 * i + 10 * j + k + 1;
      });
  auto hb = cn::to_host(b);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) ASSERT_EQ(hb(i, j, k), 100 * i + 10 * j + k + 1);
}

TEST_P(Parallel, EmptyRangesRunNothing) {
  int calls = 0;
  int* p = &calls;
  cn::parallel_for("empty", 0, [=](long long) { ++*p; });
  cn::parallel_for("empty2", 0, 5, [=](long long, long long) { ++*p; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(cn::parallel_reduce("sum0", 0, cn::ReduceOp::sum, [](long long) { return 1.0; }), 0.0);
  EXPECT_EQ(cn::parallel_reduce("min0", 0, cn::ReduceOp::min, [](long long) { return 1.0; }),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(cn::parallel_reduce("max0", 0, cn::ReduceOp::max, [](long long) { return 1; }),
            std::numeric_limits<int>::lowest());
  EXPECT_THROW(cn::parallel_for("negative", -1, [](long long) {}), cn::ValueError);
}

TEST_P(Parallel, Reductions) {
  const long long n = 1 << 20;
  auto a = cn::arange<double>(0.0, static_cast<double>(n), 1.0);
  auto v = a.view<1>();
  const double sum = cn::parallel_reduce(
      "sum", n, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  EXPECT_EQ(sum, 0.5 * static_cast<double>(n) * static_cast<double>(n - 1));
  const double mn = cn::parallel_reduce(
      "min", n, cn::ReduceOp::min, CUNUMPY_LAMBDA(long long i) { return std::cos(0.001 * v(i)); });
  double expected_min = 2.0;
  for (long long i = 0; i < n; ++i)
    expected_min = std::min(expected_min, std::cos(0.001 * static_cast<double>(i)));
  EXPECT_EQ(mn, expected_min);
  const long long mx = cn::parallel_reduce(
      "max", n, cn::ReduceOp::max, CUNUMPY_LAMBDA(long long i) { return (i * 7919) % 1000003; });
  long long expected_max = 0;
  for (long long i = 0; i < n; ++i) expected_max = std::max(expected_max, (i * 7919) % 1000003);
  EXPECT_EQ(mx, expected_max);
}

TEST_P(Parallel, ReductionsAreRepeatable) {
  const long long n = 1000001;
  auto a = cn::linspace<double>(0.0, 1.0, n);
  auto v = a.view<1>();
  auto body = CUNUMPY_LAMBDA(long long i) {
    return std::sin(v(i)) * 1e-3;
  };
  const double first = cn::parallel_reduce("sum", n, cn::ReduceOp::sum, body);
  for (int r = 0; r < 5; ++r)
    EXPECT_EQ(cn::parallel_reduce("sum", n, cn::ReduceOp::sum, body), first) << "bitwise";
}

// The same bits whatever the number of host threads (fixed chunks, combined in order), for
// lengths around the chunk size; a sum of one chunk is the sequential sum.
TEST_P(Parallel, ReductionsGiveTheSameBitsAtEveryThreadCount) {
#if defined(_OPENMP)
  for (long long n : {7LL, 4096LL, 4097LL, 100003LL}) {
    std::vector<double> values(static_cast<std::size_t>(n));
    for (long long i = 0; i < n; ++i)
      values[static_cast<std::size_t>(i)] =
          std::sin(0.37 * static_cast<double>(i)) * 1e3 + 1e-3 * i;
    auto a = cn::from_host<double>(values);
    auto v = a.view<1>();
    std::vector<double> sums;
    const int before = omp_get_max_threads();
    for (int threads : {1, 2, 3, 4}) {
      omp_set_num_threads(threads);
      sums.push_back(cn::parallel_reduce(
          "sum", n, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); }));
    }
    omp_set_num_threads(before);
    for (double s : sums) EXPECT_EQ(s, sums[0]) << "n = " << n;
    if (n <= 4096) {
      double sequential = 0;
      for (double x : values) sequential += x;
      EXPECT_EQ(sums[0], sequential) << "n = " << n;
    }
  }
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

TEST_P(Parallel, AtomicsFromLoopBodiesAreExact) {
  // Many iterations add into few cells: under OpenMP these are real atomic adds.
  const long long n = 400000;
  auto cells = cn::zeros<double>({4, 5});
  auto c = cells.view<2>();
  cn::parallel_for(
      "deposit", n,
      CUNUMPY_LAMBDA(long long i) { cunumpy_atomic_add_2d(c.data, 5, i % 4, (i / 4) % 5, 1.0); });
  auto h = cn::to_host(cells);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(h(i, j), static_cast<double>(n / 20));
}

TEST_P(Parallel, LoopsMakeNoTransfers) {
  auto a = cn::zeros<float>({1000});
  auto v = a.view<1>();
  cn::assert_no_transfers([&] {
    cn::parallel_for(
        "step", 1000, CUNUMPY_LAMBDA(long long i) { v(i) += 1.0f; });
    (void)cn::parallel_reduce(
        "norm", 1000, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  });
}

// A reduction's result is read back on the host: on a device (emulated, as cuda) one
// synchronisation of kind reduction at the caller's line; none on the host.
TEST_P(Parallel, AReductionCountsItsReadBackOnADevice) {
  const auto body = CUNUMPY_LAMBDA(long long i) {
    return static_cast<double>(i);
  };
  auto counter = cn::count_transfers();
  const int line = __LINE__ + 1;
  const double s = cn::parallel_reduce("sum", 1000, cn::ReduceOp::sum, body);
  EXPECT_EQ(s, 499500.0);
  if (GetParam() == cn::Backend::host) {
    EXPECT_EQ(counter.synchronizations(), 0) << counter.report();
  } else {
    EXPECT_EQ(counter.synchronizations(cn::SyncKind::reduction), 1) << counter.report();
    ASSERT_EQ(counter.sync_events().size(), 1u);
    EXPECT_NE(counter.sync_events()[0].where.find("test_parallel.cpp:" + std::to_string(line)),
              std::string::npos)
        << counter.sync_events()[0].where;
    EXPECT_NE(counter.sync_events()[0].description.find("parallel_reduce(sum)"), std::string::npos);
  }
  const long long before = counter.synchronizations();
  (void)cn::parallel_reduce("empty", 0, cn::ReduceOp::sum, body);
  EXPECT_EQ(counter.synchronizations(), before) << "an empty reduction reads nothing back";
}

CUNUMPY_ON_HOST_AND_EMULATED(Parallel);

// omp_thread_range: inside a parallel region the team's ranges are disjoint, in thread order,
// and cover [0, n) (also when n is smaller than the team); outside one, all of it.
TEST(ParallelRanges, OmpThreadRangeSplitsALoopOverTheTeam) {
  EXPECT_EQ(cn::omp_thread_range(10).begin, 0);
  EXPECT_EQ(cn::omp_thread_range(10).end, 10);
#if defined(_OPENMP)
  for (const long long n : {0LL, 3LL, 1000003LL})
    for (const int threads : {1, 2, 4, 7}) {
      std::vector<cn::IndexRange> ranges(static_cast<std::size_t>(threads));
      int team = 0;
#pragma omp parallel num_threads(threads)
      {
        ranges[static_cast<std::size_t>(omp_get_thread_num())] = cn::omp_thread_range(n);
#pragma omp single
        team = omp_get_num_threads();
      }
      long long next = 0;
      for (int t = 0; t < team; ++t) {
        const cn::IndexRange r = ranges[static_cast<std::size_t>(t)];
        EXPECT_EQ(r.begin, next) << "n " << n << ", thread " << t << " of " << team;
        EXPECT_LE(r.begin, r.end);
        next = r.end;
      }
      EXPECT_EQ(next, n) << team << " threads";
    }
#endif
}
