// CudaKernel on a GPU: the spec's examples launched and compared with host results, and the
// struct layouts checked by the CUDA compiler.  Compiled by nvcc: the layout check of the
// structs runs in both of nvcc's passes at compile time, with or without a GPU; the launches
// skip with the reason when there is no GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>
#include <cunumpy/testing.hpp>

#include "kernel_sources.hpp"

namespace cn = cunumpy;
using namespace cunumpy_test;

// The layouts the host computes (test_cuda_kernel checks these numbers against the
// descriptors) hold in nvcc's device pass too: the host and the device agree.
#define CHECK_LAYOUT()                                                              \
  static_assert(sizeof(Particles) == 32 && alignof(Particles) == 8);                \
  static_assert(offsetof(Particles, x) == 0 && offsetof(Particles, v) == 8);        \
  static_assert(offsetof(Particles, n) == 16 && offsetof(Particles, charge) == 24); \
  static_assert(sizeof(MarkerArgs) == 56 && alignof(MarkerArgs) == 8);              \
  static_assert(offsetof(MarkerArgs, n_markers) == 40 && offsetof(MarkerArgs, valid) == 48)
CHECK_LAYOUT();
__global__ void layout_in_the_device_pass() {
  CHECK_LAYOUT();
}

namespace {

using OnGpu = cn::testing::OnCuda;

}  // namespace

TEST(Layout, DescriptorsMatchTheNumbersNvccChecks) {
  const auto& p = cn::cuda_struct<Particles>();
  EXPECT_EQ(p.size(), 32u);
  EXPECT_EQ(p.fields()[2].offset, 16u);
  const auto& m = cn::cuda_struct<MarkerArgs>();
  EXPECT_EQ(m.size(), 56u);
  EXPECT_EQ(m.fields()[2].offset, 48u);
}

TEST_F(OnGpu, BlockSum) {
  cn::CudaKernel block_sum(kBlockSum, "block_sum", {.block_size = 128});
  const long long n = 1000;
  EXPECT_EQ(run_block_sum(block_sum, n).first, n * (n - 1) / 2.0);
}

TEST_F(OnGpu, ScaleColumnOnAStridedView) {
  cn::CudaKernel scale_column(kScaleColumn, "scale_column");
  auto markers = cn::arange<double>(0.0, 60.0, 1.0, cn::Backend::host);
  auto m = cn::to_device(markers);
  auto m2 = cn::Array<double>::adopt(m.memory(), {10, 6});
  const auto view = cn::strided<2>(m2, {cn::Slice{0, 10, 2}, cn::Slice{1, 5}});
  scale_column(cn::threads(view.view.shape[0]), view, 1LL, 10.0);
  const auto h = cn::to_host(m2);
  for (long long i = 0; i < 10; ++i)
    for (long long j = 0; j < 6; ++j) {
      const double base = static_cast<double>(6 * i + j);
      EXPECT_EQ(h(i, j), (i % 2 == 0 && j == 2) ? 10.0 * base : base) << i << ", " << j;
    }
}

TEST_F(OnGpu, TemplateInstantiation) {
  cn::CudaKernel scale(kScale, "scale", {.template_args = {cn::DType::float64, 3}});
  auto x = cn::ones<double>({257});
  scale(cn::threads(257), x, 2.0, 257);
  const auto h = cn::to_host(x);
  EXPECT_EQ(h(0), 6.0);
  EXPECT_EQ(h(256), 6.0);
}

TEST_F(OnGpu, StructPushAndLayout) {
  const auto& particles = cn::cuda_struct<Particles>();
  cn::CudaKernel push(particles.declaration() + kPush, "push", {.structs = {&particles}});
  auto x = cn::zeros<double>({100});
  auto v = cn::arange<double>(0.0, 100.0, 1.0);
  push(cn::threads(100), cn::struct_value<Particles>(x, v, 100, -1.0), 0.1);
  const auto h = cn::to_host(x);
  EXPECT_DOUBLE_EQ(h(50), -5.0);
  EXPECT_TRUE(particles.verify_layout().empty());
  EXPECT_TRUE(cn::cuda_struct<MarkerArgs>().verify_layout().empty());
}

TEST_F(OnGpu, StructArgumentsOfAnySizeArriveWhole) {
  const auto bad = struct_argument_mismatches();
  for (const auto& b : bad) ADD_FAILURE() << b;
}

TEST_F(OnGpu, DebugModeSynchronisesAndNamesTheKernel) {
  auto scope = cn::cuda_debug();
  cn::CudaKernel fill(R"(extern "C" __global__ void fill(double* x, double v, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] = v; })",
                      "fill");
  auto x = cn::zeros<double>({10});
  fill(cn::threads(10), x, 4.0, 10LL);  // synchronised: the result is there
  EXPECT_EQ(cn::to_host(x)(9), 4.0);
  const auto opts = fill.compile_options();
  EXPECT_NE(std::find(opts.begin(), opts.end(), "-lineinfo"), opts.end());
  cn::Launch too_big = cn::threads(10);
  too_big.block = cn::Dim3(1024);
  too_big.shared_mem = static_cast<std::size_t>(cn::max_shared_memory_per_block(true));
  EXPECT_NO_THROW(fill(too_big, x, 1.0, 10LL)) << "the kernel's shared memory limit is raised once";
}

// Module-scope data on the GPU: set and read through the NVRTC module's globals.
TEST_F(OnGpu, ModuleScopeConstantAndDeviceData) {
  cn::CudaKernel poly(kModuleData, "poly", {.block_size = 32});
  EXPECT_EQ(poly.global_bytes("coef", cn::Backend::cuda), 3 * sizeof(double));
  EXPECT_EQ((poly.get_global<std::array<double, 4>>("table")),
            (std::array<double, 4>{1.0, 2.0, 3.0, 4.0}));
  const std::vector<std::string> bad = module_data_mismatches(poly, {1.0, 2.0, 3.0});
  EXPECT_TRUE(bad.empty()) << bad.front();
  EXPECT_THROW((void)poly.get_global<int>("missing"), cn::ValueError);
}

// A module on the GPU: one NVRTC program, its kernels launched from it, its data shared.
TEST_F(OnGpu, ModuleKernelsShareOneImageAndItsData) {
  cn::CudaModule m(kModule, {"fill", {"times", {"double", 3}}, "block_total"}, {.block_size = 64});
  const std::vector<std::string> bad = module_mismatches(m);
  EXPECT_TRUE(bad.empty()) << bad.front();
  EXPECT_EQ(&m.kernel("fill").cubin(), &m.kernel("block_total").cubin());
}

// The last handle on a kernel goes while its launches are still queued behind a long one:
// its library is unloaded only after they ran (unloading it under them is undefined
// behaviour), and they compute what they should.
TEST_F(OnGpu, AKernelDestroyedWithLaunchesInFlightLetsThemFinish) {
  cn::Stream stream(cn::Backend::cuda);
  auto x = cn::zeros<double>({1 << 20});
  {
    cn::CudaKernel spin(R"(
      extern "C" __global__ void spin_then_add(double* x, long long n, long long rounds) {
        const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i >= n) return;
        double v = x[i];
        for (long long r = 0; r < rounds; ++r) v = v * 0.5 + 1.0;  // converges to 2
        x[i] = v + 1.0;
      })",
                        "spin_then_add", {.debug = false});
    for (int k = 0; k < 4; ++k)
      spin(cn::Launch{.n_threads = x.size(), .stream = stream.ref()}, x, x.size(), 200000LL);
  }  // the kernel and its program are gone here; the launches may not be
  stream.synchronize();
  const auto h = cn::to_host(x);
  EXPECT_DOUBLE_EQ(h(0), 3.0);
  EXPECT_DOUBLE_EQ(h(x.size() - 1), 3.0);
}

// A kernel that faults, launched without debug mode: the error surfaces at the synchronize,
// whose message names the kernel among the most recent launches (in a child process: the
// context is lost after it).
TEST_F(OnGpu, AFaultingKernelIsNamedAtALaterSynchronize) {
  cn::CudaKernel fault(
      R"(extern "C" __global__ void fault_here(int* x) { if (threadIdx.x == 0) __trap(); })",
      "fault_here", {.debug = false});
  fault.compile();
  auto x = cn::zeros<int>({1});
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        fault(cn::threads(1), x);
        cn::synchronize();
      },
      "most recent kernel launches, newest first: 'fault_here' with grid \\(1, 1, 1\\)");
}

// A launch the device refuses (70000 blocks along y, above CUDA's 65535) is a CudaError naming
// the kernel, its grid and block, outside debug mode too; the context stays usable.
TEST_F(OnGpu, ARefusedLaunchNamesTheKernel) {
  cn::CudaKernel noop(R"(extern "C" __global__ void noop_here() {})", "noop_here",
                      {.debug = false});
  cn::Launch refused;
  refused.grid = cn::Dim3(1, 70000);
  refused.block = cn::Dim3(32);
  const std::string what = message_of([&] { noop(refused); });
  EXPECT_NE(what.find("CUDA error launching kernel 'noop_here' with grid (1, 70000, 1) and "
                      "block (32, 1, 1)"),
            std::string::npos)
      << what;
  EXPECT_NO_THROW(noop(cn::threads(1)));
  EXPECT_NO_THROW(cn::synchronize());
}
