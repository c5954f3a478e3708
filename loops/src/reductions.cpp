// sum, min, max and dot of whole arrays (reductions.hpp).  Compiled as CUDA when the CUDA
// backend is built: the reduction loops' device path reduces device arrays.
#include <cunumpy/reductions.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/parallel.hpp>

namespace cunumpy::detail {

namespace {

// The accumulator of a sum: double for floating values, 64-bit integers otherwise.
template <typename T>
using accumulator_t = std::conditional_t<std::is_floating_point_v<T>, double, sum_t<T>>;

// A key in the order of the values (doubles through their bits: exact for every float, double
// and 32-bit integer), with NaN first (min) or last (max), so that one integer reduction finds
// the extreme and sees a NaN.
CUNUMPY_HD_INLINE long long ordered_key(double v, bool max) {
  if (v != v)
    return max ? std::numeric_limits<long long>::max() : std::numeric_limits<long long>::min();
  long long bits;
  memcpy(&bits, &v, sizeof bits);
  return bits >= 0 ? bits : bits ^ std::numeric_limits<long long>::max();
}
CUNUMPY_HD_INLINE double from_key(long long key) {
  const long long bits = key >= 0 ? key : key ^ std::numeric_limits<long long>::max();
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

}  // namespace

template <ReductionValue T>
sum_t<T> array_sum(const Array<T>& a, const Array<T>* b, const std::source_location& where) {
  using A = accumulator_t<T>;
  const long long n = a.size();
  const T* x = a.data();
  const Target target = on(a);
  A result{};
  if (b == nullptr) {
    result = dual_reduce(
        target, "cunumpy::sum", n, ReduceOp::sum, [=](long long i) { return static_cast<A>(x[i]); },
        CUNUMPY_LAMBDA(long long i) { return static_cast<A>(x[i]); }, where);
  } else {
    if (b->shape() != a.shape())
      throw ValueError("cunumpy::dot: the arrays have shapes " + a.shape().str() + " and " +
                       b->shape().str() + "; pass arrays of one shape");
    if (b->backend() != a.backend())
      throw ValueError("cunumpy::dot: one array lives on " + std::string(to_string(a.backend())) +
                       ", the other on " + std::string(to_string(b->backend())) +
                       "; move one of them (to_device / to_host) first");
    const T* y = b->data();
    result = dual_reduce(
        target, "cunumpy::dot", n, ReduceOp::sum,
        [=](long long i) { return static_cast<A>(x[i]) * static_cast<A>(y[i]); },
        CUNUMPY_LAMBDA(long long i) { return static_cast<A>(x[i]) * static_cast<A>(y[i]); }, where);
  }
  return static_cast<sum_t<T>>(result);
}

template <ReductionValue T>
T array_extreme(const Array<T>& a, bool max, const std::source_location& where) {
  const char* what = max ? "cunumpy::max" : "cunumpy::min";
  const long long n = a.size();
  if (n == 0)
    throw ValueError(std::string(what) + ": the array " + a.shape().str() +
                     " is empty and has no extreme; check its size first");
  const T* x = a.data();
  const Target target = on(a);
  T result;
  if constexpr (sizeof(T) == 8 && std::is_integral_v<T>) {
    // 64-bit integers do not all fit a double: reduced as they are.
    result = dual_reduce(
        target, what, n, max ? ReduceOp::max : ReduceOp::min, [=](long long i) { return x[i]; },
        CUNUMPY_LAMBDA(long long i) { return x[i]; }, where);
  } else {
    const long long key = dual_reduce(
        target, what, n, max ? ReduceOp::max : ReduceOp::min,
        [=](long long i) { return ordered_key(static_cast<double>(x[i]), max); },
        CUNUMPY_LAMBDA(long long i) { return ordered_key(static_cast<double>(x[i]), max); }, where);
    result = static_cast<T>(from_key(key));
  }
  return result;
}

#define CUNUMPY_REDUCTIONS(T)                                                                    \
  template sum_t<T> array_sum<T>(const Array<T>&, const Array<T>*, const std::source_location&); \
  template T array_extreme<T>(const Array<T>&, bool, const std::source_location&);
CUNUMPY_REDUCTIONS(float)
CUNUMPY_REDUCTIONS(double)
CUNUMPY_REDUCTIONS(std::int32_t)
CUNUMPY_REDUCTIONS(std::int64_t)
CUNUMPY_REDUCTIONS(std::uint32_t)
CUNUMPY_REDUCTIONS(std::uint64_t)
#undef CUNUMPY_REDUCTIONS

}  // namespace cunumpy::detail
