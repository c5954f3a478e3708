// cunumpy/reduce.cuh: warp- and block-level reductions for hand-written kernels: in-kernel
// diagnostics (energy, momentum, total charge, the largest velocity for a CFL check) and
// combining a block's values before one atomic write.
//
//   T cunumpy_warp_sum(T v);   cunumpy_warp_min, cunumpy_warp_max
//   T cunumpy_block_sum(T v);  cunumpy_block_min, cunumpy_block_max
//   void cunumpy_block_sum_to(T* out, T v);   // *out += the block's sum: one atomic per block
//   int cunumpy_block_thread();               // linear thread index in a 1D-3D block
//   int cunumpy_block_threads();              // threads per block
//
// T is int, unsigned, long long, unsigned long long, float or double (block_sum_to: double,
// float, int, unsigned long long).  Every thread gets the result.  Rules: every thread of
// the block calls the block functions and all 32 lanes call the warp functions (no early
// return: threads without a value pass the identity, 0 for a sum); the block size is a
// multiple of 32.  The block functions use 32 values of static shared memory per type and
// may be called several times in a kernel.  Device code only (nvcc, NVRTC).
#pragma once

#include "cunumpy/config.cuh"

#if CUNUMPY_CUDA_COMPILATION()

namespace cunumpy::detail {

struct ReduceSum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct ReduceMin {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct ReduceMax {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T identity) {
  __shared__ T partial[32];
  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int warps = static_cast<int>(blockDim.x * blockDim.y * blockDim.z) / 32;
  v = warp_reduce(v, op);
  __syncthreads();  // an earlier call may still be reading `partial`
  if ((t & 31) == 0) partial[t >> 5] = v;
  __syncthreads();
  // Every warp combines the partials itself, so every thread gets the result.
  v = (t & 31) < warps ? partial[t & 31] : identity;
  return warp_reduce(v, op);
}

template <typename T>
__device__ __forceinline__ T lowest() {
  if constexpr (static_cast<T>(-1) < static_cast<T>(0)) {
    if constexpr (sizeof(T) == 4 && static_cast<T>(0.5) != 0)
      return -3.402823466e+38f;
    else if constexpr (sizeof(T) == 8 && static_cast<T>(0.5) != 0)
      return -1.7976931348623157e+308;
    else
      return static_cast<T>(1ull << (8 * sizeof(T) - 1));
  } else {
    return static_cast<T>(0);
  }
}
template <typename T>
__device__ __forceinline__ T highest() {
  if constexpr (static_cast<T>(0.5) != 0) {
    if constexpr (sizeof(T) == 4)
      return 3.402823466e+38f;
    else
      return 1.7976931348623157e+308;
  } else if constexpr (static_cast<T>(-1) < static_cast<T>(0)) {
    return static_cast<T>(~(1ull << (8 * sizeof(T) - 1)));
  } else {
    return static_cast<T>(~0ull);
  }
}

}  // namespace cunumpy::detail

__device__ __forceinline__ int cunumpy_block_thread() {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}
__device__ __forceinline__ int cunumpy_block_threads() {
  return static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}

template <typename T>
__device__ __forceinline__ T cunumpy_warp_sum(T v) {
  return cunumpy::detail::warp_reduce(v, cunumpy::detail::ReduceSum{});
}
template <typename T>
__device__ __forceinline__ T cunumpy_warp_min(T v) {
  return cunumpy::detail::warp_reduce(v, cunumpy::detail::ReduceMin{});
}
template <typename T>
__device__ __forceinline__ T cunumpy_warp_max(T v) {
  return cunumpy::detail::warp_reduce(v, cunumpy::detail::ReduceMax{});
}

template <typename T>
__device__ __forceinline__ T cunumpy_block_sum(T v) {
  return cunumpy::detail::block_reduce(v, cunumpy::detail::ReduceSum{}, static_cast<T>(0));
}
template <typename T>
__device__ __forceinline__ T cunumpy_block_min(T v) {
  return cunumpy::detail::block_reduce(v, cunumpy::detail::ReduceMin{},
                                       cunumpy::detail::highest<T>());
}
template <typename T>
__device__ __forceinline__ T cunumpy_block_max(T v) {
  return cunumpy::detail::block_reduce(v, cunumpy::detail::ReduceMax{},
                                       cunumpy::detail::lowest<T>());
}

template <typename T>
__device__ __forceinline__ void cunumpy_block_sum_to(T* out, T v) {
  const T s = cunumpy_block_sum(v);
  if (cunumpy_block_thread() == 0) atomicAdd(out, s);
}

#endif  // CUNUMPY_CUDA_COMPILATION()
