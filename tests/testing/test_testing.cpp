// The testing helpers for applications (cunumpy::testing): the backends and their fixture,
// kernels_agree (parity of a host kernel and its CUDA twin, on the emulator without a GPU),
// device_function_kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include <cunumpy/testing.hpp>

#include "kernel_sources.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
using cunumpy_test::have_host_compiler;
namespace ct = cunumpy::testing;

namespace {

// axpy's host twin and its arguments: the same values on both sides, from the seed.
void axpy_host(double a, const cn::Array<double>& x, const cn::Array<double>& y, long long n) {
  for (long long i = 0; i < n; ++i) y(i) = a * x(i) + y(i);
}
auto make_axpy_args(cn::Backend backend, std::uint64_t seed) {
  const long long n = 1000;
  cn::Generator g(seed, 0, cn::Backend::host);
  auto x = g.random({n});
  auto y = g.standard_normal({n});
  if (backend != cn::Backend::host)
    return std::make_tuple(2.5, cn::to_device(x), cn::to_device(y), n);
  return std::make_tuple(2.5, x, y, n);
}

// A B-spline-like device helper: the knot span of eta, written once for host and device.
const char* kSpans = R"(
#ifndef CUNUMPY_HD
#define CUNUMPY_HD __host__ __device__
#endif
CUNUMPY_HD inline int find_span(const double* t, int p, double eta) {
  int low = p, high = 8 - p - 1;  // 8 knots
  if (eta >= t[high]) return high - 1;
  while (eta >= t[low + 1]) ++low;
  return low;
}
)";
int find_span_host(const double* t, int p, double eta) {
  int low = p, high = 8 - p - 1;
  if (eta >= t[high]) return high - 1;
  while (eta >= t[low + 1]) ++low;
  return low;
}

}  // namespace

TEST(Backends, HostAndEmulatedAlwaysCudaWithAGpu) {
  const auto b = ct::backends();
  EXPECT_EQ(b[0], cn::Backend::host);
  EXPECT_EQ(b[1], cn::Backend::emulated);
  EXPECT_EQ(std::count(b.begin(), b.end(), cn::Backend::cuda), cn::cuda_available() ? 1 : 0);
  EXPECT_EQ(ct::parity_backend(), cn::cuda_available() ? cn::Backend::cuda : cn::Backend::emulated);
}

class EveryBackend : public ct::OnBackend {};
TEST_P(EveryBackend, TheParameterIsActive) {
  EXPECT_EQ(cn::get_backend(), GetParam());
  auto x = cn::ones<double>({4});
  EXPECT_EQ(x.backend(), GetParam());
}
CUNUMPY_INSTANTIATE_ON_BACKENDS(EveryBackend);

TEST(RequireGpu, SkipsWithTheReason) {
  if (cn::cuda_available()) GTEST_SKIP() << "a GPU is present: nothing to show";
  bool reached = false;
  [&] {
    CUNUMPY_REQUIRE_GPU();
    reached = true;
  }();
  EXPECT_FALSE(reached) << "CUNUMPY_REQUIRE_GPU returns from the test body without a GPU";
  ::testing::Test::RecordProperty("skipped_for", cn::cuda_unavailable_reason());
}

TEST(KernelsAgree, AHostKernelAndItsCudaTwinAgree) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  cn::CudaKernel axpy(cunumpy_test::kAxpy, "axpy");
  EXPECT_TRUE(ct::kernels_agree(axpy_host, axpy, make_axpy_args, {.launch = cn::threads(1000)}));
  EXPECT_TRUE(ct::kernels_agree(axpy_host, axpy, make_axpy_args,
                                {.launch = cn::threads(1000), .n_calls = 3, .seed = 7}));
  ct::assert_kernels_agree(axpy_host, axpy, make_axpy_args, {.launch = cn::threads(1000)});
}

// The default tolerance holds where the device fuses a * b + c into one rounding and the host
// does not (a GPU's default, and the emulator's on a CPU with FMA), for double and float; an
// exact comparison shows the two sides do round differently, and --fmad=false on the CUDA side
// is the pair that agrees bit for bit with the host.
TEST(KernelsAgree, TheDefaultToleranceHoldsWhereTheDeviceFusesMultiplyAdd) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "this CPU has no FMA instructions";
#endif
  auto check = [](auto zero, const char* type) {
    using T = decltype(zero);
    const std::string t = type;
    const std::string source = "extern \"C\" __global__ void madd(const " + t + "* a, const " + t +
                               "* b, " + t +
                               "* y, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "  if (i < n) y[i] = a[i] * b[i] + y[i] * a[i] + b[i];\n}\n";
    auto host = [](const cn::Array<T>& a, const cn::Array<T>& b, const cn::Array<T>& y, int n) {
      for (int i = 0; i < n; ++i) y(i) = a(i) * b(i) + y(i) * a(i) + b(i);
    };
    auto args = [](cn::Backend backend, std::uint64_t seed) {
      const int n = 4096;
      cn::Generator g(seed, 0, cn::Backend::host);
      auto normal = [&] {
        const auto d = g.standard_normal({n});
        std::vector<T> v(n);
        for (int i = 0; i < n; ++i) v[i] = static_cast<T>(d(i));
        return cn::from_host<T>(v, {n}, cn::Backend::host);
      };
      auto a = normal(), b = normal(), y = normal();
      if (backend != cn::Backend::host)
        return std::make_tuple(cn::to_device(a), cn::to_device(b), cn::to_device(y), n);
      return std::make_tuple(a, b, y, n);
    };
    cn::CudaKernel fused(source, "madd"), unfused(source, "madd", {.options = {"--fmad=false"}});
    EXPECT_TRUE(ct::kernels_agree(host, fused, args, {.launch = cn::threads(4096)})) << t;
    if (!cn::emulated_kernels_sanitized()) {  // (GCC contracts nothing under AddressSanitizer)
      EXPECT_FALSE(ct::kernels_agree(host, fused, args,
                                     {.launch = cn::threads(4096), .rtol = 0.0, .outputs = {2}}))
          << t << ": no element rounded differently";
    }
    EXPECT_TRUE(ct::kernels_agree(host, unfused, args,
                                  {.launch = cn::threads(4096), .rtol = 0.0, .outputs = {2}}))
        << t;
  };
  check(0.0, "double");
  check(0.0f, "float");
}

TEST(KernelsAgree, AWrongKernelFailsNamingTheArgument) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  cn::CudaKernel wrong(R"(
    extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i] + (i == 17 ? 1e-6 : 0.0);   // planted error
    })",
                       "axpy");
  const auto r = ct::kernels_agree(axpy_host, wrong, make_axpy_args,
                                   {.launch = cn::threads(1000), .names = {"a", "x", "y", "n"}});
  ASSERT_FALSE(r);
  const std::string m = r.message();
  std::printf("%s\n", m.c_str());
  EXPECT_NE(m.find("disagree on argument 2 ('y'): 1 of 1000 elements differ beyond rtol=1e-12"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("first at index (17,)"), std::string::npos) << m;
  // Within a tolerance it agrees; comparing only x (outputs = {1}) it agrees.
  EXPECT_TRUE(ct::kernels_agree(axpy_host, wrong, make_axpy_args,
                                {.launch = cn::threads(1000), .atol = 1e-5}));
  EXPECT_TRUE(ct::kernels_agree(axpy_host, wrong, make_axpy_args,
                                {.launch = cn::threads(1000), .outputs = {1}}));
  EXPECT_FALSE(ct::kernels_agree(axpy_host, wrong, make_axpy_args,
                                 {.launch = cn::threads(1000), .outputs = {-2}}));
  const auto bad = ct::kernels_agree(axpy_host, wrong, make_axpy_args, {.outputs = {4}});
  EXPECT_NE(std::string(bad.message()).find("output index 4 does not exist among 4 arguments"),
            std::string::npos);
  const auto none = ct::kernels_agree(axpy_host, wrong, make_axpy_args,
                                      {.launch = cn::threads(1000), .outputs = {0}});
  EXPECT_NE(std::string(none.message()).find("no array among the compared arguments"),
            std::string::npos);
}

TEST(DeviceFunctionKernel, TheGeneratedKernelAndItsSource) {
  const std::string src =
      cn::device_function_source(kSpans, "int find_span(const double* t, int p, double eta)");
  EXPECT_NE(src.find("extern \"C\" __global__ void find_span_kernel(const double* t, const int* p, "
                     "const double* eta, int* out, int n)"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("out[cunumpy_i] = find_span(t, p[cunumpy_i], eta[cunumpy_i]);"),
            std::string::npos)
      << src;
  const std::string renamed = cn::device_function_source(
      "__device__ void touch(double* x) { x[0] = 1; }", "void touch(double* x)",
      {.name = "touch_all", .includes = {"a.cuh", "<b.cuh>"}, .n_param = "count"});
  EXPECT_NE(renamed.find("#include \"a.cuh\"\n#include <b.cuh>\n"), std::string::npos) << renamed;
  EXPECT_NE(renamed.find("void touch_all(double* x, int count)"), std::string::npos) << renamed;
  EXPECT_NE(renamed.find("  touch(x);"), std::string::npos) << renamed;
}

TEST(DeviceFunctionKernel, TheSpecsErrors) {
  auto message = [](const char* signature) {
    try {
      (void)cn::device_function_source("", signature);
    } catch (const cn::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("double* row(int i)").find("returns double*"), std::string::npos);
  EXPECT_NE(message("Particle get(int i)").find("returns Particle"), std::string::npos);
  EXPECT_NE(message("int f(double out)").find("parameter named 'out'"), std::string::npos);
  EXPECT_NE(message("int f(int n)").find("parameter named 'n'"), std::string::npos);
  EXPECT_NE(message("int f(double& x)").find("device_function_kernel"), std::string::npos)
      << message("int f(double& x)");
  EXPECT_NE(message("find_span").find("is not a C prototype"), std::string::npos);
  EXPECT_EQ(message("int f(double out)").find("rename"),
            message("int f(double out)").find("rename"));
}

TEST(DeviceFunctionKernel, RunsOnTheEmulatorAndAgreesWithTheHostFunction) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  auto spans =
      cn::device_function_kernel(kSpans, "int find_span(const double* t, int p, double eta)");
  const std::vector<double> knots = {0, 0, 0, 0.25, 0.5, 1, 1, 1};
  auto make = [&](cn::Backend backend, std::uint64_t seed) {
    const long long n = 500;
    cn::Generator g(seed, 1, cn::Backend::host);
    auto eta = g.random({n});
    auto p = cn::full<int>({n}, 2, cn::Backend::host);
    auto t = cn::from_host<double>(knots, {8}, cn::Backend::host);
    auto out = cn::zeros<int>({n}, cn::Backend::host);
    if (backend == cn::Backend::host) return std::make_tuple(t, p, eta, out, static_cast<int>(n));
    return std::make_tuple(cn::to_device(t), cn::to_device(p), cn::to_device(eta),
                           cn::to_device(out), static_cast<int>(n));
  };
  auto host = [](const cn::Array<double>& t, const cn::Array<int>& p, const cn::Array<double>& eta,
                 const cn::Array<int>& out, int n) {
    for (int i = 0; i < n; ++i) out(i) = find_span_host(t.data(), p(i), eta(i));
  };
  EXPECT_TRUE(ct::kernels_agree(host, spans, make, {.launch = cn::threads(500), .outputs = {3}}));
  // And the values are the spans: eta in [0.25, 0.5) is in span 3.
  cn::set_backend(cn::Backend::emulated);
  auto [t, p, eta, out, n] = make(cn::Backend::emulated, 0);
  spans(cn::threads(n), t, p, eta, out, n);
  const auto he = cn::to_host(eta);
  const auto ho = cn::to_host(out);
  cn::set_backend(cn::Backend::host);
  for (int i = 0; i < n; ++i) {
    const int expect = he(i) < 0.25 ? 2 : he(i) < 0.5 ? 3 : 4;
    ASSERT_EQ(ho(i), expect) << "eta " << he(i);
  }
}
