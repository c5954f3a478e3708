// Parity of the mini-app's kernel catalog: every kernel with a CUDA source against its host
// version, through cunumpy::testing (the CUDA kernels on the emulator here, on a GPU when one
// is present), on random particles of a 3D grid with TSC shapes.
#include <gtest/gtest.h>

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
cn::Array<double> on(cn::Backend b, const cn::Array<double>& host) {
  return b == cn::Backend::host ? host : cn::to_device(host);
}
cn::Array<double> uniform(std::uint64_t seed, std::uint64_t stream, long long n, double scale) {
  cn::Generator g(seed, stream, cn::Backend::host);
  return g.uniform(0.0, scale, {n});
}

cn::Array<double> zeros(cn::Backend b, long long n) {
  return on(b, cn::zeros<double>({n}, cn::Backend::host));
}

auto deposit_args(cn::Backend b, std::uint64_t seed) {
  const auto x = uniform(seed, 1, kN, kLx), y = uniform(seed, 2, kN, kLy),
             z = uniform(seed, 7, kN, kLz);
  return std::make_tuple(on(b, x), on(b, y), on(b, z), zeros(b, kNodes), 0LL, 0LL, 0LL, kGuard,
                         kRow, kCol, 2, 3, kNx / kLx, kNy / kLy, kNz / kLz, 0.01, kN);
}
auto gather_args(cn::Backend b, std::uint64_t seed) {
  const auto x = uniform(seed, 1, kN, kLx), y = uniform(seed, 2, kN, kLy),
             z = uniform(seed, 7, kN, kLz);
  const auto ex = uniform(seed, 3, kNodes, 1.0), ey = uniform(seed, 4, kNodes, 1.0),
             ez = uniform(seed, 8, kNodes, 1.0);
  return std::make_tuple(on(b, x), on(b, y), on(b, z), on(b, ex), on(b, ey), on(b, ez),
                         zeros(b, kN), zeros(b, kN), zeros(b, kN), 0LL, 0LL, 0LL, kGuard, kRow,
                         kCol, 2, 3, kNx / kLx, kNy / kLy, kNz / kLz, kN);
}
auto push_args(cn::Backend b, std::uint64_t seed) {
  const auto x = uniform(seed, 1, kN, kLx), y = uniform(seed, 2, kN, kLy),
             z = uniform(seed, 7, kN, kLz);
  const auto vx = uniform(seed, 5, kN, 1.0), vy = uniform(seed, 6, kN, 1.0),
             vz = uniform(seed, 9, kN, 1.0);
  const auto ex = uniform(seed, 3, kN, 1.0), ey = uniform(seed, 4, kN, 1.0),
             ez = uniform(seed, 8, kN, 1.0);
  return std::make_tuple(on(b, x), on(b, y), on(b, z), on(b, vx), on(b, vy), on(b, vz), on(b, ex),
                         on(b, ey), on(b, ez), zeros(b, kN), -0.1, 0.1, kLx, kLy, kLz, 1e-3, true,
                         3, kN);
}

std::vector<ct::ParityCase> cases() {
  cn::KernelCatalog& catalog = pic::kernel_catalog();
  const ct::AgreeOptions launch{.launch = cn::threads(kN), .rtol = 1e-12, .atol = 1e-15};
  // The deposit adds in another order on each side (private grids, atomics).
  const ct::AgreeOptions deposit{
      .launch = cn::threads(kN), .rtol = 1e-11, .atol = 1e-14, .outputs = {3}};
  return ct::parity_cases(
      catalog,
      {{"deposit",
        ct::parity_check<decltype(&pic::deposit_host)>(catalog, "deposit", deposit_args, deposit)},
       {"gather",
        ct::parity_check<decltype(&pic::gather_host)>(catalog, "gather", gather_args, launch)},
       {"push", ct::parity_check<decltype(&pic::push_host)>(catalog, "push", push_args, launch)}});
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
  EXPECT_EQ(catalog.summary(), "CUDA kernels: 3 of 3");
  EXPECT_NO_THROW(catalog.check_signatures());
  EXPECT_EQ(catalog.parity_cases(), (std::vector<std::string>{"deposit", "gather", "push"}));
}
