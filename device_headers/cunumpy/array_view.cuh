// cunumpy/array_view.cuh: strided views Array1D<T> .. Array4D<T>, what kernels take.
//
// A view is a pointer, a shape and strides counted in elements (not bytes), packed with
// the layout of the C struct { T* data; long long shape[N]; long long strides[N]; }:
// 8-byte aligned, sizeof == 8 * (1 + 2 * N).  Kernels index a(i, j) as the Python kernel
// indexed a[i, j].  With CUNUMPY_BOUNDS_CHECK defined every index is checked: on the device
// an out-of-bounds index prints a message and traps the kernel; on the host it throws
// cunumpy::IndexError.
#pragma once

#include "cunumpy/config.cuh"
#include "cunumpy/error.hpp"

#if defined(CUNUMPY_BOUNDS_CHECK) && !CUNUMPY_NVRTC()
#include <string>
#endif
#if defined(CUNUMPY_BOUNDS_CHECK) && CUNUMPY_DEVICE_PASS() && !CUNUMPY_NVRTC()
#include <cstdio>
#endif

namespace cunumpy {

namespace detail {
#if defined(CUNUMPY_BOUNDS_CHECK)
CUNUMPY_HD_INLINE void view_index_failure(int ndim, int axis, long long index, long long extent) {
#if CUNUMPY_DEVICE_PASS()
  printf("cunumpy: Array%dD index %lld out of bounds for axis %d with size %lld\n", ndim, index,
         axis, extent);
  __trap();
#else
  throw IndexError("Array" + std::to_string(ndim) + "D: index " + std::to_string(index) +
                   " is out of bounds for axis " + std::to_string(axis) + " with size " +
                   std::to_string(extent) + "; valid indices are 0.." + std::to_string(extent - 1));
#endif
}
#endif
}  // namespace detail

// A strided view of N dimensions: a pointer, a shape and strides in elements; indexed v(i, j).
template <typename T, int N>
struct ArrayView {
  static_assert(N >= 1 && N <= 4, "cunumpy array views have 1 to 4 dimensions");
  using value_type = T;
  static constexpr int rank = N;

  T* data;
  long long shape[N];
  long long strides[N];

  // Number of elements.
  CUNUMPY_HD_INLINE long long size() const {
    long long n = 1;
    for (int d = 0; d < N; ++d) n *= shape[d];
    return n;
  }

  template <typename... I>
  CUNUMPY_HD_INLINE T& operator()(I... index) const {
    static_assert(sizeof...(I) == N, "an ArrayND view takes exactly N indices");
    const long long idx[N] = {static_cast<long long>(index)...};
    long long offset = 0;
    for (int d = 0; d < N; ++d) {
#if defined(CUNUMPY_BOUNDS_CHECK)
      if (idx[d] < 0 || idx[d] >= shape[d]) detail::view_index_failure(N, d, idx[d], shape[d]);
#endif
      offset += idx[d] * strides[d];
    }
    return data[offset];
  }
};

// The views kernels take, by dimension.
template <typename T>
using Array1D = ArrayView<T, 1>;
template <typename T>
using Array2D = ArrayView<T, 2>;
template <typename T>
using Array3D = ArrayView<T, 3>;
template <typename T>
using Array4D = ArrayView<T, 4>;

// The layout the Python reference and NVRTC kernel arguments rely on.
static_assert(sizeof(Array1D<double>) == 8 * (1 + 2 * 1), "Array1D layout");
static_assert(sizeof(Array2D<double>) == 8 * (1 + 2 * 2), "Array2D layout");
static_assert(sizeof(Array3D<float>) == 8 * (1 + 2 * 3), "Array3D layout");
static_assert(sizeof(Array4D<int>) == 8 * (1 + 2 * 4), "Array4D layout");
static_assert(alignof(Array2D<double>) == 8, "array views are 8-byte aligned");

}  // namespace cunumpy

#if CUNUMPY_NVRTC() || defined(CUNUMPY_EMULATOR)
// Run-time compiled kernels (NVRTC, or the kernel emulator) name the views unqualified, as the
// Python reference does.
using cunumpy::Array1D;
using cunumpy::Array2D;
using cunumpy::Array3D;
using cunumpy::Array4D;
#endif
