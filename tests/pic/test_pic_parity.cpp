// Parity of the mini-app's kernel catalog: every kernel with a CUDA source against its host
// version, through cunumpy::testing (the CUDA kernels on the emulator here, on a GPU when one
// is present), on random particles of a 3D grid with TSC shapes, double and float particles and
// mixed precision's cells and offsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cunumpy/testing.hpp>

#include "pic_catalog.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
namespace ct = cunumpy::testing;

namespace {

constexpr long long kN = 4000, kNx = 16, kNy = 12, kNz = 8;
constexpr double kLx = 10.0, kLy = 7.5, kLz = 5.0;
// The whole box as a guarded local grid (grid.hpp): TSC's guard, 3 nodes on each side.
constexpr long long kGuard = 3, kCol = kNz + 2 * kGuard, kRow = (kNy + 2 * kGuard) * kCol,
                    kNodes = (kNx + 2 * kGuard) * kRow;

// The same values on both sides: drawn on the host from the seed, then moved.
template <typename T>
cn::Array<T> on(cn::Backend b, const cn::Array<T>& host) {
  return b == cn::Backend::host ? host : cn::to_device(host);
}
// Particle coordinates in the precision R (float: the doubles rounded).
template <typename R>
cn::Array<R> as(const cn::Array<double>& a) {
  if constexpr (std::is_same_v<R, double>) {
    return a;
  } else {
    auto out = cn::empty<R>({a.size()}, cn::Backend::host);
    for (long long i = 0; i < a.size(); ++i) out.host_span()[i] = static_cast<R>(a.host_span()[i]);
    return out;
  }
}
cn::Array<double> uniform(std::uint64_t seed, std::uint64_t stream, long long n, double scale) {
  cn::Generator g(seed, stream, cn::Backend::host);
  return g.uniform(0.0, scale, {n});
}

cn::Array<double> zeros(cn::Backend b, long long n) {
  return on(b, cn::zeros<double>({n}, cn::Backend::host));
}

// R: the particles' precision (double: deposit, gather, push; float: their *_single kernels).
template <typename R>
auto deposit_args(cn::Backend b, std::uint64_t seed) {
  const auto x = as<R>(uniform(seed, 1, kN, kLx)), y = as<R>(uniform(seed, 2, kN, kLy)),
             z = as<R>(uniform(seed, 7, kN, kLz));
  return std::make_tuple(on(b, x), on(b, y), on(b, z), zeros(b, kNodes), 0LL, 0LL, 0LL, kGuard,
                         kRow, kCol, 2, 3, kNx / kLx, kNy / kLy, kNz / kLz, 0.01, kN);
}
template <typename R>
auto gather_args(cn::Backend b, std::uint64_t seed) {
  const auto x = as<R>(uniform(seed, 1, kN, kLx)), y = as<R>(uniform(seed, 2, kN, kLy)),
             z = as<R>(uniform(seed, 7, kN, kLz));
  const auto ex = uniform(seed, 3, kNodes, 1.0), ey = uniform(seed, 4, kNodes, 1.0),
             ez = uniform(seed, 8, kNodes, 1.0);
  return std::make_tuple(on(b, x), on(b, y), on(b, z), on(b, ex), on(b, ey), on(b, ez),
                         zeros(b, kN), zeros(b, kN), zeros(b, kN), 0LL, 0LL, 0LL, kGuard, kRow,
                         kCol, 2, 3, kNx / kLx, kNy / kLy, kNz / kLz, kN);
}
template <typename R>
auto push_args(cn::Backend b, std::uint64_t seed) {
  const auto x = as<R>(uniform(seed, 1, kN, kLx)), y = as<R>(uniform(seed, 2, kN, kLy)),
             z = as<R>(uniform(seed, 7, kN, kLz));
  const auto vx = as<R>(uniform(seed, 5, kN, 1.0)), vy = as<R>(uniform(seed, 6, kN, 1.0)),
             vz = as<R>(uniform(seed, 9, kN, 1.0));
  const auto ex = uniform(seed, 3, kN, 1.0), ey = uniform(seed, 4, kN, 1.0),
             ez = uniform(seed, 8, kN, 1.0);
  return std::make_tuple(on(b, x), on(b, y), on(b, z), on(b, vx), on(b, vy), on(b, vz), on(b, ex),
                         on(b, ey), on(b, ez), zeros(b, kN), -0.1, 0.1, kLx, kLy, kLz, 1e-3, true,
                         3, kN);
}

// Mixed precision: float offsets in [0, 1) and int32 cells in [0, cells) per axis.
cn::Array<float> offsets(std::uint64_t seed, std::uint64_t stream) {
  auto out = as<float>(uniform(seed, stream, kN, 1.0));
  for (auto& v : out.host_span()) v = std::min(v, 0.99999994f);
  return out;
}
cn::Array<std::int32_t> cells(std::uint64_t seed, std::uint64_t stream, long long count) {
  const auto u = uniform(seed, stream, kN, static_cast<double>(count));
  auto out = cn::empty<std::int32_t>({kN}, cn::Backend::host);
  for (long long i = 0; i < kN; ++i)
    out.host_span()[i] = static_cast<std::int32_t>(u.host_span()[i]);
  return out;
}
auto deposit_mixed_args(cn::Backend b, std::uint64_t seed) {
  return std::make_tuple(on(b, offsets(seed, 1)), on(b, offsets(seed, 2)), on(b, offsets(seed, 7)),
                         on(b, cells(seed, 11, kNx)), on(b, cells(seed, 12, kNy)),
                         on(b, cells(seed, 13, kNz)), zeros(b, kNodes), 0LL, 0LL, 0LL, kGuard, kRow,
                         kCol, 2, 3, 0.01, kN);
}
auto gather_mixed_args(cn::Backend b, std::uint64_t seed) {
  const auto ex = uniform(seed, 3, kNodes, 1.0), ey = uniform(seed, 4, kNodes, 1.0),
             ez = uniform(seed, 8, kNodes, 1.0);
  return std::make_tuple(on(b, offsets(seed, 1)), on(b, offsets(seed, 2)), on(b, offsets(seed, 7)),
                         on(b, cells(seed, 11, kNx)), on(b, cells(seed, 12, kNy)),
                         on(b, cells(seed, 13, kNz)), on(b, ex), on(b, ey), on(b, ez), zeros(b, kN),
                         zeros(b, kN), zeros(b, kN), 0LL, 0LL, 0LL, kGuard, kRow, kCol, 2, 3, kN);
}
// Velocities up to 20 cells a step: moves across cells and around the box.
auto push_mixed_args(cn::Backend b, std::uint64_t seed) {
  const auto vx = as<float>(uniform(seed, 5, kN, 1.0)), vy = as<float>(uniform(seed, 6, kN, 1.0)),
             vz = as<float>(uniform(seed, 9, kN, 1.0));
  const auto ex = uniform(seed, 3, kN, 1.0), ey = uniform(seed, 4, kN, 1.0),
             ez = uniform(seed, 8, kN, 1.0);
  return std::make_tuple(on(b, offsets(seed, 1)), on(b, offsets(seed, 2)), on(b, offsets(seed, 7)),
                         on(b, cells(seed, 11, kNx)), on(b, cells(seed, 12, kNy)),
                         on(b, cells(seed, 13, kNz)), on(b, vx), on(b, vy), on(b, vz), on(b, ex),
                         on(b, ey), on(b, ez), zeros(b, kN), -0.1, 20.0, 20.0, 20.0,
                         static_cast<double>(kNx), static_cast<double>(kNy),
                         static_cast<double>(kNz), 1e-3, true, 3, kN);
}

std::vector<ct::ParityCase> cases() {
  cn::KernelCatalog& catalog = pic::kernel_catalog();
  const ct::AgreeOptions launch{.launch = cn::threads(kN), .rtol = 1e-12, .atol = 1e-15};
  // The deposit adds in another order on each side (private grids, atomics).
  const ct::AgreeOptions deposit{
      .launch = cn::threads(kN), .rtol = 1e-11, .atol = 1e-14, .outputs = {3}};
  ct::AgreeOptions mixed_deposit = deposit;  // ne after the three cell columns
  mixed_deposit.outputs = {6};
  // Float particles: the same arithmetic on both sides, each stored value rounded once (the
  // same tolerances as double's).
  return ct::parity_cases(
      catalog, {{"deposit", ct::parity_check<decltype(&pic::deposit_host<double>)>(
                                catalog, "deposit", deposit_args<double>, deposit)},
                {"gather", ct::parity_check<decltype(&pic::gather_host<double>)>(
                               catalog, "gather", gather_args<double>, launch)},
                {"push", ct::parity_check<decltype(&pic::push_host<double>)>(
                             catalog, "push", push_args<double>, launch)},
                {"deposit_single", ct::parity_check<decltype(&pic::deposit_host<float>)>(
                                       catalog, "deposit_single", deposit_args<float>, deposit)},
                {"gather_single", ct::parity_check<decltype(&pic::gather_host<float>)>(
                                      catalog, "gather_single", gather_args<float>, launch)},
                {"push_single", ct::parity_check<decltype(&pic::push_host<float>)>(
                                    catalog, "push_single", push_args<float>, launch)},
                {"deposit_mixed", ct::parity_check<decltype(&pic::deposit_mixed_host)>(
                                      catalog, "deposit_mixed", deposit_mixed_args, mixed_deposit)},
                {"gather_mixed", ct::parity_check<decltype(&pic::gather_mixed_host)>(
                                     catalog, "gather_mixed", gather_mixed_args, launch)},
                {"push_mixed", ct::parity_check<decltype(&pic::push_mixed_host)>(
                                   catalog, "push_mixed", push_mixed_args, launch)}});
}

class Parity : public ::testing::TestWithParam<ct::ParityCase> {};

}  // namespace

TEST_P(Parity, HostAndCudaKernelsAgree) {
  if (!cunumpy_test::have_host_compiler() && !cn::cuda_available())
    GTEST_SKIP() << "neither a GPU nor a host compiler for the emulator";
  std::printf("kernel %s on %s\n", GetParam().name.c_str(),
              cn::to_string(ct::parity_backend()).data());
  CUNUMPY_EXPECT_PARITY(GetParam());
}
INSTANTIATE_TEST_SUITE_P(PicCatalog, Parity, ::testing::ValuesIn(cases()), ct::parity_case_name);

TEST(PicCatalog, EveryKernelIsPortedAndItsSignaturesAgree) {
  cn::KernelCatalog& catalog = pic::kernel_catalog();
  EXPECT_EQ(catalog.summary(), "CUDA kernels: 9 of 9");
  EXPECT_NO_THROW(catalog.check_signatures());
  EXPECT_EQ(catalog.parity_cases(),
            (std::vector<std::string>{"deposit", "deposit_mixed", "deposit_single", "gather",
                                      "gather_mixed", "gather_single", "push", "push_mixed",
                                      "push_single"}));
}

// NVRTC compiles every CUDA source of the catalog (what a GPU run does at setup), with no GPU
// needed: a source that does not compile fails here, not on the first GPU machine.
TEST(PicCatalog, EveryCudaSourceCompilesWithNvrtc) {
  if (!cunumpy_test::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  EXPECT_EQ(pic::kernel_catalog().compile_all(2).size(), 9u);
}
