// The cuda backend, compiled by nvcc: error checking (runs everywhere), and the device paths
// of arrays, transfers and parallel loops (skipped with the reason when there is no GPU).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include <cunumpy/cuda_check.hpp>
#include <cunumpy/cunumpy.hpp>
#include <cunumpy/index.cuh>
#include <cunumpy/kernel.hpp>
#include <cunumpy/reduce.cuh>
#include <cunumpy/testing.hpp>

#ifndef CUNUMPY_BOUNDS_CHECK
#error "test_cuda is compiled with CUNUMPY_BOUNDS_CHECK, so the device bounds check is built"
#endif

namespace cn = cunumpy;

TEST(CudaCheck, ThrowsWithCallFileAndLine) {
  const int line = __LINE__ + 2;
  try {
    CUNUMPY_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "expected CudaError";
  } catch (const cn::CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), static_cast<int>(cudaErrorInvalidValue));
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find("in cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(__FILE__) + ":" + std::to_string(line)), std::string::npos)
        << what;
  }
  EXPECT_NO_THROW(CUNUMPY_CUDA_CHECK(cudaSuccess));
}

TEST(CudaCheck, StickyErrorsAreFatal) {
  EXPECT_TRUE(cn::detail::cuda_error_is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(cn::detail::cuda_error_is_sticky(cudaErrorLaunchFailure));
  EXPECT_FALSE(cn::detail::cuda_error_is_sticky(cudaErrorInvalidValue));
  EXPECT_FALSE(cn::detail::cuda_error_is_sticky(cudaErrorMemoryAllocation));
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(CUNUMPY_CUDA_CHECK(cudaErrorIllegalAddress),
               "fatal: CUDA error cudaErrorIllegalAddress");
}

TEST(CudaBackend, NoDriverIsReportedAndFallsBack) {
  if (cn::cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(cn::device_count(), 0);
  EXPECT_FALSE(cn::cuda_unavailable_reason().empty());
  cn::set_backend(cn::Backend::cuda);
  EXPECT_EQ(cn::get_backend(), cn::Backend::host);
  cn::set_backend(cn::Backend::host);
}

// A hand-written kernel using the device headers: index macros, views, atomics.
__global__ void histogram_kernel(cunumpy::Array1D<const double> values,
                                 cunumpy::Array1D<double> bins) {
  CUNUMPY_THREAD_1D(i, values.shape[0]);
  const long long b = static_cast<long long>(values(i)) % bins.shape[0];
  cunumpy_atomic_add(&bins(b), 1.0);
}

__global__ void grid_stride_kernel(cunumpy::Array2D<float> a) {
  CUNUMPY_GRID_STRIDE_1D(k, a.size()) {
    a(k / a.shape[1], k % a.shape[1]) = static_cast<float>(k);
  }
}

__global__ void out_of_bounds_kernel(cunumpy::Array1D<double> a) {
  CUNUMPY_THREAD_1D(i, 1);
  a(i + a.shape[0]) = 1.0;  // one past the end: the bounds check traps
}

void launch_out_of_bounds() {
  auto a = cn::zeros<double>({4});
  out_of_bounds_kernel<<<1, 32>>>(a.view<1>());
  CUNUMPY_CUDA_CHECK(cudaDeviceSynchronize());
}

// Every reduction for every type of reduce.cuh: out = {warp sum of lane 0's warp, block sum,
// block min, block max} as seen by the last thread, and block_sum_to into out[4].
template <typename T>
__global__ void reductions_kernel(T* out) {
  const int t = cunumpy_block_thread();
  const T v = static_cast<T>(t % 7 + 1);
  const T ws = cunumpy_warp_sum(v);
  const T wmin = cunumpy_warp_min(v);
  const T wmax = cunumpy_warp_max(v);
  const T bs = cunumpy_block_sum(v);
  const T bmin = cunumpy_block_min(v);
  const T bmax = cunumpy_block_max(v);
  if (t == 0) {
    out[0] = ws;
    out[5] = wmin;
    out[6] = wmax;
  }
  if (t == cunumpy_block_threads() - 1) {
    out[1] = bs;
    out[2] = bmin;
    out[3] = bmax;
  }
}
template <typename T>
__global__ void block_sum_to_kernel(T* out) {
  cunumpy_block_sum_to(out, static_cast<T>(1));
}

template <typename T>
void check_reductions() {
  auto out = cn::zeros<T>({7});
  reductions_kernel<T><<<1, dim3(32, 4, 2)>>>(out.data());
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
  auto h = cn::to_host(out);
  T expected_ws = 0, expected_bs = 0;
  for (int t = 0; t < 32; ++t) expected_ws += static_cast<T>(t % 7 + 1);
  for (int t = 0; t < 256; ++t) expected_bs += static_cast<T>(t % 7 + 1);
  EXPECT_EQ(h(0), expected_ws);
  EXPECT_EQ(h(1), expected_bs);
  EXPECT_EQ(h(2), static_cast<T>(1));
  EXPECT_EQ(h(3), static_cast<T>(7));
  EXPECT_EQ(h(5), static_cast<T>(1));
  EXPECT_EQ(h(6), static_cast<T>(7));
}

template <typename T>
void check_block_sum_to() {
  auto out = cn::zeros<T>({1});
  block_sum_to_kernel<T><<<10, 128>>>(out.data());
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
  EXPECT_EQ(cn::to_host(out)(0), static_cast<T>(1280));
}

namespace {
using OnGpu = cn::testing::OnCuda;
}  // namespace

TEST_F(OnGpu, CreationAndTransfers) {
  auto counter = cn::count_transfers();
  auto z = cn::full<double>({1000}, 3.0);
  EXPECT_EQ(z.backend(), cn::Backend::cuda);
  EXPECT_THROW(z(0), cn::BackendError);
  auto h = cn::to_host(z);
  EXPECT_EQ(h(999), 3.0);
  auto a = cn::to_host(cn::arange<int>(0, 10, 3));
  EXPECT_EQ(a.size(), 4);
  EXPECT_EQ(a(3), 9);
  auto l = cn::to_host(cn::linspace<float>(0.0, 1.0, 5));
  EXPECT_EQ(l(4), 1.0f);
  EXPECT_EQ(l(1), 0.25f);
  auto c = cn::to_host(cn::full<std::complex<double>>({3}, {1.0, 2.0}));
  EXPECT_EQ(c(2), std::complex<double>(1.0, 2.0));
  EXPECT_EQ(counter.to_host(), 4);
}

// Extended __host__ __device__ lambdas cannot live in a gtest TestBody (a private member),
// so the loop bodies are in free functions.
void check_parallel_for_and_reduce() {
  const long long n = (1 << 22) + 17;
  auto x = cn::zeros<double>({n});
  auto v = x.view<1>();
  cn::parallel_for(
      "fill", n, CUNUMPY_LAMBDA(long long i) { v(i) = static_cast<double>(i % 1000); });
  auto counter = cn::count_transfers();
  const double sum = cn::parallel_reduce(
      "sum", n, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  EXPECT_EQ(counter.total(), 0);
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::reduction), 1);
  double expected = 0;
  for (long long i = 0; i < n; ++i) expected += static_cast<double>(i % 1000);
  EXPECT_EQ(sum, expected);
  EXPECT_EQ(cn::parallel_reduce(
                "max", n, cn::ReduceOp::max, CUNUMPY_LAMBDA(long long i) { return v(i); }),
            999.0);
  EXPECT_EQ(cn::parallel_reduce(
                "min", n, cn::ReduceOp::min, CUNUMPY_LAMBDA(long long i) { return v(i) + 1.0; }),
            1.0);

  auto g = cn::zeros<double>({8, 16});
  auto gv = g.view<2>();
  cn::parallel_for(
      "2d", 8, 16, CUNUMPY_LAMBDA(long long i, long long j) { gv(i, j) = 100.0 * i + j; });
  auto hg = cn::to_host(g);
  EXPECT_EQ(hg(7, 15), 715.0);

  auto b = cn::zeros<int>({3, 4, 5});
  auto bv = b.view<3>();
  cn::parallel_for(
      "3d", 3, 4, 5, CUNUMPY_LAMBDA(long long i, long long j, long long k) {
        bv(i, j, k) = static_cast<int>(100 * i + 10 * j + k);
      });
  auto hb = cn::to_host(b);
  EXPECT_EQ(hb(2, 3, 4), 234);

  auto cells = cn::zeros<double>({4});
  auto cv = cells.view<1>();
  cn::parallel_for(
      "atomics", n, CUNUMPY_LAMBDA(long long i) { cunumpy_atomic_add(&cv(i % 4), 1.0); });
  auto hc = cn::to_host(cells);
  EXPECT_EQ(hc(0) + hc(1) + hc(2) + hc(3), static_cast<double>(n));
}

// CUNUMPY_FOR in a file compiled by nvcc: one body (with commas in it) for every backend.
void check_cunumpy_for(cn::Backend backend) {
  auto guard = cn::use_backend(backend);
  const long long n = 100003;
  auto a = cn::zeros<double>({n});
  auto b = cn::zeros<long long>({n});
  auto av = a.view<1>();
  auto bv = b.view<1>();
  CUNUMPY_FOR("two outputs", n, i, const double x = 0.5 * static_cast<double>(i), y = x + 1.0;
              av(i) = x * y; bv(i) = i % 7;);
  auto ha = cn::to_host(a);
  auto hb = cn::to_host(b);
  for (long long i = 0; i < n; ++i) {
    const double x = 0.5 * static_cast<double>(i);
    ASSERT_EQ(ha(i), x * (x + 1.0)) << i;
    ASSERT_EQ(hb(i), i % 7) << i;
  }
  EXPECT_THROW(CUNUMPY_FOR("negative", -1, i, av(i) = 0.0;), cn::ValueError);
}

TEST(CunumpyFor, HostAndEmulatedInAnNvccFile) {
  check_cunumpy_for(cn::Backend::host);
  check_cunumpy_for(cn::Backend::emulated);
}

TEST_F(OnGpu, ParallelForAndReduce) {
  check_parallel_for_and_reduce();
  check_cunumpy_for(cn::Backend::cuda);
}

TEST_F(OnGpu, HandWrittenKernelsWithTheDeviceHeaders) {
  auto values = cn::arange<double>(0.0, 1000.0, 1.0);
  auto bins = cn::zeros<double>({10});
  auto vv = values.view<1>();
  cunumpy::Array1D<const double> cv{vv.data, {vv.shape[0]}, {vv.strides[0]}};
  histogram_kernel<<<4, 256>>>(cv, bins.view<1>());
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
  auto h = cn::to_host(bins);
  for (int b = 0; b < 10; ++b) EXPECT_EQ(h(b), 100.0);
  auto a = cn::zeros<float>({37, 11});
  grid_stride_kernel<<<2, 32>>>(a.view<2>());
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
  auto ha = cn::to_host(a);
  EXPECT_EQ(ha(36, 10), 36.0f * 11 + 10);
}

// A Kernel whose CUDA side is an nvcc-compiled __global__ function: its launcher takes the
// Launch and the arguments; the compiler checks the call (this file does not build otherwise).
__global__ void scale_kernel(double* x, double a, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] *= a;
}
void scale_on_host(const cn::Array<double>& x, double a, long long n) {
  for (long long i = 0; i < n; ++i) x(i) *= a;
}
auto scale_launcher = [](const cn::Launch& launch, const cn::Array<double>& x, double a,
                         long long n) {
  const long long threads = launch.n_threads ? launch.n_threads->x : n;
  scale_kernel<<<static_cast<unsigned>((threads + 255) / 256), 256>>>(x.data(), a, n);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
};

TEST(NvccKernel, TheHostSideRunsEverywhere) {
  cn::Kernel scale("scale", scale_on_host, scale_launcher);
  EXPECT_TRUE(scale.has_cuda());
  EXPECT_EQ(scale.signature_difference(), "") << "checked by the compiler";
  auto x = cn::full<double>({4}, 2.0, cn::Backend::host);
  scale(cn::threads(4), x, 3.0, 4LL);
  EXPECT_EQ(x(3), 6.0);
}

TEST_F(OnGpu, ANvccCompiledKernelBehindAKernel) {
  cn::Kernel scale("scale", scale_on_host, scale_launcher);
  auto x = cn::full<double>({1000}, 2.0);
  scale(cn::threads(1000), x, 3.0, 1000LL);
  EXPECT_EQ(cn::to_host(x)(999), 6.0);
}

TEST_F(OnGpu, DeviceBoundsCheckTraps) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(launch_out_of_bounds(), "fatal: CUDA error");
}

TEST_F(OnGpu, MemoryLayer) {
  const auto info = cn::memory_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_GT(info->total, info->free / 2);
  EXPECT_GE(cn::max_shared_memory_per_block(true), cn::max_shared_memory_per_block(false));
  auto h = cn::arange<double>(0.0, 1024.0, 1.0, cn::Backend::host);
  auto pinned = cn::pin_memory(h);
  EXPECT_TRUE(pinned.is_pinned());
  {
    cn::Stream s;
    auto scope = cn::use_stream(s);
    EXPECT_NE(s.native_handle(), nullptr);
    EXPECT_EQ(cn::current_stream().native_handle(), s.native_handle());
    cn::Event start(true), stop(true);
    start.record();
    auto d = cn::to_device(pinned);
    cn::HostStaging<double> staging(d.shape(), 2);
    auto c1 = staging.copy(d);
    d.fill(-1.0);  // overwrites after the snapshot
    auto c2 = staging.copy(d);
    EXPECT_EQ(c1.result()(1023), 1023.0);
    EXPECT_EQ(c2.result()(0), -1.0);
    stop.record();
    s.synchronize();
    EXPECT_TRUE(stop.query());
    const double seconds = cn::Event::elapsed(start, stop);
    EXPECT_GT(seconds, 0.0);
    EXPECT_LT(seconds, 10.0);
  }
  std::vector<double> owner(256, 2.0);
  cn::DeviceMirror<double> mirror(owner, {256});
  mirror.device().fill(3.0);
  mirror.to_host();
  EXPECT_EQ(owner[255], 3.0);
  cn::free_memory_pool();
}

TEST_F(OnGpu, WarpAndBlockReductions) {
  check_reductions<int>();
  check_reductions<unsigned>();
  check_reductions<long long>();
  check_reductions<unsigned long long>();
  check_reductions<float>();
  check_reductions<double>();
  check_block_sum_to<double>();
  check_block_sum_to<float>();
  check_block_sum_to<int>();
  check_block_sum_to<unsigned long long>();
}

// The library's device algorithms against the host: identical uniforms, Morton keys, sort
// order and segment sums (bit for bit).
TEST_F(OnGpu, RngAndAlgorithmsMatchTheHost) {
  const long long n = 1 << 16;
  auto ids_h = cn::arange<std::uint64_t>(0, n, 1, cn::Backend::host);
  auto ids_d = cn::to_device(ids_h);
  auto uh = cn::philox_uniform(std::uint64_t{9}, ids_h, std::uint64_t{3});
  auto ud = cn::to_host(cn::philox_uniform(std::uint64_t{9}, ids_d, std::uint64_t{3}));
  EXPECT_EQ(std::memcmp(uh.data(), ud.data(), uh.nbytes()), 0) << "uniforms bit-identical";
  cn::RandomStreams streams;
  streams.seed(5, 2);
  auto gh = streams.generator(cn::Backend::host).random({1000});
  auto gd = cn::to_host(streams.generator(cn::Backend::cuda).random({1000}));
  EXPECT_EQ(std::memcmp(gh.data(), gd.data(), gh.nbytes()), 0);
  auto pos_h = cn::Array<double>(cn::Shape{n, 3}, cn::Backend::host);
  for (long long i = 0; i < 3 * n; ++i) pos_h.host_span()[i] = cunumpy_uniform(1, i, 0);
  const double lo[] = {0, 0, 0}, up[] = {1, 1, 1};
  auto kh = cn::morton_keys(pos_h, lo, up, 21);
  auto kd = cn::morton_keys(cn::to_device(pos_h), lo, up, 21);
  auto kdh = cn::to_host(kd);
  EXPECT_EQ(std::memcmp(kh.data(), kdh.data(), kh.nbytes()), 0) << "Morton keys bit-identical";
  auto [sh, oh] = cn::sort_by_key(kh);
  auto [sd, od] = cn::sort_by_key(kd);
  auto odh = cn::to_host(od);
  EXPECT_EQ(std::memcmp(oh.data(), odh.data(), oh.nbytes()), 0) << "same stable order";
  auto cells_h = cn::Array<std::int64_t>(cn::Shape{n}, cn::Backend::host);
  for (long long i = 0; i < n; ++i)
    cells_h.host_span()[i] = static_cast<std::int64_t>(kh(i) % 1000) - 1;
  auto sh_sum = cn::segment_sum(cells_h, uh, 1000);
  auto sd_sum = cn::to_host(cn::segment_sum(cn::to_device(cells_h), cn::to_device(uh), 1000));
  EXPECT_EQ(std::memcmp(sh_sum.data(), sd_sum.data(), sh_sum.nbytes()), 0)
      << "segment sums bit-identical";
}

TEST_F(OnGpu, ScansAndPartitionsMatchTheHost) {
  const long long n = (1 << 20) + 3;  // several CUB tiles
  auto v = cn::Array<std::int64_t>(cn::Shape{n}, cn::Backend::host);
  for (long long i = 0; i < n; ++i) v(i) = (i * 2654435761LL) % 5 == 0 ? (i % 7) - 3 : 0;
  auto vd = cn::to_device(v);
  for (bool inclusive : {true, false}) {
    auto h = inclusive ? cn::cumsum(v) : cn::exclusive_scan(v);
    auto d = cn::to_host(inclusive ? cn::cumsum(vd) : cn::exclusive_scan(vd));
    EXPECT_EQ(std::memcmp(h.data(), d.data(), h.nbytes()), 0) << "integer scans are exact";
  }
  auto nh = cn::flatnonzero(v);
  auto nd = cn::to_host(cn::flatnonzero(vd));
  ASSERT_EQ(nh.size(), nd.size());
  EXPECT_EQ(std::memcmp(nh.data(), nd.data(), nh.nbytes()), 0);
  auto ph = cn::stable_partition(v);
  auto pd = cn::stable_partition(vd);
  EXPECT_EQ(ph.selected, pd.selected);
  auto pdh = cn::to_host(pd.order);
  EXPECT_EQ(std::memcmp(ph.order.data(), pdh.data(), ph.order.nbytes()), 0) << "same order";
}
