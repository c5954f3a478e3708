// The library's vector operations beyond Highway's (cunumpy/host_vectors-inl.h), on every
// target of the build the CPU runs: TruncInRange equals a scalar truncation for floats and
// doubles in int32's range; TwoTablesLookupLanes takes lane idx of the first vector below the
// lane count and of the second above it, as the AVX-512 permute and the portable form must.
// CUNUMPY_HOST_DISPATCH (cunumpy/host_targets.hpp) runs the target CUNUMPY_HOST_SIMD chose.
#include <cunumpy/host_targets.hpp>  // first: the library's targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "loops/test_host_vectors.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <cunumpy/host_vectors-inl.h>

HWY_BEFORE_NAMESPACE();
namespace host_vectors_test {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace cv = cunumpy::HWY_NAMESPACE;

// Returns the number of lanes that differ from the scalar results.
template <class D>
int TruncOf(D d) {
  using T = hn::TFromD<D>;
  const hn::Rebind<std::int32_t, D> d32;
  const std::size_t n = hn::Lanes(d);
  std::vector<T> in(n);
  std::vector<std::int32_t> out(n);
  int wrong = 0;
  const T values[] = {T(0),         T(0.999),       T(-0.999),     T(1),     T(-1.5), T(2.5),
                      T(123456.75), T(-2147483520), T(2147483520), T(7.0e6), T(-3.25)};
  for (std::size_t start = 0; start < sizeof values / sizeof values[0]; ++start) {
    for (std::size_t i = 0; i < n; ++i)
      in[i] = values[(start + i) % (sizeof values / sizeof values[0])];
    hn::StoreU(cv::TruncInRange(d, hn::LoadU(d, in.data())), d32, out.data());
    for (std::size_t i = 0; i < n; ++i) wrong += out[i] != static_cast<std::int32_t>(in[i]);
  }
  return wrong;
}
int TruncWrong() {
  return TruncOf(hn::ScalableTag<float>()) + TruncOf(hn::ScalableTag<double>()) +
         TruncOf(hn::CappedTag<float, 1>()) + TruncOf(hn::CappedTag<double, 1>());
}

int TwoTablesWrong() {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t n = hn::Lanes(d);
  std::vector<double> a(n), b(n), out(n);
  std::vector<std::int64_t> idx(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = 1.0 + static_cast<double>(i);
    b[i] = -1.0 - static_cast<double>(i);
  }
  int wrong = 0;
  for (std::size_t shift = 0; shift < 2 * n; ++shift) {
    for (std::size_t i = 0; i < n; ++i)
      idx[i] = static_cast<std::int64_t>((3 * i + shift) % (2 * n));
    hn::StoreU(cv::TwoTablesLookupLanes(d, hn::LoadU(d, a.data()), hn::LoadU(d, b.data()),
                                        hn::LoadU(di, idx.data())),
               d, out.data());
    for (std::size_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(idx[i]);
      wrong += out[i] != (k < n ? a[k] : b[k - n]);
    }
  }
  return wrong;
}

// The target this copy of the code was compiled for.
std::int64_t TargetHere() {
  return HWY_TARGET;
}

}  // namespace HWY_NAMESPACE
}  // namespace host_vectors_test
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cunumpy/algorithms.hpp>

namespace host_vectors_test {
HWY_EXPORT(TruncWrong);
HWY_EXPORT(TwoTablesWrong);
HWY_EXPORT(TargetHere);

// (Run once per CUNUMPY_HOST_SIMD value by CTest: avx512, avx2, portable on x86-64.)
TEST(HostTargets, DispatchRunsTheTargetTheLibraryChose) {
  const std::string report = cunumpy::host_simd();
  const cunumpy::HostTarget target = cunumpy::host_target();
  // host_simd()'s report begins with the target's name.
  EXPECT_EQ(report.rfind(std::string(cunumpy::to_string(target)), 0), 0u) << report;
  const std::int64_t chosen = cunumpy::detail::host_highway_targets();
  const std::int64_t compiled = chosen & HWY_TARGETS;
  const std::int64_t expected = compiled != 0 ? (compiled & -compiled) : HWY_STATIC_TARGET;
  EXPECT_EQ(CUNUMPY_HOST_DISPATCH(TargetHere)(), expected)
      << "dispatched to " << hwy::TargetName(CUNUMPY_HOST_DISPATCH(TargetHere)()) << ", chose "
      << report;
  const char* asked = std::getenv("CUNUMPY_HOST_SIMD");
  if (asked != nullptr && std::string(asked) == "portable") {
    EXPECT_EQ(target, cunumpy::HostTarget::portable);
    EXPECT_EQ(chosen, 0);
  }
  if (target == cunumpy::HostTarget::avx2) {  // asked for, or the best this CPU runs
    EXPECT_EQ(CUNUMPY_HOST_DISPATCH(TargetHere)(), HWY_AVX2);
  }
  if (asked != nullptr && std::string(asked) == "avx2" &&
      (hwy::SupportedTargets() & HWY_AVX2) != 0) {
    EXPECT_EQ(target, cunumpy::HostTarget::avx2);  // not AVX-512 on a CPU that has both
  }
}

TEST(HostTargets, NamesAreTheEnvironmentVariablesValues) {
  using cunumpy::HostTarget;
  EXPECT_EQ(cunumpy::to_string(HostTarget::portable), "portable");
  EXPECT_EQ(cunumpy::to_string(HostTarget::avx2), "avx2");
  EXPECT_EQ(cunumpy::to_string(HostTarget::avx512), "avx512");
  EXPECT_EQ(cunumpy::to_string(HostTarget::neon), "neon");
  EXPECT_EQ(cunumpy::to_string(HostTarget::sve), "sve");
  EXPECT_EQ(cunumpy::to_string(HostTarget::sve2), "sve2");
}

TEST(HostVectors, EveryTargetTheCpuRunsGivesTheScalarResults) {
  int targets = 0;
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    EXPECT_EQ(HWY_DYNAMIC_DISPATCH(TruncWrong)(), 0) << hwy::TargetName(target);
    EXPECT_EQ(HWY_DYNAMIC_DISPATCH(TwoTablesWrong)(), 0) << hwy::TargetName(target);
    ++targets;
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets, 1);
}
}  // namespace host_vectors_test
#endif
