// Device-side fills behind Array<T>::fill, arange and linspace on the cuda backend.  The
// element formulas are those of fill_math.hpp, shared with the host loops.
#include <cuda_runtime.h>

#include <complex>
#include <cstdint>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/cuda_check.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/fill_values.cuh>
#include <cunumpy/memory_block.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy::detail {
namespace {

constexpr int kBlock = 256;

// Enough blocks to fill the device, few enough that each thread strides over several.
unsigned int grid_for(long long n) {
  const long long blocks = ceil_div(n, static_cast<long long>(kBlock));
  return static_cast<unsigned int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

template <typename T>
__global__ void fill_kernel(T* p, long long n, T value) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(blockDim.x) * gridDim.x)
    p[i] = value;
}

template <typename T>
__global__ void arange_kernel(T* p, long long n, T start, T step) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(blockDim.x) * gridDim.x)
    p[i] = arange_value<T>(start, step, i);
}

template <typename T>
__global__ void linspace_kernel(T* p, long long n, double start, double step, bool endpoint,
                                double stop) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(blockDim.x) * gridDim.x)
    p[i] = linspace_value<T>(start, step, i, n, endpoint, stop);
}

// Bit-pattern fills: any element type of a given size fills the same way.
template <typename Word>
void launch_fill(void* dst, long long n, const void* value) {
  if (n == 0) return;
  Word w;
  memcpy(&w, value, sizeof(Word));
  fill_kernel<Word><<<grid_for(n), kBlock, 0,
                      static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle())>>>(
      static_cast<Word*>(dst), n, w);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
}

struct alignas(16) Word16 {
  unsigned long long lo, hi;
};

template <typename T>
void launch_arange(void* dst, long long n, const void* start, const void* step) {
  if (n == 0) return;
  T s, d;
  memcpy(&s, start, sizeof(T));
  memcpy(&d, step, sizeof(T));
  arange_kernel<T><<<grid_for(n), kBlock, 0,
                     static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle())>>>(
      static_cast<T*>(dst), n, s, d);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_linspace(void* dst, long long n, double start, double step, bool endpoint,
                     double stop) {
  if (n == 0) return;
  linspace_kernel<T><<<grid_for(n), kBlock, 0,
                       static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle())>>>(
      static_cast<T*>(dst), n, start, step, endpoint, stop);
  CUNUMPY_CUDA_CHECK(cudaGetLastError());
}

// Calls f.template operator()<T>() with the C++ type of a real dtype.
template <typename F>
void with_real_type(DType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DType::int8:
      return f.template operator()<std::int8_t>();
    case DType::uint8:
      return f.template operator()<std::uint8_t>();
    case DType::int16:
      return f.template operator()<std::int16_t>();
    case DType::uint16:
      return f.template operator()<std::uint16_t>();
    case DType::int32:
      return f.template operator()<std::int32_t>();
    case DType::uint32:
      return f.template operator()<std::uint32_t>();
    case DType::int64:
      return f.template operator()<std::int64_t>();
    case DType::uint64:
      return f.template operator()<std::uint64_t>();
    case DType::float32:
      return f.template operator()<float>();
    case DType::float64:
      return f.template operator()<double>();
    default:
      throw TypeError(std::string(what) + ": a real (integer or floating) dtype is required, got " +
                      std::string(to_string(dtype)));
  }
}

}  // namespace

void cuda_fill(void* dst, DType dtype, long long count, const void* value) {
  switch (dtype_size(dtype)) {
    case 1:
      return launch_fill<std::uint8_t>(dst, count, value);
    case 2:
      return launch_fill<std::uint16_t>(dst, count, value);
    case 4:
      return launch_fill<std::uint32_t>(dst, count, value);
    case 8:
      return launch_fill<std::uint64_t>(dst, count, value);
    case 16:
      return launch_fill<Word16>(dst, count, value);
    default:
      throw TypeError("cuda_fill: unsupported dtype " + std::string(to_string(dtype)));
  }
}

void cuda_arange(void* dst, DType dtype, long long count, const void* start, const void* step) {
  with_real_type(dtype, "arange", [&]<typename T>() { launch_arange<T>(dst, count, start, step); });
}

void cuda_linspace(void* dst, DType dtype, long long count, double start, double step,
                   bool endpoint, double stop) {
  with_real_type(dtype, "linspace", [&]<typename T>() {
    launch_linspace<T>(dst, count, start, step, endpoint, stop);
  });
}

}  // namespace cunumpy::detail
