// The kernel emulator (CUNUMPY_BACKEND=emulated): CudaKernels compiled by the host compiler and
// run block by block, barriers met by every thread of a block, against host results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

#include "kernel_sources.hpp"
#include "on_backend.hpp"

namespace cn = cunumpy;
using namespace cunumpy_test;

namespace {

class Emulator : public cn::testing::OnEmulated {
 protected:
  void SetUp() override {
    if (std::system((cn::emulation_compiler() + " --version > /dev/null 2>&1").c_str()) != 0)
      GTEST_SKIP() << "no host compiler '" << cn::emulation_compiler() << "' for the emulator";
    cn::testing::OnEmulated::SetUp();
  }
};


}  // namespace

TEST_F(Emulator, BlockSumWithDynamicSharedMemory) {
  cn::CudaKernel block_sum(kBlockSum, "block_sum", {.block_size = 128});
  const long long n = 1000;
  const auto [total, first] = run_block_sum(block_sum, n);
  EXPECT_EQ(total, n * (n - 1) / 2.0);
  EXPECT_EQ(first, 127.0 * 128 / 2) << "block 0 summed 0..127";
}

TEST_F(Emulator, TiledStaticSharedMemoryAndAtomicsAcrossBlocks) {
  // Each block stages its tile in __shared__ memory, reverses it across the barrier, and
  // every thread adds its value into one histogram with atomicAdd (blocks on several threads).
  cn::CudaKernel tiled(R"(
    extern "C" __global__ void tiled(const int* in, int* out, unsigned long long* total, int n) {
      __shared__ int tile[64];
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      tile[threadIdx.x] = i < n ? in[i] : 0;
      __syncthreads();
      int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
      if (j < n) out[j] = tile[threadIdx.x];
      atomicAdd(total, (unsigned long long)(i < n ? in[i] : 0));
    })",
                       "tiled", {.block_size = 64});
  const int n = 64 * 37;
  auto in = cn::arange<int>(0, n, 1);
  auto out = cn::zeros<int>({n});
  auto total = cn::zeros<unsigned long long>({1});
  tiled(cn::threads(n), in, out, total, n);
  const auto h = cn::to_host(out);
  for (int b = 0; b < 37; ++b)
    for (int t = 0; t < 64; ++t) ASSERT_EQ(h(b * 64 + t), b * 64 + (63 - t)) << b << " " << t;
  EXPECT_EQ(cn::to_host(total)(0), static_cast<unsigned long long>(n) * (n - 1) / 2);
}

TEST_F(Emulator, ScaleColumnTemplatesAndStructs) {
  cn::CudaKernel scale_column(kScaleColumn, "scale_column");
  auto m = cn::from_host<double>(std::vector<double>(60, 1.0), {10, 6});
  const auto view = cn::strided<2>(m, {cn::Slice{0, 10, 2}, cn::Slice{1, 5}});
  scale_column(cn::threads(view.view.shape[0]), view, 1LL, 10.0);
  const auto hm = cn::to_host(m);
  for (long long i = 0; i < 10; ++i)
    for (long long j = 0; j < 6; ++j)
      EXPECT_EQ(hm(i, j), (i % 2 == 0 && j == 2) ? 10.0 : 1.0) << i << ", " << j;

  cn::CudaKernel scale(kScale, "scale", {.template_args = {cn::DType::float64, 3}});
  auto x = cn::ones<double>({257});
  scale(cn::threads(257), x, 2.0, 257);
  EXPECT_EQ(cn::to_host(x)(256), 6.0);

  const auto& particles = cn::cuda_struct<Particles>();
  cn::CudaKernel push(particles.declaration() + kPush, "push", {.structs = {&particles}});
  auto px = cn::zeros<double>({100});
  auto pv = cn::arange<double>(0.0, 100.0, 1.0);
  push(cn::threads(100), cn::struct_value<Particles>(px, pv, 100, -1.0), 0.1);
  EXPECT_DOUBLE_EQ(cn::to_host(px)(50), -5.0);
  EXPECT_TRUE(particles.verify_layout().empty()) << "verify_layout runs on the emulated device";
}

TEST_F(Emulator, ADivergentBarrierIsReportedNotHung) {
  cn::CudaKernel divergent(R"(
    extern "C" __global__ void divergent(double* x) {
      if (threadIdx.x >= 32) return;   // half the block leaves
      __syncthreads();                 // the other half waits here forever on a GPU
      x[threadIdx.x] = 1.0;
    })",
                           "divergent", {.block_size = 64});
  auto x = cn::zeros<double>({64});
  const std::string what = message_of([&] { divergent(cn::threads(64), x); });
  EXPECT_NE(
      what.find("a barrier that not every thread of block (0, 0, 0) reaches: threads 0-31 wait at "
                "__syncthreads(), threads 32-63 returned without reaching it"),
      std::string::npos)
      << what;
  std::printf("%s\n", what.c_str());
}

TEST_F(Emulator, TrapsBoundsChecksAndCompileErrorsReachTheCaller) {
  cn::CudaKernel trap(
      R"(extern "C" __global__ void trap(int* x) { if (threadIdx.x == 3) __trap(); })", "trap");
  auto x = cn::zeros<int>({8});
  EXPECT_NE(
      message_of([&] { trap(cn::threads(8), x); }).find("CUDA kernel trapped: __trap() called"),
      std::string::npos);
  cn::CudaKernel bounds(R"(
    #include <cunumpy/array_view.cuh>
    extern "C" __global__ void bounds(Array1D<double> a) { a(threadIdx.x + 5) = 1.0; })",
                        "bounds", {.options = {"-DCUNUMPY_BOUNDS_CHECK"}});
  auto a = cn::zeros<double>({8});
  EXPECT_NE(message_of([&] {
              bounds(cn::threads(8), a);
            }).find("index 8 is out of bounds for axis 0 with size 8"),
            std::string::npos);
  cn::CudaKernel broken(R"(extern "C" __global__ void broken(double* x) { x[0] = nowhere; })",
                        "broken");
  const std::string what = message_of([&] { broken(cn::threads(1), a); });
  EXPECT_NE(what.find("the emulator's compiler"), std::string::npos) << what;
  EXPECT_NE(what.find("nowhere"), std::string::npos) << what;
}
