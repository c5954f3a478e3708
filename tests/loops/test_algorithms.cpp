// Morton keys at their edges, sort_by_key stability, segment_sum edge cases and repeatability,
// on host and emulated.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {
class Algorithms : public cn::testing::OnBackend {};

// The reference: the permutation std::stable_sort gives the keys.
std::vector<std::int64_t> stable_order(const std::vector<std::uint64_t>& keys) {
  std::vector<std::int64_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return keys[a] < keys[b]; });
  return order;
}
}  // namespace

// The host loops run are those CUNUMPY_HOST_SIMD asks for: this program is registered once per
// vector target of the build (avx512, avx2 on x86-64; neon, sve, sve2 on ARM) and once with
// portable, so that every target the CPU has runs the tests (and must give the same bits); a
// target the CPU lacks is skipped.
TEST(HostSimd, FollowsTheEnvironment) {
  const char* env = std::getenv("CUNUMPY_HOST_SIMD");
  const std::string asked = env == nullptr ? "auto" : env;
  const std::string report = cn::host_simd();
  if (asked == "portable") {
    EXPECT_EQ(report, "portable (CUNUMPY_HOST_SIMD=portable)");
    return;
  }
  if (report.find("not supported by this CPU") != std::string::npos)
    GTEST_SKIP() << "this CPU lacks " << asked << ": " << report;
  if (asked != "auto") {
    EXPECT_EQ(report.rfind(asked + " (Highway ", 0), 0u) << report;
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  // auto: the best target the CPU has
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  const char* best = avx512 ? "avx512 (" : __builtin_cpu_supports("avx2") ? "avx2 (" : "portable (";
  EXPECT_EQ(report.rfind(best, 0), 0u) << report;
#else
  EXPECT_NE(report.find('('), std::string::npos) << report;
#endif
}

TEST(MortonHeader, SpreadCompactEncodeRoundTrip) {
  std::mt19937_64 g(1);
  for (int t = 0; t < 1000; ++t) {
    const unsigned long long x = g() & 0xFFFFFFFF, y = g() & 0xFFFFFFFF, z = g() & 0x1FFFFF;
    EXPECT_EQ(cunumpy_morton_compact2(cunumpy_morton_spread2(x)), x);
    EXPECT_EQ(cunumpy_morton_compact3(cunumpy_morton_spread3(z)), z);
    const unsigned long long k = cunumpy_morton_encode2(x, y);
    EXPECT_EQ(cunumpy_morton_compact2(k), x);
    EXPECT_EQ(cunumpy_morton_compact2(k >> 1), y);
  }
  // Axis 0 is the lowest bit of each group.
  EXPECT_EQ(cunumpy_morton_encode2(1, 0), 1u);
  EXPECT_EQ(cunumpy_morton_encode2(0, 1), 2u);
  EXPECT_EQ(cunumpy_morton_encode3(0, 0, 1), 4u);
  EXPECT_EQ(cunumpy_morton_encode3(1, 1, 1), 7u);
  EXPECT_EQ(cunumpy_morton_encode3(2, 0, 0), 8u);
  EXPECT_EQ(cunumpy_morton_encode2(0xFFFFFFFFull, 0xFFFFFFFFull), ~0ull);
  EXPECT_EQ(cunumpy_morton_encode3(0x1FFFFF, 0x1FFFFF, 0x1FFFFF), (1ull << 63) - 1);
}

TEST(MortonHeader, CellConventions) {
  const int L = 3;  // 8 cells on [0, 1)
  const double s = 8.0;
  EXPECT_EQ(cunumpy_morton_cell(0.0, 0.0, s, L), 0u);
  EXPECT_EQ(cunumpy_morton_cell(0.125, 0.0, s, L), 1u) << "a boundary point goes to the upper cell";
  EXPECT_EQ(cunumpy_morton_cell(0.124999, 0.0, s, L), 0u);
  EXPECT_EQ(cunumpy_morton_cell(1.0, 0.0, s, L), 7u)
      << "the upper face is clipped into the last cell";
  EXPECT_EQ(cunumpy_morton_cell(5.0, 0.0, s, L), 7u) << "outside: the nearest face";
  EXPECT_EQ(cunumpy_morton_cell(-3.0, 0.0, s, L), 0u);
  EXPECT_EQ(cunumpy_morton_cell(0.7, 0.0, s, 0), 0u) << "level 0: one cell";
  // lower > upper reverses the axis: lower = 1, upper = 0.
  EXPECT_EQ(cunumpy_morton_cell(0.99, 1.0, -8.0, L), 0u);
  EXPECT_EQ(cunumpy_morton_cell(0.01, 1.0, -8.0, L), 7u);
  // The maximum levels.
  EXPECT_EQ(cunumpy_morton_cell(1.0, 0.0, std::ldexp(1.0, 32), 32), 0xFFFFFFFFull);
  EXPECT_EQ(cunumpy_morton_cell(0.5, 0.0, std::ldexp(1.0, 21), 21), 1ull << 20);
}

TEST_P(Algorithms, MortonKeysMatchTheHeaderAndValidate) {
  const std::vector<double> pts{0.1, 0.2, 0.9, 0.95, 0.5, 0.5, -1.0, 2.0};
  auto p = cn::from_host<double>(pts, cn::Shape{4, 2});
  const double lower[] = {0.0, 0.0}, upper[] = {1.0, 1.0};
  auto keys = cn::morton_keys(p, lower, upper, 4);
  EXPECT_EQ(keys.backend(), GetParam());
  auto h = cn::to_host(keys);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(h(i), cunumpy_morton_key2(pts[2 * i], pts[2 * i + 1], 0.0, 0.0, 16.0, 16.0, 4));
  EXPECT_EQ(h(3), cunumpy_morton_encode2(0, 15)) << "outside points go to the nearest face";
  auto cells = cn::to_host(cn::morton_decode(keys, 2));
  EXPECT_EQ(cells(1, 0), 14u);
  EXPECT_EQ(cells(1, 1), 15u);
  EXPECT_EQ(cn::to_host(cn::morton_encode(cn::to_active(cells)))(1), h(1));
  const auto scales = cn::morton_scales(lower, upper, 4);
  EXPECT_EQ(scales[0], 16.0);
  EXPECT_EQ(cn::max_morton_levels(2), 32);
  EXPECT_EQ(cn::max_morton_levels(3), 21);
  EXPECT_THROW(cn::morton_keys(p, lower, upper, 33), cn::ValueError);
  EXPECT_THROW(cn::morton_keys(p, lower, upper, 0), cn::ValueError)
      << "at least one level, as in the Python library";
  const double nan_upper[] = {std::nan(""), 1.0};
  EXPECT_THROW((void)cn::morton_scales(lower, nan_upper, 3), cn::ValueError)
      << "a NaN bound is an error, not cell 0";
  const double lower3[] = {0, 0, 0}, upper3[] = {1, 1, 1};
  EXPECT_THROW(cn::morton_keys(p, lower3, upper3, 3), cn::ValueError) << "3 bounds for 2D points";
  const double flat[] = {0.0, 1.0};
  EXPECT_THROW(cn::morton_scales(flat, flat, 3), cn::ValueError) << "empty box";
  EXPECT_THROW(cn::morton_decode(keys, 4), cn::ValueError);
  EXPECT_THROW(cn::morton_keys(cn::zeros<double>({3, 4}), lower, upper, 3), cn::ValueError);
  // 3D at the maximum level, with the axis reversed along z.
  const std::vector<double> p3{0.25, 0.5, 0.75};
  const double lo3[] = {0, 0, 1}, up3[] = {1, 1, 0};
  auto k3 = cn::to_host(cn::morton_keys(cn::from_host<double>(p3, cn::Shape{1, 3}), lo3, up3, 21));
  EXPECT_EQ(k3(0), cunumpy_morton_encode3(1ull << 19, 1ull << 20, 1ull << 19));
}

// The host computes 3D keys eight points at a time where the CPU allows: the header's keys
// for every point, at every level count, with points inside, on the faces, outside, NaN,
// and an axis reversed; lengths that leave a scalar tail.
TEST_P(Algorithms, MortonKeys3dOfManyPointsMatchTheHeader) {
  const long long n = 1003;
  std::mt19937_64 g(23);
  std::uniform_real_distribution<double> d(-0.2, 1.2);
  std::vector<double> pts(3 * n);
  for (auto& x : pts) x = d(g);
  pts[3 * 5] = -0.0;
  pts[3 * 6 + 1] = 1.0;  // on the upper face
  pts[3 * 7 + 2] = 0.0;  // on the lower face
  pts[3 * 8] = -1e300;
  pts[3 * 9 + 1] = 1e300;
  const double lower[] = {0.0, 0.0, 1.0}, upper[] = {1.0, 1.0, 0.0};  // z reversed
  for (int levels : {1, 10, 21}) {
    for (long long m : {n, 16LL, 7LL}) {
      auto keys = cn::to_host(cn::morton_keys(
          cn::from_host<double>(std::span<const double>(pts.data(), 3 * m), cn::Shape{m, 3}), lower,
          upper, levels));
      const auto s = cn::morton_scales(lower, upper, levels);
      for (long long i = 0; i < m; ++i)
        ASSERT_EQ(keys(i), cunumpy_morton_key3(pts[3 * i], pts[3 * i + 1], pts[3 * i + 2], 0.0, 0.0,
                                               1.0, s[0], s[1], s[2], levels))
            << "point " << i << " of " << m << " at " << levels << " levels";
    }
  }
}

TEST_P(Algorithms, MortonKeys2dOfManyPointsMatchTheHeader) {
  const long long n = 1001;
  std::mt19937_64 g(29);
  std::uniform_real_distribution<double> d(-0.2, 1.2);
  std::vector<double> pts(2 * n);
  for (auto& x : pts) x = d(g);
  pts[2 * 3] = -0.0;
  pts[2 * 4 + 1] = 1.0;  // on the upper edge
  pts[2 * 5] = 0.0;      // on the lower edge
  pts[2 * 6 + 1] = -1e300;
  pts[2 * 7] = 1e300;
  const double lower[] = {0.0, 1.0}, upper[] = {1.0, 0.0};  // y reversed
  for (int levels : {1, 16, 31, 32}) {
    for (long long m : {n, 16LL, 5LL}) {
      auto keys = cn::to_host(cn::morton_keys(
          cn::from_host<double>(std::span<const double>(pts.data(), 2 * m), cn::Shape{m, 2}), lower,
          upper, levels));
      const auto s = cn::morton_scales(lower, upper, levels);
      for (long long i = 0; i < m; ++i)
        ASSERT_EQ(keys(i),
                  cunumpy_morton_key2(pts[2 * i], pts[2 * i + 1], 0.0, 1.0, s[0], s[1], levels))
            << "point " << i << " of " << m << " at " << levels << " levels";
    }
  }
}

// A NaN or infinite coordinate is an error naming the first such point and how many there
// are, found in the pass that computes the keys, wherever the point lies (the vector loop's
// part or its last few rows), in 2D and 3D.  Finite points outside the box go to edge cells.
// periodic_cell_keys (a PIC code's re-sort) gives the scalar formula's keys (each axis's
// position in cell units truncated and wrapped into the grid, Morton-encoded) for float and
// double positions and for cells with offsets, in 1D, 2D and 3D, on every lane: positions
// inside the box, on its edges, past them on both sides (which the wrap moves), far away, and
// NaN; on every host vector target (this program runs once per CUNUMPY_HOST_SIMD value) and
// on the device's loop.
namespace {
unsigned long long periodic_cell(double s, long long cells) {
  long long j = (s > -4.0e18 && s < 4.0e18) ? static_cast<long long>(s) : 0;  // toward zero
  j %= cells;
  return static_cast<unsigned long long>(j < 0 ? j + cells : j);
}
}  // namespace

TEST_P(Algorithms, PeriodicCellKeysAreTheScalarFormula) {
  const long long n = 1003, cells[3] = {48, 40, 36};
  const double dx[3] = {0.7853981633974483, 1.0, 1.37};
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto check = [&](auto zero, bool in_cells) {
    using R = decltype(zero);
    std::vector<R> p[3];
    std::vector<std::int32_t> c[3];
    for (int a = 0; a < 3; ++a) {
      const double length = static_cast<double>(cells[a]) * dx[a];
      for (long long i = 0; i < n; ++i) {
        const double special[] = {-1.5 * dx[a],
                                  0.0,
                                  std::nextafter(length, 0.0),
                                  length,
                                  -0.25 * dx[a],
                                  length + 1.5 * dx[a],
                                  -3.5 * length,
                                  std::numeric_limits<double>::quiet_NaN(),
                                  1e30};
        const double x = i % 23 < 9 && i % 2 == 1 ? special[(i % 23) / 2] : u(gen) * length;
        if (in_cells) {  // a cell (some outside the grid) and an offset in [0, 1)
          const double t = std::isfinite(x) && std::abs(x) < 1e9 ? x / dx[a] : 0.0;
          c[a].push_back(static_cast<std::int32_t>(std::floor(t)));
          p[a].push_back(static_cast<R>(std::min(t - std::floor(t), 0.99999994)));
        } else {
          p[a].push_back(static_cast<R>(x));
        }
      }
    }
    for (int dim = 1; dim <= 3; ++dim) {
      cn::PeriodicCells grid{dim, {cells[0], cells[1], cells[2]}, {1.0, 1.0, 1.0}};
      std::vector<cn::Array<R>> x;
      std::vector<cn::Array<std::int32_t>> cx;
      for (int a = 0; a < dim; ++a) {
        if (!in_cells) grid.inverse_cell_size[a] = 1.0 / dx[a];
        x.push_back(cn::from_host<R>(std::span<const R>(p[a]), {n}));
        if (in_cells)
          cx.push_back(cn::from_host<std::int32_t>(std::span<const std::int32_t>(c[a]), {n}));
      }
      const auto keys = cn::to_host(cn::periodic_cell_keys(grid, x, n, cx));
      std::set<std::uint64_t> distinct;
      for (long long i = 0; i < n; ++i) {
        unsigned long long j[3] = {0, 0, 0};
        for (int a = 0; a < dim; ++a) {
          const double s = in_cells ? static_cast<double>(c[a][i]) + static_cast<double>(p[a][i])
                                    : static_cast<double>(p[a][i]) * grid.inverse_cell_size[a];
          j[a] = periodic_cell(s, cells[a]);
        }
        const std::uint64_t expected = dim == 3 ? cunumpy_morton_encode3(j[0], j[1], j[2])
                                                : cunumpy_morton_encode2(j[0], j[1]);
        distinct.insert(expected);
        ASSERT_EQ(keys(i), expected) << dim << "D, row " << i << ", "
                                     << (in_cells         ? "cells"
                                         : sizeof(R) == 4 ? "float"
                                                          : "double");
      }
      EXPECT_GT(distinct.size(), dim == 1 ? 40u : 100u) << "the keys tell the cells apart";
    }
  };
  check(0.0f, false);
  check(0.0, false);
  check(0.0f, true);
  check(0.0, true);
  // Bad columns: a clear error.
  const auto x = cn::zeros<double>({5});
  const std::vector<cn::Array<double>> one{x}, two{x, x};
  EXPECT_THROW(cn::periodic_cell_keys({2, {4, 4, 1}}, one, 5), cn::ValueError);  // 1 column, 2D
  EXPECT_THROW(cn::periodic_cell_keys({2, {4, 4, 1}}, two, 6), cn::ValueError);  // n > rows
  EXPECT_THROW(cn::periodic_cell_keys({2, {4, 0, 1}}, two, 5), cn::ValueError);  // no cells
  EXPECT_EQ(cn::periodic_cell_keys({2, {4, 4, 1}}, two, 5).shape(0), 5);
}

TEST_P(Algorithms, MortonKeysOfNonFinitePositionsAreAnErrorNamingTheFirst) {
  for (int nd : {2, 3}) {
    const long long n = 1003;
    for (long long bad : {0LL, 5LL, 517LL, n - 1}) {
      for (double v : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
        std::vector<double> pts(static_cast<std::size_t>(nd * n), 0.5);
        pts[static_cast<std::size_t>(nd * bad + nd - 1)] = v;
        if (bad + 3 < n) pts[static_cast<std::size_t>(nd * (bad + 3))] = v;  // a second one
        const std::vector<double> lower(static_cast<std::size_t>(nd), 0.0),
            upper(static_cast<std::size_t>(nd), 1.0);
        const auto positions =
            cn::from_host<double>(std::span<const double>(pts), cn::Shape{n, nd});
        try {
          (void)cn::morton_keys(positions, lower, upper, 10);
          ADD_FAILURE() << "no error for " << v << " at point " << bad << " in " << nd << "D";
        } catch (const cn::ValueError& e) {
          const std::string m = e.what();
          EXPECT_NE(m.find("particle " + std::to_string(bad) + " has a non-finite position"),
                    std::string::npos)
              << m;
          if (bad + 3 < n) {
            EXPECT_NE(m.find("and 1 more"), std::string::npos) << m;
          }
        }
      }
    }
  }
}

TEST_P(Algorithms, SortByKeyIsStableAndPermutesEveryArray) {
  const long long n = 100000;
  std::mt19937_64 g(3);
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = g() % 97;  // many equal keys
  std::vector<double> pos(2 * n);
  std::iota(pos.begin(), pos.end(), 0.0);
  std::vector<float> q(n);
  std::iota(q.begin(), q.end(), 0.0f);
  auto [sk, order, sp, sq] =
      cn::sort_by_key(cn::from_host<std::uint64_t>(keys),
                      cn::from_host<double>(pos, cn::Shape{n, 2}), cn::from_host<float>(q));
  EXPECT_EQ(order.backend(), GetParam());
  const std::vector<std::int64_t> expected = stable_order(keys);
  auto ho = cn::to_host(order);
  auto hk = cn::to_host(sk);
  auto hp = cn::to_host(sp);
  auto hq = cn::to_host(sq);
  for (long long i = 0; i < n; ++i) {
    ASSERT_EQ(ho(i), expected[i]) << i;
    ASSERT_EQ(hk(i), keys[expected[i]]);
    ASSERT_EQ(hp(i, 1), pos[2 * expected[i] + 1]);
    ASSERT_EQ(hq(i), q[expected[i]]);
  }
}

// Keys that meet in the in-bucket digit in small groups of every size (the groups the host
// sort orders eight pairs at a time, or pair by pair where a group does not fit that), at
// sizes from one bucket to many; the first 8-byte array rides in the top scatter, the others
// are staged after it.
TEST_P(Algorithms, SortByKeyOfKeysThatMeetInSmallGroups) {
  std::mt19937_64 g(29);
  for (const long long n : {1000LL, 5003LL, 70001LL, (1LL << 20) + 3}) {
    std::vector<std::uint64_t> keys(static_cast<std::size_t>(n));
    for (long long i = 0; i < n; ++i) {
      const std::uint64_t r = g();
      switch (i % 4) {
        case 0:
          keys[i] = r >> 1;
          break;  // spread
        case 1:
          keys[i] = ((r % static_cast<std::uint64_t>(n)) << 40) | (r & 7);
          break;  // pairs and triples
        case 2:
          keys[i] = (r % 64) << 40;
          break;  // equal keys in groups
        default:
          keys[i] = ((r % static_cast<std::uint64_t>(n / 3 + 1)) << 40) | ((r >> 20) & 0xFF);
          break;
      }
    }
    std::vector<std::int64_t> id(static_cast<std::size_t>(n));
    std::iota(id.begin(), id.end(), std::int64_t{100});
    std::vector<double> w(static_cast<std::size_t>(n));
    std::iota(w.begin(), w.end(), 0.25);
    std::vector<float> xy(static_cast<std::size_t>(2 * n));
    std::iota(xy.begin(), xy.end(), 0.0f);
    auto [sk, order, sid, sw, sxy] =
        cn::sort_by_key(cn::from_host<std::uint64_t>(keys), cn::from_host<std::int64_t>(id),
                        cn::from_host<double>(w), cn::from_host<float>(xy, cn::Shape{n, 2}));
    const std::vector<std::int64_t> expected = stable_order(keys);
    auto ho = cn::to_host(order);
    auto hk = cn::to_host(sk);
    auto hid = cn::to_host(sid);
    auto hw = cn::to_host(sw);
    auto hxy = cn::to_host(sxy);
    for (long long i = 0; i < n; ++i) {
      const std::int64_t e = expected[i];
      ASSERT_EQ(ho(i), e) << "n=" << n << " i=" << i;
      ASSERT_EQ(hk(i), keys[e]) << i;
      ASSERT_EQ(hid(i), id[e]) << i;
      ASSERT_EQ(hw(i), w[e]) << i;
      ASSERT_EQ(hxy(i, 1), xy[2 * e + 1]) << i;
    }
  }
}

// Keys that differ in a bit no sampled key shows (the host sort guesses the top digit from a
// sample and counts it again when the guess was wrong).
TEST_P(Algorithms, SortByKeyWhenOneRareKeyHoldsTheHighestBit) {
  const long long n = 100000;
  std::vector<std::uint64_t> keys(n);
  for (long long i = 0; i < n; ++i)
    keys[i] = static_cast<std::uint64_t>((i * 7919) % 1000);  // ten bits
  keys[1] |= std::uint64_t{1} << 50;
  keys[2] = std::uint64_t{1} << 49;
  std::vector<std::int64_t> id(n);
  std::iota(id.begin(), id.end(), std::int64_t{0});
  auto [sk, order, sid] =
      cn::sort_by_key(cn::from_host<std::uint64_t>(keys), cn::from_host<std::int64_t>(id));
  const std::vector<std::int64_t> expected = stable_order(keys);
  auto ho = cn::to_host(order);
  auto hk = cn::to_host(sk);
  auto hid = cn::to_host(sid);
  for (long long i = 0; i < n; ++i) {
    ASSERT_EQ(ho(i), expected[i]) << i;
    ASSERT_EQ(hk(i), keys[expected[i]]) << i;
    ASSERT_EQ(hid(i), expected[i]) << i;
  }
  EXPECT_EQ(ho(n - 1), 1);
}

// sort_by_key called from inside a parallel region, each thread sorting keys of its own: the
// host sort works with the team it is given (one thread when nested regions are off), however
// many threads it asked for.
TEST_P(Algorithms, SortByKeyInsideAParallelRegion) {
#if defined(_OPENMP)
  if (GetParam() != cn::Backend::host) GTEST_SKIP() << "the threads share the host backend only";
  const long long n = 300000;  // enough keys for the sort to ask for several threads
  std::mt19937_64 g(41);
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = g() >> 1;
  std::vector<std::int64_t> id(n);
  std::iota(id.begin(), id.end(), std::int64_t{0});
  const std::vector<std::int64_t> expected = stable_order(keys);
  long long wrong = 0;
#pragma omp parallel num_threads(2) reduction(+ : wrong)
  {
    omp_set_num_threads(2);  // what a nested region would ask for
    auto [sk, order, sid] =
        cn::sort_by_key(cn::from_host<std::uint64_t>(keys), cn::from_host<std::int64_t>(id));
    auto ho = cn::to_host(order);
    auto hid = cn::to_host(sid);
    for (long long i = 0; i < n; ++i) wrong += (ho(i) != expected[i]) + (hid(i) != expected[i]);
  }
  EXPECT_EQ(wrong, 0);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

// More than 2^21 keys: the host sort streams its outputs and permutes the arrays through its
// bucketed layout.  Spread keys, a cluster that shares its top bits (a bucket sorted
// recursively), a block of equal keys (stability), rows of several widths.
TEST_P(Algorithms, SortByKeyOfDataLargerThanTheCaches) {
  const long long n = (1LL << 21) + 5;
  std::mt19937_64 g(17);
  std::vector<std::uint64_t> keys(n);
  for (long long i = 0; i < n; ++i) {
    const std::uint64_t r = g();
    if (i % 7 == 3)
      keys[i] =
          (std::uint64_t{5} << 55) | (r & 0xFFFFF);  // the cluster: one top digit, 20 low bits
    else if (i % 11 == 4)
      keys[i] = std::uint64_t{1} << 40;  // equal keys
    else
      keys[i] = r >> 1;  // 63 bits, as 3D Morton keys at 21 levels
  }
  std::vector<double> pos(3 * n);
  std::iota(pos.begin(), pos.end(), 0.5);
  std::vector<std::int32_t> id(n);
  std::iota(id.begin(), id.end(), 0);
  std::vector<std::complex<float>> w(n);
  for (long long i = 0; i < n; ++i) w[i] = {static_cast<float>(i), -static_cast<float>(i)};
  auto [sk, order, sp, sid, sw] = cn::sort_by_key(
      cn::from_host<std::uint64_t>(keys), cn::from_host<double>(pos, cn::Shape{n, 3}),
      cn::from_host<std::int32_t>(id), cn::from_host<std::complex<float>>(w));
  const std::vector<std::int64_t> expected = stable_order(keys);
  auto ho = cn::to_host(order);
  auto hk = cn::to_host(sk);
  auto hp = cn::to_host(sp);
  auto hid = cn::to_host(sid);
  auto hw = cn::to_host(sw);
  for (long long i = 0; i < n; ++i) {
    const std::int64_t e = expected[i];
    ASSERT_EQ(ho(i), e) << i;
    ASSERT_EQ(hk(i), keys[e]) << i;
    ASSERT_EQ(hp(i, 0), pos[3 * e]) << i;
    ASSERT_EQ(hp(i, 2), pos[3 * e + 2]) << i;
    ASSERT_EQ(hid(i), id[e]) << i;
    ASSERT_EQ(hw(i), w[e]) << i;
  }
}

TEST_P(Algorithms, SortByKeySignedKeysAndEdgeCases) {
  const std::vector<std::int32_t> k{3, -1, 3, -7, 0, -1};
  auto [sk, order] = cn::sort_by_key(cn::from_host<std::int32_t>(k));
  auto h = cn::to_host(order);
  const std::vector<std::int64_t> expected{3, 1, 5, 4, 0, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(h(i), expected[i]);
  EXPECT_EQ(cn::to_host(sk)(0), -7);
  // All equal keys: the identity.
  auto [ek, eo] = cn::sort_by_key(cn::full<std::uint64_t>({5}, 9));
  EXPECT_EQ(cn::to_host(eo)(4), 4);
  // Large 64-bit keys use every pass.
  const std::vector<std::uint64_t> big{~0ull, 1ull << 63, 0, (1ull << 63) - 1};
  auto [bk, bo] = cn::sort_by_key(cn::from_host<std::uint64_t>(big));
  EXPECT_EQ(cn::to_host(bk)(3), ~0ull);
  EXPECT_EQ(cn::to_host(bo)(1), 3);
  // Empty, and bad input.
  auto [zk, zo] = cn::sort_by_key(cn::zeros<std::int64_t>({0}));
  EXPECT_EQ(zo.size(), 0);
  EXPECT_THROW(cn::sort_by_key(cn::zeros<std::uint64_t>({4}), cn::zeros<double>({5})),
               cn::ValueError);
  EXPECT_THROW(cn::sort_by_key(cn::zeros<std::uint64_t>({2, 2})), cn::ValueError);
}

TEST_P(Algorithms, SegmentSumEdgeCasesAndTypes) {
  const std::vector<std::int64_t> keys{2, 0, -1, 2, 4, 0};
  const std::vector<double> v{1.0, 2.0, 100.0, 3.0, 4.0, 5.0};
  auto out =
      cn::to_host(cn::segment_sum(cn::from_host<std::int64_t>(keys), cn::from_host<double>(v), 6));
  const std::vector<double> expected{7.0, 0.0, 4.0, 0.0, 4.0, 0.0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out(i), expected[i]) << i;
  // (n, m) values, integer values summed as double, complex kept.
  const std::vector<std::int32_t> iv{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  auto two = cn::segment_sum(cn::from_host<std::int64_t>(keys),
                             cn::from_host<std::int32_t>(iv, cn::Shape{6, 2}), 5);
  static_assert(std::is_same_v<decltype(two), cn::Array<double>>);
  auto h2 = cn::to_host(two);
  EXPECT_EQ(h2.shape().str(), "(5, 2)");
  EXPECT_EQ(h2(2, 1), 2.0 + 8.0);
  const std::vector<std::complex<float>> cv{{1, 1}, {2, -1}, {0, 0}, {3, 0}, {0, 5}, {1, 1}};
  auto hc = cn::to_host(cn::segment_sum(cn::from_host<std::int64_t>(keys),
                                        cn::from_host<std::complex<float>>(cv), 5));
  EXPECT_EQ(hc(0), std::complex<float>(3, 0));
  EXPECT_EQ(hc(2), std::complex<float>(4, 1));
  // int32 keys, zero segments, errors.
  const std::vector<std::int32_t> k32{0, 0};
  EXPECT_EQ(
      cn::to_host(cn::segment_sum(cn::from_host<std::int32_t>(k32), cn::ones<float>({2}), 1))(0),
      2.0f);
  EXPECT_EQ(cn::segment_sum(cn::full<std::int64_t>({3}, -1), cn::ones<double>({3}), 0).size(), 0);
  try {
    (void)cn::segment_sum(cn::from_host<std::int64_t>(keys), cn::from_host<double>(v), 4);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("key 4 is not below n_segments=4"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cn::segment_sum(cn::from_host<std::int64_t>(keys), cn::ones<double>({5}), 6),
               cn::ValueError);
}

TEST_P(Algorithms, SegmentSumIsBitwiseRepeatableAndMatchesIndexOrder) {
  const long long n = 200000, segments = 1000;
  std::mt19937_64 g(11);
  std::vector<std::int64_t> keys(n);
  std::vector<double> v(n);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (long long i = 0; i < n; ++i) {
    keys[i] = static_cast<std::int64_t>(g() % segments) - 1;  // some -1: dropped
    v[i] =
        d(g) * std::pow(10.0, static_cast<double>(g() % 12));  // magnitudes that make order matter
  }
  std::vector<double> reference(segments, 0.0);
  for (long long i = 0; i < n; ++i)
    if (keys[i] >= 0) reference[keys[i]] += v[i];
  auto k = cn::from_host<std::int64_t>(keys);
  auto values = cn::from_host<double>(v);
  auto first = cn::to_host(cn::segment_sum(k, values, segments));
  for (int r = 0; r < 3; ++r) {
    auto again = cn::to_host(cn::segment_sum(k, values, segments));
    ASSERT_EQ(std::memcmp(again.data(), first.data(), first.nbytes()), 0);
  }
  for (long long s = 0; s < segments; ++s)
    ASSERT_EQ(first(s), reference[s]) << "index order, bit for bit";
}

// The host walks long inputs in chunks cut at run boundaries; whatever the layout of the keys
// (sorted runs, one run over everything, runs that a chunk boundary would split, a segment
// that comes back later, negative keys among the runs, sums of -0.0), the result is the
// sequential sum in index order, bit for bit.
TEST_P(Algorithms, SegmentSumOfLongInputsIsTheSequentialSum) {
  const long long n = 30001, segments = 700;
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  auto check = [&](const std::vector<std::int64_t>& keys, const std::vector<double>& v,
                   const char* what) {
    std::vector<double> reference(segments, 0.0);
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] >= 0) reference[keys[i]] += v[i];
    auto out = cn::to_host(
        cn::segment_sum(cn::from_host<std::int64_t>(keys), cn::from_host<double>(v), segments));
    for (long long s = 0; s < segments; ++s)
      ASSERT_EQ(std::memcmp(&reference[s], &out.data()[s], sizeof(double)), 0)
          << what << ": segment " << s << " " << out(s) << " vs " << reference[s];
  };
  std::vector<double> v(n);
  for (auto& x : v) x = d(g) * std::pow(10.0, static_cast<double>(g() % 12));
  std::vector<std::int64_t> sorted(n);
  for (long long i = 0; i < n; ++i) sorted[i] = i * segments / n;
  check(sorted, v, "sorted runs");
  check(std::vector<std::int64_t>(n, 3), v, "one run");
  auto back = sorted;
  back[n - 1] = sorted[0];  // segment 0 again at the end: met by two chunks
  back[n / 2] = -1;         // dropped, inside a run
  back[n / 3] = segments - 1;
  check(back, v, "a segment that comes back");
  std::vector<double> negative_zeros(n, -0.0);
  check(sorted, negative_zeros, "-0.0");
  auto bad = sorted;
  bad[n - 2] = segments;
  EXPECT_THROW(
      cn::segment_sum(cn::from_host<std::int64_t>(bad), cn::from_host<double>(v), segments),
      cn::ValueError);
}

// ---- scans and partitions ----------------------------------------------------------------

namespace {
// Lengths around the host's chunk (65536) and a multi-chunk one.
const std::vector<long long> kScanLengths{0, 1, 7, 65535, 65536, 65537, 300001};
}  // namespace

TEST_P(Algorithms, CumsumAndExclusiveScanEqualTheStandardScans) {
  std::mt19937_64 rng(11);
  for (long long n : kScanLengths) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = static_cast<std::int64_t>(rng() % 2001) - 1000;
    std::vector<std::int64_t> inc(v.size()), exc(v.size());
    std::inclusive_scan(v.begin(), v.end(), inc.begin());
    std::exclusive_scan(v.begin(), v.end(), exc.begin(), std::int64_t{0});
    const auto a = cn::from_host<std::int64_t>(v);
    const auto ci = cn::to_host(cn::cumsum(a));
    const auto ce = cn::to_host(cn::exclusive_scan(a));
    ASSERT_EQ(ci.size(), n);
    ASSERT_EQ(ce.size(), n);
    for (long long i = 0; i < n; ++i) {
      ASSERT_EQ(ci(i), inc[static_cast<std::size_t>(i)]) << "n " << n << " i " << i;
      ASSERT_EQ(ce(i), exc[static_cast<std::size_t>(i)]) << "n " << n << " i " << i;
    }
    // Unsigned 32-bit wraps as the standard's does.
    std::vector<std::uint32_t> u(v.size());
    for (auto& x : u) x = static_cast<std::uint32_t>(rng());
    std::vector<std::uint32_t> uinc(u.size());
    std::inclusive_scan(u.begin(), u.end(), uinc.begin());
    const auto cu = cn::to_host(cn::cumsum(cn::from_host<std::uint32_t>(u)));
    for (long long i = 0; i < n; ++i) ASSERT_EQ(cu(i), uinc[static_cast<std::size_t>(i)]);
  }
}

TEST_P(Algorithms, FloatingCumsumIsTheSequentialSumBitForBit) {
  // numpy.cumsum adds in index order: the host gives the same bits, whatever the threads.
  const long long n = 200003;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = std::sin(0.37 * i) * 1e3 + 1e-7 * i;
  std::vector<float> f(v.begin(), v.end());
  double acc = 0.0;
  float facc = 0.0f;
  const auto c = cn::to_host(cn::cumsum(cn::from_host<double>(v)));
  const auto e = cn::to_host(cn::exclusive_scan(cn::from_host<double>(v)));
  const auto cf = cn::to_host(cn::cumsum(cn::from_host<float>(f)));
  for (long long i = 0; i < n; ++i) {
    ASSERT_EQ(e(i), acc) << i;
    acc += v[static_cast<std::size_t>(i)];
    facc += f[static_cast<std::size_t>(i)];
    ASSERT_EQ(c(i), acc) << i;
    ASSERT_EQ(cf(i), facc) << i;
  }
}

TEST_P(Algorithms, FlatnonzeroAndStablePartitionEqualTheStandardOnes) {
  std::mt19937_64 rng(5);
  for (long long n : kScanLengths) {
    for (int density : {0, 1, 50, 100}) {  // percent of nonzero flags
      std::vector<std::uint32_t> flags(static_cast<std::size_t>(n));
      for (auto& x : flags) x = static_cast<int>(rng() % 100) < density ? 1u + rng() % 7 : 0u;
      std::vector<std::int64_t> nz, order(flags.size());
      for (long long i = 0; i < n; ++i)
        if (flags[static_cast<std::size_t>(i)] != 0) nz.push_back(i);
      std::iota(order.begin(), order.end(), 0);
      std::stable_partition(order.begin(), order.end(), [&](std::int64_t i) {
        return flags[static_cast<std::size_t>(i)] != 0;
      });
      const auto a = cn::from_host<std::uint32_t>(flags);
      const auto got = cn::to_host(cn::flatnonzero(a));
      ASSERT_EQ(got.size(), static_cast<long long>(nz.size()))
          << "n " << n << " density " << density;
      for (std::size_t k = 0; k < nz.size(); ++k) ASSERT_EQ(got(static_cast<long long>(k)), nz[k]);
      const auto [p, selected] = cn::stable_partition(a);
      EXPECT_EQ(selected, static_cast<long long>(nz.size()));
      const auto ph = cn::to_host(p);
      ASSERT_EQ(ph.size(), n);
      for (long long i = 0; i < n; ++i) ASSERT_EQ(ph(i), order[static_cast<std::size_t>(i)]) << i;
    }
  }
}

TEST_P(Algorithms, FlatnonzeroReadsAnyShapeFlatScansNeedOneAxis) {
  const std::vector<double> v{0.0, 1.5, 0.0, -2.0, 0.0, 3.0};
  const auto m = cn::from_host<double>(v, cn::Shape{2, 3});
  const auto nz = cn::to_host(cn::flatnonzero(m));
  ASSERT_EQ(nz.size(), 3);
  EXPECT_EQ(nz(0), 1);
  EXPECT_EQ(nz(1), 3);
  EXPECT_EQ(nz(2), 5);
  auto bools = cn::Array<bool>(cn::Shape{3}, cn::Backend::host);
  bools(0) = true;
  bools(1) = false;
  bools(2) = true;
  const auto bp = cn::stable_partition(cn::to_active(bools));
  EXPECT_EQ(bp.selected, 2);
  try {
    (void)cn::cumsum(m);
    FAIL() << "a 2D cumsum was accepted";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("cumsum: a 1D array is required, got shape (2, 3)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)cn::stable_partition(m), cn::ValueError);
}

#if defined(_OPENMP)
TEST_P(Algorithms, ScansAndPartitionsGiveTheSameResultOnAnyThreadCount) {
  const long long n = 1'000'003;
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 2654435761LL) % 7) - 3;
  const auto a = cn::from_host<std::int32_t>(v);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = cn::to_host(cn::cumsum(a));
  const auto one_p = cn::to_host(cn::stable_partition(a).order);
  omp_set_num_threads(3);
  const auto three = cn::to_host(cn::cumsum(a));
  const auto three_p = cn::to_host(cn::stable_partition(a).order);
  omp_set_num_threads(before);
  for (long long i = 0; i < n; ++i) {
    ASSERT_EQ(one(i), three(i)) << i;
    ASSERT_EQ(one_p(i), three_p(i)) << i;
  }
}
#endif

CUNUMPY_ON_HOST_AND_EMULATED(Algorithms);
