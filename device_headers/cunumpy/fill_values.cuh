// cunumpy/fill_values.cuh: the element formulas of arange and linspace, shared by the
// host loops and the CUDA fill kernels so that every backend produces the same values.
#pragma once

#include <cunumpy/config.cuh>

namespace cunumpy::detail {

// arange: start + i * step, computed in T (as NumPy does for integer and float dtypes).
template <typename T>
CUNUMPY_HD_INLINE T arange_value(T start, T step, long long i) {
  return static_cast<T>(start + static_cast<T>(i) * step);
}

// linspace: start + i * step computed in double, then converted; with `endpoint` the last
// element is exactly `stop` (when there are at least two, as in NumPy).
template <typename T>
CUNUMPY_HD_INLINE T linspace_value(double start, double step, long long i, long long n,
                                   bool endpoint, double stop) {
  if (endpoint && n > 1 && i == n - 1) return static_cast<T>(stop);
  return static_cast<T>(start + static_cast<double>(i) * step);
}

}  // namespace cunumpy::detail
