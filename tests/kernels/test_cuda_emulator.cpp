// The kernel emulator (CUNUMPY_BACKEND=emulated): CudaKernels compiled by the host compiler and
// run block by block, barriers met by every thread of a block, against host results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include <cunumpy/atomic_counter.hpp>
#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

#include "kernel_sources.hpp"
#include "on_backend.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
using namespace cunumpy_test;

namespace {

class Emulator : public OnEmulatedWithCompiler {};

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

TEST_F(Emulator, AtomicCountersTellGlobalFromSharedMemory) {
  // Per thread: an atomicAdd into a __shared__ histogram and an atomicMax into dynamic shared
  // memory; per block after the barrier: one global atomicAdd per bin and one on a module-scope
  // variable.  A second kernel without barriers (a plain loop): one global atomic per thread.
  cn::CudaModule m(R"(
    __device__ unsigned int blocks_done;
    extern "C" __global__ void histogram(const int* in, int* bins, int n) {
      __shared__ int tile[8];
      extern __shared__ int largest[];
      if (threadIdx.x < 8) tile[threadIdx.x] = 0;
      if (threadIdx.x == 0) largest[0] = 0;
      __syncthreads();
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      int v = i < n ? in[i] : 0;
      atomicAdd(&tile[v % 8], 1);
      atomicMax(&largest[0], v);
      __syncthreads();
      if (threadIdx.x < 8) atomicAdd(&bins[threadIdx.x], tile[threadIdx.x]);
      if (threadIdx.x == 0) atomicAdd(&blocks_done, 1u);
    }
    extern "C" __global__ void scatter(const int* in, int* bins, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) atomicAdd(&bins[in[i] % 8], 1);
    })",
                   {"histogram", "scatter"}, {.block_size = 64});
  const int n = 64 * 13;
  auto in = cn::arange<int>(0, n, 1);
  auto bins = cn::zeros<int>({8});
  cn::CudaKernel histogram = m.kernel("histogram"), scatter = m.kernel("scatter");
  cn::Launch blocks;
  blocks.grid = cn::Dim3{13, 1, 1};
  blocks.block = cn::Dim3{64, 1, 1};
  blocks.shared_mem = 16;
  histogram(blocks, in, bins, n);  // before any counter: not counted anywhere
  auto outer = cn::count_atomics();
  {
    auto inner = cn::count_atomics();
    histogram(blocks, in, bins, n);
    EXPECT_EQ(inner.shared(), 2LL * n);
    EXPECT_EQ(inner.global(), 13LL * 9);
    EXPECT_EQ(inner.launches(), 1);
  }
  scatter(cn::threads(n), in, bins, n);
  EXPECT_EQ(outer.global(), 13LL * 9 + n);
  EXPECT_EQ(outer.shared(), 2LL * n);
  EXPECT_EQ(outer.launches(), 2);
  EXPECT_EQ(cn::to_host(bins)(3), 3 * (n / 8));
  // A launch queued on a stream counts in the counters alive when it was launched.
  cn::Stream stream;
  auto queued = cn::count_atomics();
  cn::Launch on_stream = cn::threads(n);
  on_stream.stream = stream.ref();
  scatter(on_stream, in, bins, n);
  stream.synchronize();
  EXPECT_EQ(queued.global(), n);
  EXPECT_EQ(queued.shared(), 0);
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

TEST_F(Emulator, StructArgumentsOfAnySizeArriveWhole) {
  // Structs of 8, 96 and 1024 bytes with view fields, and the arguments after them (a struct
  // of 88 bytes or more once overran a fixed 72-byte slot into the next argument).
  const auto bad = struct_argument_mismatches();
  for (const auto& b : bad) ADD_FAILURE() << b;
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

TEST_F(Emulator, WarpOperationsExchangeBetweenLanes) {
  cn::CudaKernel warp(R"(
    extern "C" __global__ void warp(double* sum, double* bcast, double* scan, unsigned* ballot, int* any_all,
                                    int* maxed) {
      int t = threadIdx.x, lane = t % 32;
      double v = t + 1.0;
      double s = v;
      for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
      sum[t] = s;                                    // lane 0 holds the warp's sum
      bcast[t] = __shfl_sync(0xffffffffu, v, 5);     // every lane gets lane 5's value
      double x = v;
      for (int o = 1; o < 32; o *= 2) {
        double y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
      }
      scan[t] = x;                                   // inclusive prefix sum within the warp
      ballot[t] = __ballot_sync(0xffffffffu, lane % 3 == 0);
      any_all[t] = __any_sync(0xffffffffu, lane == 7) + 2 * __all_sync(0xffffffffu, lane < 31);
      int m = (t * 37) % 64;
      for (int o = 16; o > 0; o /= 2) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
      __syncwarp();
      maxed[t] = m;                                  // every lane: the warp's maximum
    })",
                      "warp", {.block_size = 64});
  auto sum = cn::zeros<double>({64}), bcast = cn::zeros<double>({64}),
       scan = cn::zeros<double>({64});
  auto ballot = cn::zeros<unsigned>({64});
  auto any_all = cn::zeros<int>({64}), maxed = cn::zeros<int>({64});
  warp(cn::threads(64), sum, bcast, scan, ballot, any_all, maxed);
  const auto hs = cn::to_host(sum), hb = cn::to_host(bcast), hc = cn::to_host(scan);
  const auto hl = cn::to_host(ballot);
  const auto ha = cn::to_host(any_all), hm = cn::to_host(maxed);
  unsigned expected_ballot = 0;
  for (int l = 0; l < 32; l += 3) expected_ballot |= 1u << l;
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(hs(32 * w), 32.0 * (32 * w) + 32.0 * 33 / 2) << "warp " << w;
    int expected_max = 0;
    for (int l = 0; l < 32; ++l) expected_max = std::max(expected_max, ((32 * w + l) * 37) % 64);
    double prefix = 0;
    for (int l = 0; l < 32; ++l) {
      const int t = 32 * w + l;
      prefix += t + 1.0;
      EXPECT_EQ(hb(t), 32 * w + 6.0) << t;
      EXPECT_EQ(hc(t), prefix) << t;
      EXPECT_EQ(hl(t), expected_ballot) << t;
      EXPECT_EQ(ha(t), 1) << "any lane 7: yes; all lanes below 31: no";
      EXPECT_EQ(hm(t), expected_max) << t;
    }
  }
}

TEST_F(Emulator, TheShippedBlockReductionsRunAndEqualTheHost) {
  cn::CudaKernel reduce(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void reduce(const double* x, double* out, long long* count, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      double v = i < n ? x[i] : 0.0;
      double s = cunumpy::detail::block_reduce(v, cunumpy::detail::ReduceSum{}, 0.0);
      long long c = cunumpy::detail::block_reduce((long long)(i < n), cunumpy::detail::ReduceSum{}, 0LL);
      if (threadIdx.x == 0) { out[blockIdx.x] = s; count[blockIdx.x] = c; }
    })",
                        "reduce", {.block_size = 128});
  const int n = 1000;
  auto x = cn::arange<double>(0.0, n, 1.0);
  auto out = cn::zeros<double>({8});
  auto count = cn::zeros<long long>({8});
  reduce(cn::threads(n), x, out, count, n);
  const auto ho = cn::to_host(out);
  const auto hc = cn::to_host(count);
  for (int b = 0; b < 8; ++b) {
    double expect = 0;
    long long c = 0;
    for (int i = 128 * b; i < std::min(n, 128 * (b + 1)); ++i, ++c) expect += i;
    EXPECT_EQ(ho(b), expect) << "block " << b;
    EXPECT_EQ(hc(b), c);
  }
}

TEST_F(Emulator, AWarpOperationNotEveryLaneReachesIsReported) {
  cn::CudaKernel half(R"(
    extern "C" __global__ void half(int* x) {
      if (threadIdx.x >= 16) return;
      x[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
      __syncthreads();
    })",
                      "half", {.block_size = 32});
  auto x = cn::zeros<int>({32});
  // Lanes 16-31 returned: the shuffle completes among the live lanes, then the barrier is
  // divergent and reported.
  const std::string what = message_of([&] { half(cn::threads(32), x); });
  EXPECT_NE(what.find("threads 0-15 wait at __syncthreads(), threads 16-31 returned"),
            std::string::npos)
      << what;
}

TEST_F(Emulator, AxpyAndAPerBlockDepositWithAtomics) {
  cn::CudaKernel axpy(kAxpy, "axpy");
  const long long n = 1000;
  auto x = cn::arange<double>(0.0, static_cast<double>(n), 1.0);
  auto y = cn::ones<double>({n});
  axpy(cn::threads(n), 2.0, x, y, n);
  const auto hy = cn::to_host(y);
  for (long long i = 0; i < n; ++i) ASSERT_EQ(hy(i), 2.0 * i + 1.0) << i;
  // A deposit: each block accumulates its particles' charge per cell in shared memory, then adds
  // its cells into the grid with atomics (2D grid of blocks, blocks on several host threads).
  cn::CudaKernel deposit(R"(
    extern "C" __global__ void deposit(const int* cell, double* grid, int n, int cells) {
      __shared__ double local[16];
      int t = threadIdx.x + blockDim.x * threadIdx.y;
      if (t < cells) local[t] = 0.0;
      __syncthreads();
      int block = blockIdx.x + gridDim.x * blockIdx.y;
      int i = block * blockDim.x * blockDim.y + t;
      if (i < n) atomicAdd(&local[cell[i]], 1.0);
      __syncthreads();
      if (t < cells) atomicAdd(&grid[t], local[t]);
    })",
                         "deposit", {.block_size = cn::Dim3(8, 8)});
  const int particles = 64 * 12, cells = 16;
  std::vector<int> c(particles);
  for (int i = 0; i < particles; ++i) c[static_cast<std::size_t>(i)] = (i * 7) % cells;
  auto cell = cn::from_host<int>(c);
  auto grid = cn::zeros<double>({cells});
  deposit({.grid = cn::Dim3(4, 3), .block = cn::Dim3(8, 8)}, cell, grid, particles, cells);
  const auto hg = cn::to_host(grid);
  for (int k = 0; k < cells; ++k) EXPECT_EQ(hg(k), particles / cells) << "cell " << k;
}

// Every thread of odd 3D launch shapes sees its own indices: in the block loop (no barrier, which
// the host compiler vectorises, tails included) and after barriers and warp operations (a thread
// restores its threadIdx when it resumes), on blocks spread over host threads.
TEST_F(Emulator, EveryThreadSeesItsOwnIndicesWithAndWithoutBarriers) {
  const char* body = R"(
      const long long block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * (long long)blockIdx.z);
      const long long t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * (long long)threadIdx.z);
      const long long i = block * blockDim.x * blockDim.y * blockDim.z + t;
      out[i] = ((((threadIdx.x * 16 + threadIdx.y) * 16 + threadIdx.z) * 16 + blockIdx.x) * 16 +
               blockIdx.y) * 16 + blockIdx.z + 16777216LL * (blockDim.x + 16 * gridDim.y);
    })";
  cn::CudaKernel loop(std::string(R"(
    extern "C" __global__ void indices(long long* out, long long n) {
      if (threadIdx.x + blockIdx.x > n) return;)") +
                          body,
                      "indices");
  cn::CudaKernel fibers(std::string(R"(
    extern "C" __global__ void indices(long long* out, long long n) {
      __shared__ int arrived;
      if (threadIdx.x + threadIdx.y + threadIdx.z == 0) arrived = 0;
      __syncthreads();
      atomicAdd(&arrived, 1);
      __syncthreads();
      __syncwarp();
      if (arrived != (int)(blockDim.x * blockDim.y * blockDim.z)) __trap();)") +
                            body,
                        "indices");
  struct Shape {
    cn::Dim3 grid, block;
  };
  for (const Shape& shape :
       {Shape{cn::Dim3(3, 2, 2), cn::Dim3(13, 3, 2)}, Shape{cn::Dim3(5, 1, 1), cn::Dim3(37, 1, 1)},
        Shape{cn::Dim3(2, 3, 1), cn::Dim3(1, 5, 7)}}) {
    const long long per_block = shape.block.product(), n = shape.grid.product() * per_block;
    for (cn::CudaKernel* k : {&loop, &fibers}) {
      auto out = cn::full<long long>({n}, -1);
      (*k)({.grid = shape.grid, .block = shape.block}, out, n);
      const auto h = cn::to_host(out);
      for (long long i = 0; i < n; ++i) {
        const long long b = i / per_block, t = i % per_block;
        const long long tx = t % shape.block.x, ty = t / shape.block.x % shape.block.y,
                        tz = t / (shape.block.x * shape.block.y);
        const long long bx = b % shape.grid.x, by = b / shape.grid.x % shape.grid.y,
                        bz = b / (shape.grid.x * shape.grid.y);
        const long long want = ((((tx * 16 + ty) * 16 + tz) * 16 + bx) * 16 + by) * 16 + bz +
                               16777216LL * (shape.block.x + 16 * shape.grid.y);
        ASSERT_EQ(h(i), want) << (k == &loop ? "block loop" : "fibers") << ", thread " << i
                              << " of grid (" << shape.grid.x << ", " << shape.grid.y << ", "
                              << shape.grid.z << ") x block (" << shape.block.x << ", "
                              << shape.block.y << ", " << shape.block.z << ")";
      }
    }
  }
}

// A barrier inside a device function of an included header: the block's threads still run as
// fibers that meet there (the emulator looks for barriers in the included headers too).
TEST_F(Emulator, ABarrierInAnIncludedHeaderIsMet) {
  TempDir dir;
  dir.write("tile_tools.cuh", R"(
    #pragma once
    __device__ double neighbour_after_barrier(double* tile, double v) {
      tile[threadIdx.x] = v;
      __syncthreads();
      return tile[(threadIdx.x + 1) % blockDim.x];
    })");
  cn::CudaKernel k(R"(
    #include "tile_tools.cuh"
    extern "C" __global__ void rotate(const double* x, double* y) {
      __shared__ double tile[64];
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      y[i] = neighbour_after_barrier(tile, x[i]);
    })",
                   "rotate", {.block_size = 64, .include_dirs = {dir.path}});
  const long long n = 128;
  auto x = cn::arange<double>(0.0, static_cast<double>(n), 1.0);
  auto y = cn::zeros<double>({n});
  k(cn::threads(n), x, y);
  const auto h = cn::to_host(y);
  for (long long i = 0; i < n; ++i)
    ASSERT_EQ(h(i), static_cast<double>(i / 64 * 64 + (i + 1) % 64)) << i;
}

// A barrier named by a -D option is met too; one the emulator cannot see (a name pasted
// together) is an error that says what happened and what to do, not a wrong result.
TEST_F(Emulator, ABarrierFromAnOptionIsMetAndAHiddenOneIsExplained) {
  const char* source = R"(
    #define PASTE(a, b) a##b
    extern "C" __global__ void rotate(const double* x, double* y) {
      __shared__ double tile[64];
      tile[threadIdx.x] = x[threadIdx.x];
      BARRIER;
      y[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
    })";
  cn::CudaKernel named(source, "rotate",
                       {.block_size = 64, .options = {"-DBARRIER=__syncthreads()"}});
  auto x = cn::arange<double>(0.0, 64.0, 1.0);
  auto y = cn::zeros<double>({64});
  named(cn::threads(64), x, y);
  const auto h = cn::to_host(y);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(h(i), (i + 1) % 64) << i;
  cn::CudaKernel hidden(source, "rotate",
                        {.block_size = 64, .options = {"-DBARRIER=PASTE(__sync, threads)()"}});
  const std::string what = message_of([&] { hidden(cn::threads(64), x, y); });
  EXPECT_NE(what.find("CUDA kernel 'rotate' launched with grid (1, 1, 1) and block (64, 1, 1), "
                      "in block (0, 0, 0), thread (0, 0, 0): __syncthreads() reached, but the "
                      "emulator found no "
                      "__syncthreads"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("runs its threads as a loop"), std::string::npos) << what;
}

// A module's kernels are searched for barriers one by one: the kernel whose barrier lies two
// calls and a macro down runs as fibers that meet there; a kernel without a barrier runs as a
// loop beside it (a barrier hidden from the search, reached there, says so: with one search
// for the whole source it would run as fibers and pass unnoticed).
TEST_F(Emulator, AModulesKernelsRunAsFibersOnlyWhereTheyMeetBarriers) {
  const char* source = R"(
    #define PASTE(a, b) a##b
    #define SYNC() __syncthreads()
    __device__ void stage(double* tile, double v) { tile[threadIdx.x] = v; SYNC(); }
    __device__ double rotated(double* tile, const double* x, int i) {
      stage(tile, x[i]);
      return tile[(threadIdx.x + 1) % blockDim.x];
    }
    extern "C" __global__ void rotate(const double* x, double* y) {
      __shared__ double tile[64];
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      y[i] = rotated(tile, x, i);
    }
    extern "C" __global__ void hidden(double* y) {
      __shared__ double tile[64];
      tile[threadIdx.x] = y[threadIdx.x];
      PASTE(__sync, threads)();
      y[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
    })";
  cn::CudaModule m(source, {"rotate", "hidden"}, {.block_size = 64});
  const long long n = 128;
  auto x = cn::arange<double>(0.0, static_cast<double>(n), 1.0);
  auto y = cn::zeros<double>({n});
  m.kernel("rotate")(cn::threads(n), x, y);
  const auto h = cn::to_host(y);
  for (long long i = 0; i < n; ++i)
    ASSERT_EQ(h(i), static_cast<double>(i / 64 * 64 + (i + 1) % 64)) << i;
  const std::string what = message_of([&] { m.kernel("hidden")(cn::threads(64), y); });
  EXPECT_NE(what.find("CUDA kernel 'hidden'"), std::string::npos) << what;
  EXPECT_NE(what.find("runs its threads as a loop"), std::string::npos) << what;
}

TEST_F(Emulator, BlockReductionsOfEveryTypeEqualTheHost) {
  const char* types[] = {"int",   "unsigned int", "long long", "unsigned long long",
                         "float", "double"};
  for (const char* type : types) {
    const std::string t = type;
    cn::CudaKernel reduce(
        "#include <cunumpy/reduce.cuh>\nextern \"C\" __global__ void r(" + t + "* out) {\n" + t +
            " v = (" + t + ")(threadIdx.x % 7 + 1);\n" + t +
            " s = cunumpy::detail::block_reduce(v, cunumpy::detail::ReduceSum{}, (" + t + ")0);\n" +
            t + " m = cunumpy::detail::block_reduce(v, cunumpy::detail::ReduceMax{}, (" + t +
            ")0);\n" + "if (threadIdx.x == 0) { out[0] = s; out[1] = m; } }\n",
        "r", {.block_size = 256});
    auto out = cn::zeros<double>({2});
    if (t == "double") {
      reduce(cn::threads(256), out);
      const auto h = cn::to_host(out);
      double expect = 0;
      for (int i = 0; i < 256; ++i) expect += i % 7 + 1;
      EXPECT_EQ(h(0), expect);
      EXPECT_EQ(h(1), 7.0);
      continue;
    }
    // The other types through an array of their own dtype.
    auto check = [&](auto zero) {
      using T = decltype(zero);
      auto o = cn::zeros<T>({2});
      reduce(cn::threads(256), o);
      const auto h = cn::to_host(o);
      T expect = 0;
      for (int i = 0; i < 256; ++i) expect += static_cast<T>(i % 7 + 1);
      EXPECT_EQ(h(0), expect) << t;
      EXPECT_EQ(h(1), static_cast<T>(7)) << t;
    };
    if (t == "int") check(0);
    if (t == "unsigned int") check(0u);
    if (t == "long long") check(0LL);
    if (t == "unsigned long long") check(0ULL);
    if (t == "float") check(0.0f);
  }
}

TEST_F(Emulator, KernelsOnAStreamRunOnItsWorkerAndAMissingSynchronisationShows) {
  const cn::EmulatedStreams previous = cn::emulated_streams();
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::CudaKernel fill(R"(
    extern "C" __global__ void fill(double* x, double value, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) x[i] = value;
    })",
                      "fill");
  cn::Stream s;
  auto x = cn::zeros<double>({300});
  cn::Launch on_s = cn::threads(300);
  on_s.stream = s.ref();
  fill(on_s, x, 4.0, 300);
  // Planted: no s.synchronize() before the transfer (issued on the default stream).
  const double missed = cn::to_host(x)(299);
  std::printf("missed synchronisation: to_host(x)(299) = %g before s.synchronize(), ", missed);
  EXPECT_EQ(missed, 0.0) << "the kernel was still queued on s";
  s.synchronize();
  const double seen = cn::to_host(x)(299);
  std::printf("%g after\n", seen);
  EXPECT_EQ(seen, 4.0);
  // The same kernel with the stream current: the transfer is in order after it.
  {
    auto scope = cn::use_stream(s);
    fill(cn::threads(300), x, 5.0, 300);
    EXPECT_EQ(cn::to_host(x)(0), 5.0);
  }
  // A trap in queued work is reported at the synchronisation, with its message.
  cn::CudaKernel trap(
      R"(extern "C" __global__ void trap(int* x) { if (threadIdx.x == 3) __trap(); })", "trap");
  auto y = cn::zeros<int>({8});
  cn::Launch trap_on_s = cn::threads(8);
  trap_on_s.stream = s.ref();
  EXPECT_NO_THROW(trap(trap_on_s, y)) << "queued: nothing has run yet";
  EXPECT_NE(message_of([&] { s.synchronize(); }).find("CUDA kernel trapped: __trap() called"),
            std::string::npos);
  EXPECT_NO_THROW(s.synchronize()) << "reported once";
  cn::set_emulated_streams(previous);
}

TEST(EmulateCudaKernel, RunsOnHostArraysWithTheHostBackendActive) {
  if (!have_host_compiler())
    GTEST_SKIP() << "no host compiler '" << cn::emulation_compiler() << "' for the emulator";
  ASSERT_EQ(cn::get_backend(), cn::Backend::host);
  cn::CudaKernel axpy(kAxpy, "axpy");
  const int n = 1000;
  auto x = cn::arange<double>(0.0, n, 1.0);
  auto y = cn::full<double>({n}, 1.0);
  auto counter = cn::count_transfers();
  cn::emulate_cuda_kernel(axpy, cn::threads(n), 2.0, x, y, n);
  EXPECT_EQ(counter.total(), 0) << "host data used in place";
  for (int i = 0; i < n; ++i) ASSERT_EQ(y(i), 1.0 + 2.0 * i) << i;
  // Outside emulate_cuda_kernel the host backend still refuses the launch, and host arrays
  // still need a device on a device backend.
  EXPECT_THROW(axpy(cn::threads(n), 2.0, x, y, n), cn::TypeError);
  cn::set_backend(cn::Backend::emulated);
  EXPECT_THROW(axpy(cn::threads(n), 2.0, x, y, n), cn::TypeError);
  cn::set_backend(cn::Backend::host);
}

// A module: several kernels of one source in one library, compiled once by the host compiler
// (one cache entry; a second module of the same source loads it), its data shared by all of
// them; each kernel checked against its own signature; the names looked up and refused.
TEST_F(Emulator, AModuleCompilesItsKernelsOnceAndSharesItsData) {
  ScopedCache cache;
  const auto before = cn::kernel_cache_stats();
  cn::CudaModule m(kModule, {"fill", {"times", {"double", 3}}, "block_total"}, {.block_size = 64});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_FALSE(m.is_compiled_for(cn::Backend::emulated));
  m.compile_for(cn::Backend::emulated);
  EXPECT_TRUE(m.kernel("block_total").is_compiled_for(cn::Backend::emulated))
      << "one compilation readies every kernel";
  EXPECT_EQ(cn::kernel_cache_stats().host_compiles, before.host_compiles + 1);
  EXPECT_EQ(cache.entries().size(), 1u);
  const std::vector<std::string> bad = module_mismatches(m);
  EXPECT_TRUE(bad.empty()) << bad.front();
  EXPECT_EQ(cn::kernel_cache_stats().host_compiles, before.host_compiles + 1);

  cn::CudaModule again(kModule, {"fill", {"times", {"double", 3}}, "block_total"},
                       {.block_size = 64});
  again.compile_for(cn::Backend::emulated);
  EXPECT_TRUE(again.loaded_from_cache());
  EXPECT_EQ(cn::kernel_cache_stats().host_compiles, before.host_compiles + 1);
  EXPECT_TRUE(module_mismatches(again).empty()) << "its own copy of the data, from the cache";

  // Lookups: by name, by instantiation with or without blanks; a kernel not listed is named.
  EXPECT_EQ(m.kernel("times<double, 3>").expression(), "times<double, 3>");
  EXPECT_EQ(m.kernel("times< double,3 >").expression(), "times<double, 3>");
  EXPECT_EQ(m.kernel("fill").source(), m.source());
  const std::string missing = message_of([&] { (void)m.kernel("times<float, 3>"); });
  EXPECT_NE(missing.find("no kernel 'times<float, 3>'; it holds fill, times<double, 3>, "
                         "block_total"),
            std::string::npos)
      << missing;
  // Each kernel's own signature: block_total takes three arguments.
  auto x = cn::zeros<double>({8});
  const std::string count = message_of([&] { m.kernel("block_total")(cn::threads(8), x, 8LL); });
  EXPECT_NE(count.find("CudaKernel 'block_total': 2 argument(s) given, the signature has 3"),
            std::string::npos)
      << count;
  // Refused at construction: no kernels, a repeated one, template arguments in the options.
  EXPECT_THROW(cn::CudaModule(kModule, {}), cn::ValueError);
  EXPECT_NE(message_of([&] {
              cn::CudaModule(kModule, {"fill", "fill"});
            }).find("listed twice"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              cn::CudaModule(kModule, {"times"}, {.template_args = {"double", 3}});
            }).find("give each template kernel's arguments with its name"),
            std::string::npos);
  // Module data errors name the module; a moved-from module says so.
  const std::string data = message_of([&] { (void)m.get_global<int>("missing"); });
  EXPECT_NE(data.find("CudaModule '"), std::string::npos) << data;
  cn::CudaModule moved = std::move(again);
  EXPECT_EQ(moved.size(), 3u);
  EXPECT_NE(message_of([&] { again.compile(); }).find("moved from"), std::string::npos);
  // A compile error names the module and its kernels.
  cn::CudaModule broken(
      "extern \"C\" __global__ void a(int* x) { x[0] = y; }\n"
      "extern \"C\" __global__ void b(int* x) {}",
      {"a", "b"});
  const std::string error = message_of([&] { broken.compile_for(cn::Backend::emulated); });
  EXPECT_NE(error.find("CudaModule 'a.cu' (kernels a, b)"), std::string::npos) << error;
}

// In a sanitized build the emulator's kernels are sanitized too, and the bytes past an
// emulated device array's end are poisoned: a kernel that writes past the end is
// AddressSanitizer's report at the kernel's own file and line, not a silent write.
TEST_F(Emulator, ASanitizedBuildReportsAKernelsOverrunAtItsLine) {
  if (!cn::emulated_kernels_sanitized())
    GTEST_SKIP() << "the emulator's kernels are sanitized in a CUNUMPY_SANITIZE build, with CXX "
                    "of the compiler family that built it";
  TempDir t;
  t.write("overrun_cuda.cu",
          "extern \"C\" __global__ void overrun(double* x, int n) {\n"
          "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i == 0) x[i + n] = 1.0;  // one element past the end for n = 8\n"
          "}\n");
  auto overrun = cn::CudaKernel::from_file(t.path / "overrun_cuda.cu");
  auto x = cn::zeros<double>({8});
  overrun(cn::threads(1), x, 7);  // in bounds
  EXPECT_EQ(cn::to_host(x)(7), 1.0);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the launch runs on OpenMP threads
  EXPECT_DEATH(overrun(cn::threads(1), x, 8), "use-after-poison.*overrun_cuda\\.cu:3");
}

// Module-scope data: __constant__ and __device__ variables set and read from the host, each a
// counted transfer; a value set later is the one the next launch reads (never folded into the
// code); the sizes, names and backend checked.
TEST_F(Emulator, ModuleScopeConstantAndDeviceDataAreSetAndReadFromTheHost) {
  cn::CudaKernel poly(kModuleData, "poly", {.block_size = 32});
  EXPECT_EQ(poly.global_bytes("coef", cn::Backend::emulated), 3 * sizeof(double));
  EXPECT_EQ((poly.get_global<std::array<double, 4>>("table")),
            (std::array<double, 4>{1.0, 2.0, 3.0, 4.0}));  // initialised as the source says
  for (const std::array<double, 3>& c :
       {std::array<double, 3>{1.0, 2.0, 3.0}, std::array<double, 3>{-1.0, 0.5, 0.0}}) {
    auto counter = cn::count_transfers();
    const std::vector<std::string> bad = module_data_mismatches(poly, c);
    counter.stop();
    EXPECT_TRUE(bad.empty()) << bad.front();
    // Two sets; two reads: the counter (get_global) and the output (to_host).
    EXPECT_EQ(counter.to_device(), 2) << counter.report();
    EXPECT_EQ(counter.to_host(), 2) << counter.report();
  }
  try {
    poly.set_global("coef", 1.0);
    ADD_FAILURE() << "no error";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 24 bytes, 8 were given"), std::string::npos)
        << e.what();
  }
  try {
    (void)poly.get_global<int>("missing");
    ADD_FAILURE() << "no error";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no module-scope variable named 'missing'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(poly.set_global("calls", 0, cn::Backend::host), cn::BackendError);
}

namespace {
// The GPU's order of a warp reduction (reduce.cuh's xor butterfly), written out on the host:
// lane l's value after the five steps.
template <typename T, typename Op>
std::vector<T> xor_butterfly(std::vector<T> v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    std::vector<T> next(32);
    for (int l = 0; l < 32; ++l) next[l] = op(v[l], v[l ^ offset]);
    v = next;
  }
  return v;
}
// ... and of a block reduction: each warp's butterfly, lane 0's into the partials, the
// butterfly of the partials.
template <typename T, typename Op>
T block_tree(const std::vector<T>& values, Op op, T identity) {
  const int warps = static_cast<int>(values.size()) / 32;
  std::vector<T> partial(32, identity);
  for (int w = 0; w < warps; ++w)
    partial[w] =
        xor_butterfly(std::vector<T>(values.begin() + 32 * w, values.begin() + 32 * w + 32), op)[0];
  return xor_butterfly(partial, op)[0];
}
}  // namespace

// The reductions take one exchange in the emulator (not five shuffles and two barriers), and
// round as the shuffles do on a GPU: float sums of values far apart in size, compared with
// the tree written out on the host, bit for bit.
TEST_F(Emulator, ReductionsRoundInTheGpusOrder) {
  cn::CudaKernel reduce(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void reduce(const float* x, float* warp, float* block, float* mx,
                                      float* to) {
      const int t = threadIdx.x;
      const float v = x[blockIdx.x * blockDim.x + t];
      warp[blockIdx.x * blockDim.x + t] = cunumpy_warp_sum(v);
      const float s = cunumpy_block_sum(v);
      const float m = cunumpy_block_max(v);
      if (t == 0) { block[blockIdx.x] = s; mx[blockIdx.x] = m; }
      cunumpy_block_sum_to(to + blockIdx.x, v);
      cunumpy_block_sum_to(to + blockIdx.x, 2.0f * v);  // a second call of every thread
    })",
                        "reduce", {.block_size = 256});
  const int blocks = 3, n = 256 * blocks;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = (i % 5 == 0 ? 1.0e7f : 1.0f) * (1.0f + 0.001f * (i % 97));
  auto dx = cn::from_host<float>(x, {n});
  auto warp = cn::zeros<float>({n}), block = cn::zeros<float>({blocks}),
       mx = cn::zeros<float>({blocks}), to = cn::zeros<float>({blocks});
  reduce(cn::threads(n), dx, warp, block, mx, to);
  const auto hw = cn::to_host(warp), hb = cn::to_host(block), hm = cn::to_host(mx),
             ht = cn::to_host(to);
  auto add = [](float a, float b) { return a + b; };
  auto max = [](float a, float b) { return a < b ? b : a; };
  for (int b = 0; b < blocks; ++b) {
    const std::vector<float> mine(x.begin() + 256 * b, x.begin() + 256 * (b + 1));
    for (int w = 0; w < 8; ++w) {
      const auto lanes =
          xor_butterfly(std::vector<float>(mine.begin() + 32 * w, mine.begin() + 32 * w + 32), add);
      for (int l = 0; l < 32; ++l) EXPECT_EQ(hw(256 * b + 32 * w + l), lanes[l]) << b << " " << w;
    }
    const float sum = block_tree(mine, add, 0.0f);
    EXPECT_EQ(hb(b), sum) << "block " << b;
    EXPECT_EQ(hm(b), block_tree(mine, max, -3.402823466e+38f));
    std::vector<float> twice(mine);
    for (float& v : twice) v *= 2.0f;
    EXPECT_EQ(ht(b), 0.0f + sum + block_tree(twice, add, 0.0f)) << "block " << b;
  }
  float naive = 0.0f;  // the order matters for these values
  for (int i = 0; i < 256; ++i) naive += x[i];
  EXPECT_NE(naive, hb(0)) << "the values do not tell one order from another";
}

// cunumpy_block_sum_to adds a block's sum when its last thread has called, with no barrier; a
// thread that never calls is reported (its block's sum would be lost), naming the threads.
TEST_F(Emulator, ABlockSumToNotEveryThreadMakesIsReported) {
  cn::CudaKernel sums(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void sums(double* out, int skip) {
      if ((int)threadIdx.x == skip) return;
      cunumpy_block_sum_to(out, 1.0);
    })",
                      "sums", {.block_size = 128});
  auto out = cn::zeros<double>({1});
  sums(cn::threads(128 * 40), out, -1);
  EXPECT_EQ(cn::to_host(out)(0), 128.0 * 40);
  const std::string what = message_of([&] { sums(cn::threads(128), out, 5); });
  EXPECT_NE(what.find("cunumpy_block_sum_to call 1 of block (0, 0, 0) was made by 127 of its 128 "
                      "threads (threads 5 did not make it)"),
            std::string::npos)
      << what;
}

// a * b + c rounds once, as NVRTC's default --fmad=true makes it on a GPU (where the CPU has
// FMA instructions), and twice with --fmad=false, as the host code does.
TEST_F(Emulator, MultiplyAddIsFusedAsOnAGpuUnlessFmadIsFalse) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "this CPU has no FMA instructions";
#endif
  if (cn::emulated_kernels_sanitized())
    GTEST_SKIP() << "GCC contracts no multiply-add of a kernel under AddressSanitizer";
  const char* source = R"(
    extern "C" __global__ void madd(const double* a, const double* b, const double* c, double* y) {
      if (threadIdx.x == 0) y[0] = a[0] * b[0] + c[0];
    })";
  // (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60: once rounded; the product alone rounds to 1.
  const double e = std::ldexp(1.0, -30);
  auto a = cn::full<double>({1}, 1.0 + e), b = cn::full<double>({1}, 1.0 - e),
       c = cn::full<double>({1}, -1.0);
  volatile double ha = 1.0 + e, hb = 1.0 - e;
  const double twice_rounded = ha * hb - 1.0;
  ASSERT_EQ(twice_rounded, 0.0);
  auto y = cn::zeros<double>({1});
  cn::CudaKernel fused(source, "madd");
  fused(cn::threads(1), a, b, c, y);
  EXPECT_EQ(cn::to_host(y)(0), -std::ldexp(1.0, -60));
  auto z = cn::full<double>({1}, 5.0);
  cn::CudaKernel unfused(source, "madd", {.options = {"--fmad=false"}});
  unfused(cn::threads(1), a, b, c, z);
  EXPECT_EQ(cn::to_host(z)(0), twice_rounded);
}

// In debug mode an emulated device array ends at a guard page: a raw pointer's read or write
// past its end is an IndexError naming the kernel, the block and the thread, as the loop runs
// the block's threads, in regions and as fibers; a view's bounds check names the thread too.
TEST_F(Emulator, InDebugModeARawPointerPastAnArraysEndIsReported) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer checks the kernels' accesses itself in this build";
#endif
  auto debug = cn::cuda_debug();
  auto x = cn::zeros<double>({100});  // allocated in debug mode: a guard page after it
  cn::CudaKernel past(R"(
    extern "C" __global__ void past(double* x, int n, int write) {
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i >= n) return;
      if (write) x[i] = 1.0; else if (x[i] > 1.0) x[0] = 2.0;
    })",
                      "past", {.block_size = 32});  // (debug mode: -DCUNUMPY_BOUNDS_CHECK)
  cn::CudaKernel past_regions(R"(
    extern "C" __global__ void past_regions(double* x, int n, int write) {
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      __syncthreads();
      if (i >= n) return;
      if (write) x[i] = 1.0; else if (x[i] > 1.0) x[0] = 2.0;
    })",
                              "past_regions", {.block_size = 32});
  cn::CudaKernel past_fibers(R"(
    extern "C" __global__ void past_fibers(double* x, int n, int write) {
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (n > 0) __syncthreads();
      if (i >= n) return;
      if (write) x[i] = 1.0; else if (x[i] > 1.0) x[0] = 2.0;
    })",
                             "past_fibers", {.block_size = 32});
  EXPECT_EQ(past.emulated_as(), "loop");
  EXPECT_EQ(past_regions.emulated_as(), "regions");
  EXPECT_EQ(past_fibers.emulated_as(), "fibers");
  for (cn::CudaKernel* k : {&past, &past_regions, &past_fibers})
    for (int write : {1, 0}) {
      // 128 threads over 100 elements: thread 4 of block 3 is the first past the end.
      const std::string what = message_of([&] { (*k)(cn::threads(128), x, 128, write); });
      EXPECT_NE(what.find("in block (3, 0, 0), thread (4, 0, 0)"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string(write ? "wrote" : "read") +
                          " byte 800 of an emulated device array of 800 bytes"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("CUDA kernel 'past"), std::string::npos) << what;
    }
  // Within the array: no report, the values written.
  past(cn::threads(100), x, 100, 1);
  EXPECT_EQ(cn::to_host(x)(99), 1.0);
  // An array allocated outside debug mode has no guard page: it keeps its page alignment.
  auto off = cn::cuda_debug(false);
  auto y = cn::zeros<double>({100});
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(y.data()) % 4096, 0u);

  cn::CudaKernel view(R"(
    #include <cunumpy/array_view.cuh>
    extern "C" __global__ void view(Array1D<double> a) { a(threadIdx.x + 5) = 1.0; })",
                      "view", {.options = {"-DCUNUMPY_BOUNDS_CHECK"}});
  auto a = cn::zeros<double>({8});
  const std::string what = message_of([&] { view(cn::threads(8), a); });
  EXPECT_NE(what.find("thread (3, 0, 0)"), std::string::npos) << what;
}
