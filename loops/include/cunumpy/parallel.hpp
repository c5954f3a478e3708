// cunumpy/parallel.hpp: parallel_for and parallel_reduce, one loop body for every backend.
//
//   auto x = rho.view<1>();
//   cunumpy::parallel_for("scale", n, CUNUMPY_LAMBDA(long long i) { x(i) *= 2.0; });
//   cunumpy::parallel_for("laplace", nx, ny, CUNUMPY_LAMBDA(long long i, long long j) {...});
//   double e = cunumpy::parallel_reduce("energy", n, cunumpy::ReduceOp::sum,
//                                       CUNUMPY_LAMBDA(long long i) { return v(i) * v(i); });
//
// A Target (<cunumpy/target.hpp>) passed first decides where the body runs, else the calling
// thread's active backend: a CUDA grid-stride kernel on the target's stream (cuda), an OpenMP
// loop over host memory (host) or over the emulated device's memory (emulated, queued on the
// stream's worker), or a serial loop without OpenMP.
//
//   cunumpy::parallel_for(cunumpy::on(rho), "scale", n, CUNUMPY_LAMBDA(long long i) {...});  Every
//   launch is named and is an NVTX range.
// The cuda path exists in translation units compiled by nvcc (.cu files); calling a loop
// from a host-compiled file while the cuda backend is active throws BackendError that says
// so.  Host reductions combine partials of fixed chunks in chunk order: the same bits on every
// run and for every thread count.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/backend.hpp>
#include <cunumpy/config.cuh>
#include <cunumpy/errors.hpp>
#include <cunumpy/profiling.hpp>
#include <cunumpy/reduce_op.hpp>
#include <cunumpy/stream.hpp>
#include <cunumpy/target.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cunumpy {

// The contiguous part of [0, n) that the calling thread of an OpenMP team takes: part
// omp_get_thread_num() of omp_get_num_threads() (all of it outside a parallel region or
// without OpenMP), as parallel_for's static schedule splits it.  The team may be smaller than
// asked for: its threads share the work.  For host loops of one's own inside `#pragma omp
// parallel`.
inline IndexRange omp_thread_range(long long n) {
#if defined(_OPENMP)
  return split_range(n, omp_get_thread_num(), omp_get_num_threads());
#else
  return {0, n};
#endif
}

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

// Host reductions combine fixed chunks of kReduceChunk indices, each reduced in index order,
// in chunk order: the same bits whatever the number of threads (1 thread or 64, OMP_NUM_THREADS
// or a nested team), and a sum of at most one chunk is the sequential sum.
inline constexpr long long kReduceChunk = 4096;

// Indices [begin, end) reduced in index order, the operation fixed at compile time (no test
// of it per index).
template <ReduceOp Op, typename T, typename F>
T host_reduce_range(long long begin, long long end, F& f) {
  T acc = reduce_identity<T>(Op);
  for (long long i = begin; i < end; ++i) acc = reduce_combine<T>(Op, acc, static_cast<T>(f(i)));
  return acc;
}

template <typename T, typename F>
T host_reduce(long long n, ReduceOp op, F& f) {
  const long long chunks = ceil_div(n, kReduceChunk);
  auto chunk = [&](long long c) {
    const long long begin = c * kReduceChunk, end = std::min(n, begin + kReduceChunk);
    switch (op) {
      case ReduceOp::sum:
        return host_reduce_range<ReduceOp::sum, T>(begin, end, f);
      case ReduceOp::min:
        return host_reduce_range<ReduceOp::min, T>(begin, end, f);
      default:
        return host_reduce_range<ReduceOp::max, T>(begin, end, f);
    }
  };
  if (chunks <= 1) return chunk(0);
  std::vector<T> partial(static_cast<std::size_t>(chunks));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (long long c = 0; c < chunks; ++c) partial[static_cast<std::size_t>(c)] = chunk(c);
  T result = reduce_identity<T>(op);
  for (const T& p : partial) result = reduce_combine<T>(op, result, p);
  return result;
}

}  // namespace detail
}  // namespace cunumpy

#if CUNUMPY_CUDA_COMPILATION()
#include <cunumpy/parallel_cuda.cuh>
#endif

namespace cunumpy {

namespace detail {
// The loops with two copies of one body: host_f for host memory, device_f (an extended
// lambda) for the device, run on `target`.  parallel_for / parallel_reduce pass one body
// twice; CUNUMPY_FOR / CUNUMPY_REDUCE a plain lambda and an extended one.
template <typename HostF, typename DeviceF>
void dual_for(const Target& target, std::string_view name, long long n, HostF host_f,
              [[maybe_unused]] DeviceF device_f) {
  check_extent(name, n);
  const NvtxRange range{std::string(name)};
  if (n == 0) return;
  if (target.backend == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    const StreamScope scope(target.stream);  // the kernel and its allocations on the target's
    cuda_for(name, n, device_f);
#else
    throw_no_cuda_in_translation_unit(name);
#endif
  } else if (target.backend == Backend::emulated) {
    // Queued on the target stream's worker (a copy of the body), or run now on the default
    // stream.
    std::function<void()> work = [n, host_f]() mutable { host_for(n, host_f); };
    if (!emulated_enqueue(target.stream, work)) work();
  } else {
    host_for(n, host_f);
  }
}

template <typename HostF, typename DeviceF>
auto dual_reduce(const Target& target, std::string_view name, long long n, ReduceOp op,
                 HostF host_f, [[maybe_unused]] DeviceF device_f,
                 [[maybe_unused]] std::source_location where) {
  using T = std::decay_t<decltype(host_f(0LL))>;
  static_assert(std::is_arithmetic_v<T>,
                "parallel_reduce: the body must return an arithmetic value");
  check_extent(name, n);
  const NvtxRange range{std::string(name)};
  if (n == 0) return reduce_identity<T>(op);
  if (target.backend == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    const StreamScope scope(target.stream);
    return cuda_reduce<T>(name, n, op, device_f, where);
#else
    throw_no_cuda_in_translation_unit(name);
#endif
  }
  emulated_order(target);                   // the result is read now: after the stream's work
  if (target.backend == Backend::emulated)  // as the cuda path counts its read-back
    record_sync(
        SyncKind::reduction, [&] { return "parallel_reduce(" + std::string(name) + ")"; }, where);
  return host_reduce<T>(n, op, host_f);
}
}  // namespace detail

// Runs f(i) for i in [0, n) on `target` (where the arrays the body reads live: on(array)),
// or on the active backend.
template <typename F>
void parallel_for(const Target& target, std::string_view name, long long n, F f) {
  detail::dual_for(target, name, n, f, f);
}
template <typename F>
void parallel_for(std::string_view name, long long n, F f) {
  detail::dual_for(active_target(), name, n, f, f);
}

// CUNUMPY_FOR(name, n, i, body...): parallel_for(name, n, CUNUMPY_LAMBDA(long long i) {body})
// with the body written once, for hot loops in files compiled by nvcc.  There, an extended
// __host__ __device__ lambda reaches host code through nvcc's type-erased wrapper: an
// indirect call per iteration that stops the host compiler from inlining and vectorising
// the body.  CUNUMPY_FOR gives the host loop a plain lambda of the same body (captures by
// value in both).  In files that the host compiler alone compiles it is parallel_for.
// CUNUMPY_FOR_ON(target, name, n, i, body...) runs it on `target`.
#define CUNUMPY_FOR_ON(target, name, n, i, ...)                                        \
  ::cunumpy::detail::dual_for((target), (name), (n), [=](long long i) { __VA_ARGS__ }, \
                              CUNUMPY_LAMBDA(long long i){__VA_ARGS__})
#define CUNUMPY_FOR(name, n, i, ...) \
  CUNUMPY_FOR_ON(::cunumpy::active_target(), name, n, i, __VA_ARGS__)

// Runs f(i, j) for i in [0, n0), j in [0, n1); j varies fastest.
template <typename F>
void parallel_for(const Target& target, std::string_view name, long long n0, long long n1, F f) {
  detail::check_extent(name, n0);
  detail::check_extent(name, n1);
  parallel_for(
      target, name, n0 * n1, CUNUMPY_LAMBDA(long long k) { f(k / n1, k % n1); });
}
template <typename F>
void parallel_for(std::string_view name, long long n0, long long n1, F f) {
  parallel_for(active_target(), name, n0, n1, f);
}

// Runs f(i, j, k) over [0, n0) x [0, n1) x [0, n2); k varies fastest.
template <typename F>
void parallel_for(const Target& target, std::string_view name, long long n0, long long n1,
                  long long n2, F f) {
  detail::check_extent(name, n0);
  detail::check_extent(name, n1);
  detail::check_extent(name, n2);
  const long long n12 = n1 * n2;
  parallel_for(
      target, name, n0 * n12, CUNUMPY_LAMBDA(long long m) {
        const long long i = m / n12;
        const long long r = m % n12;
        f(i, r / n2, r % n2);
      });
}
template <typename F>
void parallel_for(std::string_view name, long long n0, long long n1, long long n2, F f) {
  parallel_for(active_target(), name, n0, n1, n2, f);
}

// Combines f(i) for i in [0, n) with `op` and returns the result on the host (the identity
// for n == 0: 0, +inf/max, -inf/lowest).  The value type is f's return type.  On cuda the
// result is read back after the kernels finish, on the emulated device after its stream's work:
// either is counted as a reduction synchronisation at the caller's line.
template <typename F>
auto parallel_reduce(const Target& target, std::string_view name, long long n, ReduceOp op, F f,
                     std::source_location where = std::source_location::current()) {
  return detail::dual_reduce(target, name, n, op, f, f, where);
}
template <typename F>
auto parallel_reduce(std::string_view name, long long n, ReduceOp op, F f,
                     std::source_location where = std::source_location::current()) {
  return detail::dual_reduce(active_target(), name, n, op, f, f, where);
}

// CUNUMPY_REDUCE(name, n, op, i, body...): parallel_reduce with the body (which returns the
// value of index i) written once; as CUNUMPY_FOR, a plain lambda runs it on the host.
// CUNUMPY_REDUCE_ON(target, ...) runs it on `target`.
#define CUNUMPY_REDUCE_ON(target, name, n, op, i, ...)                                          \
  ::cunumpy::detail::dual_reduce((target), (name), (n), (op), [=](long long i) { __VA_ARGS__ }, \
                                 CUNUMPY_LAMBDA(long long i){__VA_ARGS__},                      \
                                 std::source_location::current())
#define CUNUMPY_REDUCE(name, n, op, i, ...) \
  CUNUMPY_REDUCE_ON(::cunumpy::active_target(), name, n, op, i, __VA_ARGS__)

}  // namespace cunumpy
