// Arrays on host and on the emulated device: creation, views, rank and shape errors, host
// access to device memory refused, backend inspection.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {
// Runs each test on the host and on the emulated device.
class ArrayOnBackend : public cn::testing::OnBackend {
 protected:
  template <typename T>
  static std::vector<T> values(const cn::Array<T>& a) {
    auto h = cn::to_host(a);
    return {h.host_span().begin(), h.host_span().end()};
  }
};
}  // namespace

TEST_P(ArrayOnBackend, CreationFunctions) {
  const cn::Backend b = GetParam();
  auto z = cn::zeros<double>({3, 4});
  EXPECT_EQ(z.backend(), b);
  EXPECT_EQ(z.ndim(), 2);
  EXPECT_EQ(z.size(), 12);
  EXPECT_EQ(z.nbytes(), 12 * sizeof(double));
  EXPECT_EQ(values(z), std::vector<double>(12, 0.0));
  EXPECT_EQ(values(cn::ones<int>({5})), std::vector<int>(5, 1));
  EXPECT_EQ(values(cn::full<float>({2, 2}, 2.5f)), std::vector<float>(4, 2.5f));
  EXPECT_EQ(values(cn::full<std::complex<double>>({2}, {1.0, -2.0})),
            (std::vector<std::complex<double>>(2, {1.0, -2.0})));
  EXPECT_EQ(values(cn::arange<int>(5)), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(cn::arange<int>(10, 0, -3)), (std::vector<int>{10, 7, 4, 1}));
  EXPECT_EQ(values(cn::arange<double>(0.0, 1.0, 0.25)), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(cn::arange<int>(3, 3).size(), 0);
  EXPECT_EQ(values(cn::linspace<double>(0.0, 1.0, 5)),
            (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(values(cn::linspace<double>(0.0, 1.0, 4, false)),
            (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(values(cn::linspace<double>(2.0, 3.0, 1)), (std::vector<double>{2.0}));
  EXPECT_EQ(cn::linspace<double>(0.0, 1.0, 0).size(), 0);
  auto e = cn::empty<std::uint64_t>({2, 3, 4, 5});
  EXPECT_EQ(e.ndim(), 4);
  EXPECT_EQ(e.shape().str(), "(2, 3, 4, 5)");
  const std::vector<double> src{1, 2, 3, 4, 5, 6};
  auto f = cn::from_host<double>(src, cn::Shape{2, 3});
  EXPECT_EQ(f.backend(), b);
  EXPECT_EQ(values(f), src);
  auto explicit_host = cn::zeros<double>({2}, cn::Backend::host);
  EXPECT_TRUE(explicit_host.is_host());
}

TEST_P(ArrayOnBackend, FillAndSharedOwnership) {
  auto a = cn::zeros<double>({4});
  cn::Array<double> alias = a;  // copies share memory
  EXPECT_TRUE(alias.shares_memory_with(a));
  alias.fill(7.0);
  EXPECT_EQ(values(a), std::vector<double>(4, 7.0));
}

TEST_P(ArrayOnBackend, ViewsHaveShapeAndStrides) {
  auto a = cn::arange<double>(0.0, 24.0, 1.0);
  auto h = cn::to_host(a);
  auto v1 = h.view<1>();
  EXPECT_EQ(v1.shape[0], 24);
  EXPECT_EQ(v1.strides[0], 1);
  EXPECT_EQ(v1(5), 5.0);
  auto c = cn::zeros<double>({2, 3, 4});
  auto v3 = c.view<3>();
  EXPECT_EQ(v3.data, c.data());
  EXPECT_EQ(v3.strides[0], 12);
  EXPECT_EQ(v3.strides[1], 4);
  EXPECT_EQ(v3.strides[2], 1);
  EXPECT_EQ(v3.size(), 24);
}

TEST_P(ArrayOnBackend, RankErrors) {
  auto a = cn::zeros<double>({2, 3});
  try {
    (void)a.view<1>();
    FAIL() << "expected ValueError";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 requested, but the array has rank 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)a.view<3>(), cn::ValueError);
  EXPECT_THROW(cn::Shape({1, 2, 3, 4, 5}), cn::ValueError);
  EXPECT_THROW(cn::Shape({-1}), cn::ValueError);
  EXPECT_THROW(cn::zeros<double>(cn::Shape{}), cn::ValueError);
  EXPECT_THROW(cn::arange<int>(0, 5, 0), cn::ValueError);
  EXPECT_THROW(cn::linspace<double>(0.0, 1.0, -1), cn::ValueError);
  const std::vector<double> three{1, 2, 3};
  EXPECT_THROW(cn::from_host<double>(three, cn::Shape{2, 2}), cn::ValueError);
}

TEST_P(ArrayOnBackend, HostAccessMatchesLocation) {
  auto a = cn::zeros<double>({3});
  if (GetParam() == cn::Backend::host) {
    a(1) = 4.0;
    EXPECT_EQ(a.host_span()[1], 4.0);
    EXPECT_THROW(a(3), cn::IndexError);
    EXPECT_THROW(a(0, 0), cn::ValueError);
    return;
  }
  EXPECT_TRUE(a.is_device());
  try {
    a(0) = 1.0;
    FAIL() << "host access to a device array must be refused";
  } catch (const cn::BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("host access to a device array (emulated, shape=(3,), dtype=float64)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("to_host"), std::string::npos) << what;
  }
  EXPECT_THROW((void)a.host_span(), cn::BackendError);
}

// The leading rows of an array: its memory, a shorter axis 0; copies into and out of it are
// the array's rows; more rows than the array has is a ValueError.
TEST_P(ArrayOnBackend, LeadingRowsShareTheArraysMemory) {
  const std::vector<double> twelve{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  auto a = cn::from_host<double>(twelve, cn::Shape{6, 2});
  const auto head = a.leading(4);
  EXPECT_EQ(head.shape(), (cn::Shape{4, 2}));
  EXPECT_EQ(head.data(), a.data());
  EXPECT_TRUE(head.shares_memory_with(a));
  EXPECT_EQ(head.backend(), a.backend());
  EXPECT_EQ(values(head), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  cn::copy(a.leading(2), cn::full<double>({2, 2}, -1.0));  // writes through the view
  EXPECT_EQ(values(a), (std::vector<double>{-1, -1, -1, -1, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(a.leading(0).size(), 0);
  EXPECT_EQ(a.leading(6).shape(), a.shape());
  try {
    (void)a.leading(7);
    FAIL() << "7 rows of 6";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("7 rows asked of an array of shape (6, 2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)a.leading(-1), cn::ValueError);
}

TEST_P(ArrayOnBackend, Inspection) {
  auto d = cn::zeros<double>({2});
  auto h = cn::zeros<float>({2}, cn::Backend::host);
  EXPECT_EQ(cn::get_array_backend(d), GetParam());
  EXPECT_TRUE(cn::is_host_array(h));
  EXPECT_FALSE(cn::is_device_array(h));
  EXPECT_EQ(cn::is_device_array(d), GetParam() != cn::Backend::host);
  EXPECT_TRUE(cn::same_backend());
  EXPECT_TRUE(cn::same_backend(d));
  EXPECT_EQ(cn::same_backend(d, h), GetParam() == cn::Backend::host);
  if (GetParam() == cn::Backend::host) {
    EXPECT_NO_THROW(cn::assert_same_backend(d, h));
  } else {
    try {
      cn::assert_same_backend(d, h, d);
      FAIL() << "expected TypeError";
    } catch (const cn::TypeError& e) {
      EXPECT_NE(std::string(e.what()).find("emulated, host, emulated"), std::string::npos)
          << e.what();
    }
  }
}

CUNUMPY_ON_HOST_AND_EMULATED(ArrayOnBackend);

TEST(EmulatedArena, DeviceMemoryIsItsOwnArenaAndIsReleased) {
  const std::size_t before = cn::detail::emulated_arena_allocations();
  const std::size_t bytes_before = cn::detail::emulated_arena_bytes();
  {
    auto d = cn::zeros<double>({1000}, cn::Backend::emulated);
    auto h = cn::zeros<double>({1000}, cn::Backend::host);
    EXPECT_TRUE(cn::detail::emulated_arena_contains(d.data()));
    EXPECT_TRUE(cn::detail::emulated_arena_contains(d.data() + 999));
    EXPECT_FALSE(cn::detail::emulated_arena_contains(h.data()));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(h.data()) % 64, 0u)
        << "host memory is 64-byte aligned";
    EXPECT_EQ(cn::detail::emulated_arena_allocations(), before + 1);
    EXPECT_EQ(cn::detail::emulated_arena_bytes(), bytes_before + 8000);
  }
  EXPECT_EQ(cn::detail::emulated_arena_allocations(), before);
  EXPECT_EQ(cn::detail::emulated_arena_bytes(), bytes_before);
}

TEST(DeviceTarget, NoDeviceOnHostIsAClearError) {
  if (cn::cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  auto host = cn::use_backend(cn::Backend::host);
  auto a = cn::zeros<double>({2});
  try {
    (void)cn::to_device(a);
    FAIL() << "expected BackendError";
  } catch (const cn::BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("to_device: no device backend is available"), std::string::npos) << what;
    EXPECT_NE(what.find("CUNUMPY_BACKEND=emulated"), std::string::npos) << what;
  }
  EXPECT_THROW(cn::zeros<double>({2}, cn::Backend::cuda), cn::BackendError);
}

// Sizes that do not fit: an error naming the shape, never a small allocation with a huge size().
TEST(Array, SizesThatOverflowAreErrors) {
  EXPECT_THROW((void)cn::empty<double>({(1LL << 61) + 1}, cn::Backend::host), cn::ValueError)
      << "2^61 + 1 doubles need more than 2^63 bytes";
  try {
    (void)cn::zeros<double>({1LL << 32, 1LL << 32}, cn::Backend::host);
    FAIL() << "expected ValueError";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(
        std::string(e.what()).find("(4294967296, 4294967296): the number of elements does not fit"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cn::Shape({1LL << 62, 4}), cn::ValueError);
  EXPECT_EQ(cn::Shape({1LL << 31, 1LL << 31}).size(), 1LL << 62) << "a count that fits is fine";
  EXPECT_THROW((void)cn::empty<char>({1LL << 62, 2}, cn::Backend::host), cn::ValueError);
}
