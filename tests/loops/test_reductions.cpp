// sum, min, max and dot of whole arrays (reductions.hpp) on every backend: values against a
// plain loop (and NumPy's types), NaN, empty arrays, integer widths, multi-dimensional arrays,
// errors, and the synchronisation each counts on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {
class Reductions : public cn::testing::OnBackend {};

template <typename T>
cn::Array<T> array_of(const std::vector<T>& values, cn::Shape shape) {
  return cn::from_host<T>(values, shape, cn::get_backend());
}
}  // namespace

static_assert(std::is_same_v<cn::sum_t<float>, float>);
static_assert(std::is_same_v<cn::sum_t<std::int32_t>, std::int64_t>);
static_assert(std::is_same_v<cn::sum_t<std::uint32_t>, std::uint64_t>);

TEST_P(Reductions, SumMinMaxDotOfDoublesAgreeWithALoop) {
  // Several of the host's reduction chunks, so that partials are combined.
  const long long n = 300007;
  std::vector<double> a(static_cast<std::size_t>(n)), b(a.size());
  for (long long i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = std::sin(0.001 * static_cast<double>(i)) * 3.0 + 0.25;
    b[static_cast<std::size_t>(i)] = std::cos(0.003 * static_cast<double>(i));
  }
  double s = 0, d = 0, lo = a[0], hi = a[0];
  for (std::size_t i = 0; i < a.size(); ++i) {
    s += a[i];
    d += a[i] * b[i];
    lo = std::min(lo, a[i]);
    hi = std::max(hi, a[i]);
  }
  const auto x = array_of(a, cn::Shape{n});
  const auto y = array_of(b, cn::Shape{n});
  EXPECT_NEAR(cn::sum(x), s, 1e-9 * std::abs(s) + 1e-9);
  EXPECT_NEAR(cn::dot(x, y), d, 1e-9 * std::abs(d) + 1e-9);
  EXPECT_EQ(cn::min(x), lo);  // min and max are exact
  EXPECT_EQ(cn::max(x), hi);
  // The same bits on every call (fixed chunks on the host).
  EXPECT_EQ(cn::sum(x), cn::sum(x));
}

TEST_P(Reductions, FloatSumsAccumulateInDouble) {
  // 2^24 then 2^20 - 1 ones: a float running sum never leaves 2^24 (2^24 + 1 rounds back to
  // it); the double accumulator gives the exact sum, rounded to float once at the end.
  const long long n = 1 << 20;
  std::vector<float> v(static_cast<std::size_t>(n), 1.0f);
  v[0] = 16777216.0f;  // 2^24: adding 1.0f to it in float changes nothing
  const auto x = array_of(v, cn::Shape{n});
  const float s = cn::sum(x);
  EXPECT_EQ(s, 16777216.0f + static_cast<float>(n - 1));
  const float d = cn::dot(x, x);
  EXPECT_FLOAT_EQ(d, 16777216.0f * 16777216.0f + static_cast<float>(n - 1));
}

TEST_P(Reductions, IntegersWidenAsNumpyDoes) {
  std::vector<std::int32_t> v = {std::numeric_limits<std::int32_t>::max(),
                                 std::numeric_limits<std::int32_t>::max(), -5, 7};
  const auto x = array_of(v, cn::Shape{2, 2});  // every element, read as flat
  const std::int64_t s = cn::sum(x);
  EXPECT_EQ(s, 2LL * std::numeric_limits<std::int32_t>::max() + 2);
  EXPECT_EQ(cn::min(x), -5);
  EXPECT_EQ(cn::max(x), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(cn::dot(x, x), 2LL * std::numeric_limits<std::int32_t>::max() *
                                   std::numeric_limits<std::int32_t>::max() +
                               25 + 49);
  // 64-bit integers past a double's 53 bits stay exact.
  std::vector<std::int64_t> w = {(1LL << 60) + 1, (1LL << 60) + 3, -(1LL << 62) - 1};
  const auto y = array_of(w, cn::Shape{3});
  EXPECT_EQ(cn::max(y), (1LL << 60) + 3);
  EXPECT_EQ(cn::min(y), -(1LL << 62) - 1);
  std::vector<std::uint64_t> u = {std::numeric_limits<std::uint64_t>::max(), 1};
  EXPECT_EQ(cn::max(array_of(u, cn::Shape{2})), std::numeric_limits<std::uint64_t>::max());
  std::vector<std::uint32_t> u32 = {4000000000u, 4000000000u};
  EXPECT_EQ(cn::sum(array_of(u32, cn::Shape{2})), 8000000000ull);
  EXPECT_EQ(cn::min(array_of(u32, cn::Shape{2})), 4000000000u);
}

TEST_P(Reductions, NaNInfinitiesSignedZerosAndEmptyArrays) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {1.0f, -inf, 3.0f, inf, -0.0f};
  const auto x = array_of(v, cn::Shape{5});
  EXPECT_EQ(cn::min(x), -inf);
  EXPECT_EQ(cn::max(x), inf);
  std::vector<float> w = {1.0f, 2.0f, std::nanf(""), -4.0f};
  const auto y = array_of(w, cn::Shape{4});
  EXPECT_TRUE(std::isnan(cn::min(y)));
  EXPECT_TRUE(std::isnan(cn::max(y)));
  EXPECT_TRUE(std::isnan(cn::sum(y)));
  std::vector<double> z = {-0.0, -1e-300, 1e-300};
  EXPECT_EQ(cn::min(array_of(z, cn::Shape{3})), -1e-300);
  EXPECT_EQ(cn::max(array_of(z, cn::Shape{3})), 1e-300);

  const auto empty = cn::zeros<double>({0});
  EXPECT_EQ(cn::sum(empty), 0.0);
  EXPECT_EQ(cn::dot(empty, empty), 0.0);
  try {
    (void)cn::min(empty);
    FAIL() << "min of an empty array must raise";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("cunumpy::min: the array (0,) is empty"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)cn::max(empty), cn::ValueError);
}

TEST_P(Reductions, DotRefusesOtherShapesAndBackends) {
  const auto a = cn::ones<double>({4});
  const auto b = cn::ones<double>({2, 2});
  try {
    (void)cn::dot(a, b);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("shapes (4,) and (2, 2)"), std::string::npos) << e.what();
  }
  if (GetParam() != cn::Backend::host) {
    const auto h = cn::ones<double>({4}, cn::Backend::host);
    try {
      (void)cn::dot(a, h);
      FAIL();
    } catch (const cn::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("the other on host"), std::string::npos) << e.what();
    }
  }
}

// A device reduction reads its result back: one synchronisation of kind reduction, at the
// caller's line; none on the host.
TEST_P(Reductions, EachCountsOneReductionSynchronisationOnADevice) {
  const auto x = cn::ones<float>({1000});
  auto counter = cn::count_transfers();
  const int line = __LINE__ + 1;
  const float s = cn::sum(x);
  (void)cn::max(x);
  (void)cn::dot(x, x);
  EXPECT_EQ(s, 1000.0f);
  EXPECT_EQ(counter.total(), 0) << counter.report();
  if (GetParam() == cn::Backend::host) {
    EXPECT_EQ(counter.synchronizations(), 0) << counter.report();
  } else {
    EXPECT_EQ(counter.synchronizations(cn::SyncKind::reduction), 3) << counter.report();
    EXPECT_EQ(counter.synchronizations(), 3) << counter.report();
    ASSERT_FALSE(counter.sync_events().empty());
    const std::string where = "test_reductions.cpp:" + std::to_string(line);
    EXPECT_NE(counter.sync_events()[0].where.find(where), std::string::npos)
        << counter.sync_events()[0].where;
  }
}

CUNUMPY_INSTANTIATE_ON_BACKENDS(Reductions);
