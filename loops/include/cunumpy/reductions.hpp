// cunumpy/reductions.hpp: sum, min, max and dot of whole arrays on any backend, the reductions
// a diagnostics loop needs (numpy.sum, numpy.min, numpy.max, numpy.dot of flat arrays).
//
//   const double kinetic = 0.5 * mass * cunumpy::dot(vx, vx);   // on vx's backend
//   const float charge = cunumpy::sum(rho);
//   const double lo = cunumpy::min(x), hi = cunumpy::max(x);
//
// Each runs where its arrays live (the host's OpenMP threads over fixed chunks: the same bits
// for every thread count; the emulated device after its stream's work; a CUDA kernel on the
// array's stream) over every element, read as flat, and returns the value on the host: on a
// device backend one synchronisation of kind reduction, at the caller's line.  Floating sums and
// dot products accumulate in double (float arrays too) and return the element type, as numpy
// returns float32 for float32 (numpy adds pairwise in float32: the last bits may differ, ours are
// closer to the exact sum); integer sums and dot products return int64 (uint64 for unsigned),
// numpy's type on Linux.  min and max are exact and return NaN when an element is NaN (as numpy's
// do); they raise ValueError for an empty array (numpy raises too), sum and dot return 0.
#pragma once

#include <cstdint>
#include <source_location>
#include <type_traits>

#include <cunumpy/array.hpp>

namespace cunumpy {

// The element types the reductions take.
template <typename T>
concept ReductionValue = std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>;

// The type sum and dot return for elements of type T.
template <ReductionValue T>
using sum_t =
    std::conditional_t<std::is_floating_point_v<T>, T,
                       std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;

namespace detail {
template <ReductionValue T>
sum_t<T> array_sum(const Array<T>& a, const Array<T>* b, const std::source_location& where);
template <ReductionValue T>
T array_extreme(const Array<T>& a, bool max, const std::source_location& where);
}  // namespace detail

// The sum of every element (numpy.sum(a)).
template <ReductionValue T>
sum_t<T> sum(const Array<T>& a, std::source_location where = std::source_location::current()) {
  return detail::array_sum<T>(a, nullptr, where);
}

// The smallest element (numpy.min(a)): NaN when one is NaN; ValueError when a is empty.
template <ReductionValue T>
T min(const Array<T>& a, std::source_location where = std::source_location::current()) {
  return detail::array_extreme<T>(a, false, where);
}

// The largest element (numpy.max(a)): NaN when one is NaN; ValueError when a is empty.
template <ReductionValue T>
T max(const Array<T>& a, std::source_location where = std::source_location::current()) {
  return detail::array_extreme<T>(a, true, where);
}

// The sum of a[i] * b[i] over every element (numpy.dot of the flat arrays, numpy.vdot): the
// shapes must be equal and both arrays on one backend (ValueError otherwise).
template <ReductionValue T>
sum_t<T> dot(const Array<T>& a, const Array<T>& b,
             std::source_location where = std::source_location::current()) {
  return detail::array_sum<T>(a, &b, where);
}

}  // namespace cunumpy
