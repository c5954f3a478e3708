// tests/support/kernel_sources.hpp: the Python reference's CudaKernel examples, and the structs
// of the kernel tests, shared by the host-compiled and the nvcc-compiled tests.
#pragma once

#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/transfer.hpp>

CUNUMPY_CUDA_STRUCT(Particles, (double*, x), (double*, v), (int, n), (double, charge))
CUNUMPY_CUDA_STRUCT(MarkerArgs, (cunumpy::Array2D<double>, markers), (long long, n_markers),
                    (bool*, valid))
// Struct arguments of 8, 96 and 1024 bytes (view fields included), for the launch buffer.
CUNUMPY_CUDA_STRUCT(Bytes8, (double, a))
CUNUMPY_CUDA_STRUCT(Bytes96, (cunumpy::Array2D<double>, u), (cunumpy::Array2D<double>, v),
                    (double, a), (long long, b))
CUNUMPY_CUDA_STRUCT(Bytes1024, (cunumpy::Array4D<double>, f0), (cunumpy::Array4D<double>, f1),
                    (cunumpy::Array4D<double>, f2), (cunumpy::Array4D<double>, f3),
                    (cunumpy::Array4D<double>, f4), (cunumpy::Array4D<double>, f5),
                    (cunumpy::Array4D<double>, f6), (cunumpy::Array4D<double>, f7),
                    (cunumpy::Array4D<double>, f8), (cunumpy::Array4D<double>, f9),
                    (cunumpy::Array4D<double>, f10), (cunumpy::Array4D<double>, f11),
                    (cunumpy::Array4D<double>, f12), (cunumpy::Array4D<double>, f13), (double, a),
                    (long long, b))

namespace cunumpy_test {

inline const char* kAxpy = R"(
extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";

inline const char* kBlockSum = R"(
extern "C" __global__ void block_sum(const double* x, double* out, int n) {
  extern __shared__ double buffer[];
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  buffer[threadIdx.x] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) buffer[threadIdx.x] += buffer[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = buffer[0];
}
)";

inline const char* kScaleColumn = R"(
#include <cunumpy/array_view.cuh>
#include <cunumpy/index.cuh>
extern "C" __global__
void scale_column(Array2D<double> a, long long column, double factor) {
  CUNUMPY_THREAD_1D(i, a.shape[0]);
  a(i, column) *= factor;
}
)";

inline const char* kScale = R"(
template <typename T, int N>
__global__ void scale(T* x, T factor, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) x[i] = factor * x[i] * (T)N;
}
)";

// The struct push of the reference, after Particles' declaration.
inline const char* kPush = R"(
extern "C" __global__ void push(Particles p, double dt) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < p.n) p.x[i] += dt * p.charge * p.v[i];
}
)";

// The message of the exception f throws ("(no exception)" when it throws none).
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// Module-scope data: coefficients in constant memory, a call counter and a table in global
// memory (CudaKernel::set_global / get_global).
inline const char* kModuleData = R"(
    __constant__ double coef[3];
    __device__ int calls;
    __device__ double table[4] = {1.0, 2.0, 3.0, 4.0};
    extern "C" __global__ void poly(const double* x, double* y, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) {
        y[i] = coef[0] + coef[1] * x[i] + coef[2] * x[i] * x[i] + table[i % 4];
        atomicAdd(&calls, 1);
      }
    })";

// Sets kModuleData's coefficients and counter, launches it over 100 points on the active
// backend, and returns what differs from the host's values (empty: right), the counter read back
// included.
inline std::vector<std::string> module_data_mismatches(cunumpy::CudaKernel& poly,
                                                       const std::array<double, 3>& c) {
  namespace cn = cunumpy;
  std::vector<std::string> bad;
  const int n = 100;
  auto x = cn::arange<double>(0.0, n, 1.0);
  auto y = cn::zeros<double>({n});
  poly.set_global("coef", c);
  poly.set_global("calls", 0);
  poly(cn::threads(n), x, y, n);
  if (const int calls = poly.get_global<int>("calls"); calls != n)
    bad.push_back("calls " + std::to_string(calls));
  const auto h = cn::to_host(y);
  for (int i = 0; i < n; ++i)
    if (h(i) != c[0] + c[1] * i + c[2] * i * static_cast<double>(i) + (i % 4 + 1.0))
      bad.push_back("y[" + std::to_string(i) + "] " + std::to_string(h(i)));
  return bad;
}

// A module of three kernels (one a template, one with barriers) and the data they share.
inline const char* kModule = R"(
    __device__ double offset;
    __device__ unsigned long long launches;
    extern "C" __global__ void fill(double* x, long long n) {
      const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i == 0) atomicAdd(&launches, 1ULL);
      if (i < n) x[i] = offset + i;
    }
    template <typename T, int K>
    __global__ void times(T* x, long long n) {
      const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i == 0) atomicAdd(&launches, 1ULL);
      if (i < n) x[i] *= K;
    }
    extern "C" __global__ void block_total(const double* x, double* out, long long n) {
      __shared__ double s[64];
      const long long i = blockIdx.x * 64LL + threadIdx.x;
      s[threadIdx.x] = i < n ? x[i] : 0.0;
      for (int half = 32; half > 0; half /= 2) {
        __syncthreads();
        if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
      }
      if (threadIdx.x == 0) out[blockIdx.x] = s[0] + offset;
    })";

// Runs kModule's kernels (made with block_size 64) on the active backend: sets the shared
// offset through the module, fills, triples, sums per block, reads the launch counter through
// another kernel; returns what differs from the host's values (empty: right).
inline std::vector<std::string> module_mismatches(cunumpy::CudaModule& m) {
  namespace cn = cunumpy;
  std::vector<std::string> bad;
  const long long n = 1000, blocks = (n + 63) / 64;
  m.set_global("offset", 0.5);
  m.kernel("fill").set_global("launches", 0ULL);
  auto x = cn::zeros<double>({n});
  auto out = cn::zeros<double>({blocks});
  m.kernel("fill")(cn::threads(n), x, n);
  m.kernel("times<double,3>")(cn::threads(n), x, n);
  m.kernel("block_total")(cn::threads(n), x, out, n);
  if (const auto l = m.kernel("block_total").get_global<unsigned long long>("launches"); l != 2)
    bad.push_back("launches " + std::to_string(l));
  const auto hx = cn::to_host(x);
  const auto ho = cn::to_host(out);
  for (long long i = 0; i < n; ++i)
    if (hx(i) != 3.0 * (0.5 + static_cast<double>(i)))
      bad.push_back("x[" + std::to_string(i) + "] " + std::to_string(hx(i)));
  for (long long b = 0; b < blocks; ++b) {
    double want = 0.5;
    for (long long i = 64 * b; i < std::min(n, 64 * b + 64); ++i)
      want += 3.0 * (0.5 + static_cast<double>(i));
    if (ho(b) != want) bad.push_back("out[" + std::to_string(b) + "] " + std::to_string(ho(b)));
  }
  return bad;
}

// Runs kBlockSum over 0, 1, ..., n-1 (on the active backend) and returns the sum of the
// per-block partial sums and block 0's partial.
inline std::pair<double, double> run_block_sum(cunumpy::CudaKernel& block_sum, long long n) {
  auto x = cunumpy::arange<double>(0.0, static_cast<double>(n), 1.0);
  const auto [grid, block] = block_sum.launch_shape(n);
  auto partial = cunumpy::zeros<double>({grid.x});
  block_sum({.n_threads = n, .shared_mem = static_cast<std::size_t>(block.x) * sizeof(double)}, x,
            partial, static_cast<int>(n));
  const auto h = cunumpy::to_host(partial);
  double total = 0;
  for (long long b = 0; b < grid.x; ++b) total += h(b);
  return {total, h(0)};
}

// Launches kernels taking a struct of 8, 96 or 1024 bytes followed by more arguments, each
// writing back what it received (the views' elements, shapes and strides, the scalars, the
// arguments after the struct), on the active backend; returns the mismatches (empty: right).
inline std::vector<std::string> struct_argument_mismatches() {
  namespace cn = cunumpy;
  std::vector<std::string> bad;
  auto iota = [](double start, cn::Shape shape) {  // start, start + 1, ... in that shape
    long long n = 1;
    for (int d = 0; d < shape.rank(); ++d) n *= shape[d];
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i);
    return cn::from_host<double>(std::span<const double>(v), shape);
  };
  auto expect = [&](const char* what, const cn::Array<double>& out,
                    const std::vector<double>& want) {
    const auto h = cn::to_host(out);
    for (std::size_t i = 0; i < want.size(); ++i)
      if (h(static_cast<long long>(i)) != want[i])
        bad.push_back(std::string(what) + " value " + std::to_string(i) + ": " +
                      std::to_string(h(static_cast<long long>(i))) + ", expected " +
                      std::to_string(want[i]));
  };
  {
    const auto& s = cn::cuda_struct<Bytes8>();
    cn::CudaKernel k(s.declaration() + R"(
      extern "C" __global__ void take8(Bytes8 s, double* out, int after) {
        out[0] = s.a; out[1] = after;
      })",
                     "take8", {.structs = {&s}});
    auto out = cn::zeros<double>({2});
    k(cn::threads(1), cn::struct_value<Bytes8>(2.5), out, 7);
    expect("8-byte struct", out, {2.5, 7});
  }
  {
    const auto& s = cn::cuda_struct<Bytes96>();
    cn::CudaKernel k("#include <cunumpy/array_view.cuh>\n" + s.declaration() + R"(
      extern "C" __global__ void take96(Bytes96 s, double* out, long long after, double last) {
        out[0] = s.u(1, 2); out[1] = s.u.shape[0]; out[2] = s.u.shape[1]; out[3] = s.u.strides[0];
        out[4] = s.v(2, 1); out[5] = s.v.strides[0]; out[6] = s.a; out[7] = s.b;
        out[8] = after; out[9] = last;
      })",
                     "take96", {.structs = {&s}});
    auto u = iota(0.0, {3, 4});
    auto v = iota(100.0, {3, 2});
    auto out = cn::zeros<double>({10});
    static_assert(sizeof(Bytes96) == 96);
    k(cn::threads(1), cn::struct_value<Bytes96>(u, v, -1.5, 42LL), out, 123456789LL, 0.25);
    expect("96-byte struct", out, {6, 3, 4, 4, 105, 2, -1.5, 42, 123456789, 0.25});
  }
  {
    const auto& s = cn::cuda_struct<Bytes1024>();
    std::string body = R"(
      extern "C" __global__ void take1024(Bytes1024 s, double* out, int after, double last) {
        const Array4D<double>* f[14] = {&s.f0, &s.f1, &s.f2, &s.f3, &s.f4, &s.f5, &s.f6,
                                        &s.f7, &s.f8, &s.f9, &s.f10, &s.f11, &s.f12, &s.f13};
        for (int i = 0; i < 14; ++i) {
          out[3 * i] = (*f[i])(0, 0, 1, 1); out[3 * i + 1] = f[i]->shape[3];
          out[3 * i + 2] = f[i]->strides[0];
        }
        out[42] = s.a; out[43] = s.b; out[44] = after; out[45] = last;
      })";
    cn::CudaKernel k("#include <cunumpy/array_view.cuh>\n" + s.declaration() + body, "take1024",
                     {.structs = {&s}});
    static_assert(sizeof(Bytes1024) == 1024);
    std::vector<cn::Array<double>> f;
    std::vector<double> want;
    for (int i = 0; i < 14; ++i) {
      // Field i: shape (1, 2, 2, 2 + i), element (0, 0, 1, 1) = 1000 i + 2 + i + 1.
      const long long last = 2 + i;
      f.push_back(iota(1000.0 * i, {1, 2, 2, last}));
      want.insert(want.end(), {1000.0 * i + static_cast<double>(last) + 1,
                               static_cast<double>(last), 4.0 * static_cast<double>(last)});
    }
    want.insert(want.end(), {3.5, -9, 11, 0.125});
    auto out = cn::zeros<double>({46});
    k(cn::threads(1),
      cn::struct_value<Bytes1024>(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10],
                                  f[11], f[12], f[13], 3.5, -9LL),
      out, 11, 0.125);
    expect("1024-byte struct", out, want);
  }
  return bad;
}

}  // namespace cunumpy_test
