// bench_emulator: what the kernel emulator costs (CUNUMPY_BACKEND=emulated, no GPU needed).
//
//   ./bench_emulator
//
// Benchmarks:
//   barriers_256x9        one block of 256 threads through 9 __syncthreads (goal: <= 50 us; a
//                         naive ucontext emulator takes about 600 us, HIP-CPU about 30 us)
//   elementwise/<n>       a barrier-free axpy over n doubles through the emulator (2^20: in the
//                         caches; 2^24: from memory) ...
//   hand_loop/<n>         ... and the same loop written by hand on the host (goal: within 1.5x)
//   module_axpy/<n>       the axpy of a module whose other kernel has barriers (searched kernel
//                         by kernel: a loop, as elementwise) ...
//   module_axpy_fibers/<n> ... and an axpy that names that kernel's barrier function (never
//                         called): fibers, what every kernel of such a module cost when the
//                         whole source was searched at once
//   warp_reduce_1024      a block reduction with warp shuffles, 1024 threads
#include <benchmark/benchmark.h>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

void barriers_256x9(benchmark::State& state) {
  auto e = cn::use_backend(cn::Backend::emulated);
  cn::CudaKernel k(R"(
    extern "C" __global__ void barriers(double* x) {
      __shared__ double s[256];
      s[threadIdx.x] = threadIdx.x;
      for (int r = 0; r < 9; ++r) {
        __syncthreads();
        s[threadIdx.x] += s[(threadIdx.x + 1) % 256];
      }
      x[threadIdx.x] = s[threadIdx.x];
    })",
                   "barriers", {.block_size = 256});
  auto x = cn::zeros<double>({256});
  k(cn::threads(256), x);  // compile and warm up
  for (auto _ : state) k(cn::threads(256), x);
}

const char* kAxpy = R"(
  extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
  })";

void elementwise(benchmark::State& state) {
  auto e = cn::use_backend(cn::Backend::emulated);
  const long long n = state.range(0);
  cn::CudaKernel k(kAxpy, "axpy", {.block_size = 256});
  auto x = cn::ones<double>({n});
  auto y = cn::zeros<double>({n});
  k(cn::threads(n), 2.0, x, y, n);
  for (auto _ : state) k(cn::threads(n), 2.0, x, y, n);
  state.SetItemsProcessed(state.iterations() * n);
}

// A module: the axpy beside a kernel with a barrier; axpy_named names the barrier's function
// on a branch never taken.
const char* kModuleWithBarrier = R"(
  __device__ void stage(double* tile, double v) { tile[threadIdx.x] = v; __syncthreads(); }
  extern "C" __global__ void tiled(double* y) {
    __shared__ double tile[256];
    stage(tile, y[threadIdx.x]);
    y[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
  }
  extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }
  extern "C" __global__ void axpy_named(double a, const double* x, double* y, long long n) {
    __shared__ double tile[256];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (n < 0) stage(tile, a);
    if (i < n) y[i] = a * x[i] + y[i];
  })";

void module_axpy_as(benchmark::State& state, const char* kernel) {
  auto e = cn::use_backend(cn::Backend::emulated);
  const long long n = state.range(0);
  cn::CudaModule m(kModuleWithBarrier, {"tiled", "axpy", "axpy_named"}, {.block_size = 256});
  cn::CudaKernel k = m.kernel(kernel);
  auto x = cn::ones<double>({n});
  auto y = cn::zeros<double>({n});
  k(cn::threads(n), 2.0, x, y, n);
  for (auto _ : state) k(cn::threads(n), 2.0, x, y, n);
  state.SetItemsProcessed(state.iterations() * n);
}
void module_axpy(benchmark::State& state) {
  module_axpy_as(state, "axpy");
}
void module_axpy_fibers(benchmark::State& state) {
  module_axpy_as(state, "axpy_named");
}

void hand_loop(benchmark::State& state) {
  const long long n = state.range(0);
  auto x = cn::ones<double>({n}, cn::Backend::host);
  auto y = cn::zeros<double>({n}, cn::Backend::host);
  const double* xp = x.data();
  double* yp = y.data();
  for (auto _ : state) {
#pragma omp parallel for
    for (long long i = 0; i < n; ++i) yp[i] = 2.0 * xp[i] + yp[i];
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void warp_reduce_1024(benchmark::State& state) {
  auto e = cn::use_backend(cn::Backend::emulated);
  cn::CudaKernel k(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void reduce(const double* x, double* out) {
      const double s = cunumpy_block_sum(x[threadIdx.x]);
      if (threadIdx.x == 0) out[0] = s;
    })",
                   "reduce", {.block_size = 1024});
  auto x = cn::ones<double>({1024});
  auto out = cn::zeros<double>({1});
  k(cn::threads(1024), x, out);
  for (auto _ : state) k(cn::threads(1024), x, out);
}

}  // namespace

BENCHMARK(barriers_256x9)->Unit(benchmark::kMicrosecond);
BENCHMARK(elementwise)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond);
BENCHMARK(hand_loop)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond);
BENCHMARK(module_axpy)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(module_axpy_fibers)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(warp_reduce_1024)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
