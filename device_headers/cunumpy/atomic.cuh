// cunumpy/atomic.cuh: atomic accumulation for many-threads-to-one-cell writes (deposits).
//
// cunumpy_atomic_add(p, v) does *p += v atomically and returns the old *p; the _2d and _3d
// forms address C-contiguous arrays of shape (n0, n1) and (n0, n1, n2).  On the device they
// are atomicAdd (a hardware instruction for double from sm_60; a compare-and-swap loop
// before); in the kernel emulator, its atomicAdd.  Compiled for the host they are real atomics
// (std::atomic_ref), correct when OpenMP threads of a host parallel_for add to the same cell.
#pragma once

#include "cunumpy/config.cuh"

#if !CUNUMPY_DEVICE_PASS()
#include <atomic>
#endif

namespace cunumpy::detail {

template <typename T>
CUNUMPY_HD_INLINE T atomic_add(T* p, T v) {
#if CUNUMPY_DEVICE_PASS()
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
  if constexpr (sizeof(T) == 8) {
    auto* address = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *address;
    unsigned long long assumed;
    do {
      assumed = old;
      old = atomicCAS(address, assumed, __double_as_longlong(v + __longlong_as_double(assumed)));
    } while (assumed != old);
    return __longlong_as_double(old);
  } else {
    return atomicAdd(p, v);
  }
#else
  return atomicAdd(p, v);
#endif
#elif defined(CUNUMPY_EMULATOR)
  return atomicAdd(p, v);  // the kernel emulator's (cunumpy::count_atomics counts it)
#else
  return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

}  // namespace cunumpy::detail

CUNUMPY_HD_INLINE double cunumpy_atomic_add(double* p, double v) {
  return cunumpy::detail::atomic_add(p, v);
}
CUNUMPY_HD_INLINE float cunumpy_atomic_add(float* p, float v) {
  return cunumpy::detail::atomic_add(p, v);
}

CUNUMPY_HD_INLINE double cunumpy_atomic_add_2d(double* data, long long n1, long long i, long long j,
                                               double v) {
  return cunumpy::detail::atomic_add(data + i * n1 + j, v);
}
CUNUMPY_HD_INLINE float cunumpy_atomic_add_2d(float* data, long long n1, long long i, long long j,
                                              float v) {
  return cunumpy::detail::atomic_add(data + i * n1 + j, v);
}

CUNUMPY_HD_INLINE double cunumpy_atomic_add_3d(double* data, long long n1, long long n2,
                                               long long i, long long j, long long k, double v) {
  return cunumpy::detail::atomic_add(data + (i * n1 + j) * n2 + k, v);
}
CUNUMPY_HD_INLINE float cunumpy_atomic_add_3d(float* data, long long n1, long long n2, long long i,
                                              long long j, long long k, float v) {
  return cunumpy::detail::atomic_add(data + (i * n1 + j) * n2 + k, v);
}
