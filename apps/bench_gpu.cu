// bench_gpu: the device figures of scripts/gpu_check.sh (a GPU is needed; exit 77 without).
//
//   ./bench_gpu [log2 keys = 24]
//
// - sort_by_key (uint64 keys carrying one int64 array) against CUB's DeviceRadixSort::SortPairs
//   called directly on the same data (keys + indices, the library's own work), both timed with
//   CUDA events around a warm call, median of 5;
// - the host cost of launching: a checked CudaKernel call (4 arguments: signature check and
//   packing) against a raw <<<>>> launch of the same kernel compiled by nvcc, per launch,
//   averaged over 2000 launches each (the GPU work is a one-element kernel).
// Prints "name value unit" lines that gpu_check.sh puts in its table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

__global__ void tiny(double a, const double* x, double* y, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

const char* kTiny = R"(
extern "C" __global__ void tiny(double a, const double* x, double* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";

template <typename F>
double median_ms(F&& f) {
  std::vector<double> t;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  f();  // warm
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (!cn::cuda_available()) {
    std::printf("bench_gpu: no CUDA device: %s\n", cn::cuda_unavailable_reason().c_str());
    return 77;
  }
  cn::Runtime runtime(argc, argv, {.backend = cn::Backend::cuda});
  const int log2n = argc > 1 ? std::atoi(argv[1]) : 24;
  const long long n = 1LL << log2n;

  // ---- sort_by_key against CUB ----
  auto keys_h = cn::empty<std::uint64_t>({n}, cn::Backend::host);
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  for (long long i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    keys_h.host_span()[i] = s >> 1;  // 63-bit keys, as Morton keys of 21 levels
  }
  const auto keys = cn::to_device(keys_h);
  const auto payload = cn::arange<std::int64_t>(0, n, 1, cn::Backend::cuda);
  const double ours = median_ms([&] {
    auto r = cn::sort_by_key(keys, payload);
    (void)r;
  });
  auto keys_out = cn::empty<std::uint64_t>({n}, cn::Backend::cuda);
  auto idx_out = cn::empty<std::int64_t>({n}, cn::Backend::cuda);
  std::size_t temp_bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.data(), keys_out.data(), payload.data(),
                                  idx_out.data(), static_cast<int>(n), 0, 63);
  auto temp = cn::empty<std::uint8_t>({static_cast<long long>(temp_bytes)}, cn::Backend::cuda);
  const double cub_ms = median_ms([&] {
    cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, keys.data(), keys_out.data(),
                                    payload.data(), idx_out.data(), static_cast<int>(n), 0, 63);
  });
  std::printf("sort_by_key_2^%d %.3f ms\n", log2n, ours);
  std::printf("cub_sort_pairs_2^%d %.3f ms\n", log2n, cub_ms);
  std::printf("sort_vs_cub %.2f x\n", ours / cub_ms);

  // ---- launch cost: checked CudaKernel against a raw launch ----
  cn::CudaKernel kernel(kTiny, "tiny");
  auto x = cn::ones<double>({1}, cn::Backend::cuda);
  auto y = cn::zeros<double>({1}, cn::Backend::cuda);
  kernel(cn::threads(1), 2.0, x, y, 1LL);  // compiles
  cudaDeviceSynchronize();
  const int launches = 2000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) kernel(cn::threads(1), 2.0, x, y, 1LL);
  cudaDeviceSynchronize();
  auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) tiny<<<1, 128>>>(2.0, x.data(), y.data(), 1);
  cudaDeviceSynchronize();
  auto t2 = std::chrono::steady_clock::now();
  const double checked = std::chrono::duration<double, std::micro>(t1 - t0).count() / launches;
  const double raw = std::chrono::duration<double, std::micro>(t2 - t1).count() / launches;
  std::printf("launch_checked_cudakernel %.2f us\n", checked);
  std::printf("launch_raw %.2f us\n", raw);
  std::printf("launch_overhead %.2f us\n", checked - raw);
  return 0;
}
