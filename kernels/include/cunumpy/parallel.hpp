// cunumpy/parallel.hpp: parallel_for and parallel_reduce, one loop body for every backend.
//
//   auto x = rho.view<1>();
//   cunumpy::parallel_for("scale", n, CUNUMPY_LAMBDA(long long i) { x(i) *= 2.0; });
//   cunumpy::parallel_for("laplace", nx, ny, CUNUMPY_LAMBDA(long long i, long long j) {...});
//   double e = cunumpy::parallel_reduce("energy", n, cunumpy::ReduceOp::sum,
//                                       CUNUMPY_LAMBDA(long long i) { return v(i) * v(i); });
//
// The active backend decides where the body runs: a CUDA grid-stride kernel on the current
// stream (cuda), an OpenMP loop over host memory (host) or over the emulated device's memory
// (emulated), or a serial loop without OpenMP.  Every launch is named and is an NVTX range.
// The cuda path exists in translation units compiled by nvcc (.cu files); calling a loop
// from a host-compiled file while the cuda backend is active throws BackendError that says
// so.  Host reductions combine per-thread partials in thread order, so a given thread count
// gives the same bits on every run.
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cunumpy/backend.hpp>
#include <cunumpy/config.cuh>
#include <cunumpy/errors.hpp>
#include <cunumpy/profiling.hpp>
#include <cunumpy/reduce_op.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cunumpy {
namespace detail {

[[noreturn]] void throw_no_cuda_in_translation_unit(std::string_view name);
void check_extent(std::string_view name, long long n);

// Host loops: OpenMP when the including file is compiled with it, otherwise serial.
template <typename F>
void host_for(long long n, F& f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) f(i);
#else
  for (long long i = 0; i < n; ++i) f(i);
#endif
}

template <typename T, typename F>
T host_reduce(long long n, ReduceOp op, F& f) {
#if defined(_OPENMP)
  const int threads = static_cast<int>(std::min<long long>(omp_get_max_threads(), n));
  std::vector<T> partial(static_cast<std::size_t>(threads), reduce_identity<T>(op));
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    const long long begin = n * t / nt;
    const long long end = n * (t + 1) / nt;
    T acc = reduce_identity<T>(op);
    for (long long i = begin; i < end; ++i) acc = reduce_combine<T>(op, acc, static_cast<T>(f(i)));
    partial[static_cast<std::size_t>(t)] = acc;
  }
  T result = reduce_identity<T>(op);
  for (const T& p : partial) result = reduce_combine<T>(op, result, p);
  return result;
#else
  T acc = reduce_identity<T>(op);
  for (long long i = 0; i < n; ++i) acc = reduce_combine<T>(op, acc, static_cast<T>(f(i)));
  return acc;
#endif
}

}  // namespace detail
}  // namespace cunumpy

#if CUNUMPY_CUDA_COMPILATION()
#include <cunumpy/detail/parallel_cuda.cuh>
#endif

namespace cunumpy {

// Runs f(i) for i in [0, n).
template <typename F>
void parallel_for(std::string_view name, long long n, F f) {
  detail::check_extent(name, n);
  const NvtxRange range{std::string(name)};
  if (n == 0) return;
  if (get_backend() == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    detail::cuda_for(name, n, f);
#else
    detail::throw_no_cuda_in_translation_unit(name);
#endif
  } else {
    detail::host_for(n, f);
  }
}

// Runs f(i, j) for i in [0, n0), j in [0, n1); j varies fastest.
template <typename F>
void parallel_for(std::string_view name, long long n0, long long n1, F f) {
  detail::check_extent(name, n0);
  detail::check_extent(name, n1);
  parallel_for(name, n0 * n1, CUNUMPY_LAMBDA(long long k) { f(k / n1, k % n1); });
}

// Runs f(i, j, k) over [0, n0) x [0, n1) x [0, n2); k varies fastest.
template <typename F>
void parallel_for(std::string_view name, long long n0, long long n1, long long n2, F f) {
  detail::check_extent(name, n0);
  detail::check_extent(name, n1);
  detail::check_extent(name, n2);
  const long long n12 = n1 * n2;
  parallel_for(name, n0 * n12, CUNUMPY_LAMBDA(long long m) {
    const long long i = m / n12;
    const long long r = m % n12;
    f(i, r / n2, r % n2);
  });
}

// Combines f(i) for i in [0, n) with `op` and returns the result on the host (the identity
// for n == 0: 0, +inf/max, -inf/lowest).  The value type is f's return type.  On cuda the
// result is read back after the kernels finish (counted as a reduction synchronisation).
template <typename F>
auto parallel_reduce(std::string_view name, long long n, ReduceOp op, F f,
                     std::source_location where = std::source_location::current()) {
  using T = std::decay_t<decltype(f(0LL))>;
  static_assert(std::is_arithmetic_v<T>, "parallel_reduce: the body must return an arithmetic value");
  detail::check_extent(name, n);
  const NvtxRange range{std::string(name)};
  if (n == 0) return detail::reduce_identity<T>(op);
  if (get_backend() == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    return detail::cuda_reduce<T>(name, n, op, f, where);
#else
    (void)where;
    detail::throw_no_cuda_in_translation_unit(name);
#endif
  }
  (void)where;
  return detail::host_reduce<T>(n, op, f);
}

}  // namespace cunumpy
