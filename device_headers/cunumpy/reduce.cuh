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
// may be called several times in a kernel.  Device code only (nvcc, NVRTC, the emulator: there
// a warp reduction is one exchange, a block reduction one barrier and block_sum_to none; the
// results round as on a GPU).
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

#if defined(CUNUMPY_EMULATOR)
// The kernel emulator: a warp reduction is one exchange of the warp's values and a block
// reduction one barrier (not five shuffles, or ten and two barriers, each a switch between the
// emulated threads); the first thread back computes every thread's result in the order the
// shuffles below combine them on a GPU, so the sums round as there.

// The xor butterfly of warp_reduce below over one warp's values, in place: at each step lane l
// combines its value with lane l ^ offset's, or with its own where that lane is not `live` (a
// shuffle from a lane that has returned gives the caller's own value).
template <typename T, typename Op>
inline void butterfly(T (&v)[32], unsigned live, Op op) {
  if constexpr (std::is_same_v<Op, ReduceSum>) {
    if (live == ~0u) {  // a sum: every lane gets lane 0's (a + b is b + a), 31 adds
      for (int offset = 16; offset > 0; offset >>= 1)
        for (int l = 0; l < offset; ++l) v[l] = op(v[l], v[l + offset]);
      for (int l = 1; l < 32; ++l) v[l] = v[0];
      return;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    T next[32];
    for (int l = 0; l < 32; ++l) {
      const int from = l ^ offset;
      next[l] = op(v[l], ((live >> from) & 1u) != 0 ? v[from] : v[l]);
    }
    for (int l = 0; l < 32; ++l) v[l] = next[l];
  }
}

// block_reduce below for the values of a whole block, by linear thread index: each warp's
// butterfly, its lane 0 into the partials, then the butterfly of the partials that every warp
// makes.  `results` gets lane l's result (every warp's lane l gets the same).
template <typename T, typename Op>
inline void block_tree(const unsigned long long* values, int threads, Op op, T identity,
                       unsigned long long (&results)[32]) {
  T partial[32];
  const int warps = threads / 32;
  for (int w = 0; w * 32 < threads; ++w) {
    T v[32];
    const int lanes = threads - 32 * w < 32 ? threads - 32 * w : 32;
    bool copied = false;
    if constexpr (sizeof(T) == 8)  // a whole warp of 8-byte values: one copy
      if (lanes == 32) {
        std::memcpy(v, values + 32 * w, sizeof v);
        copied = true;
      }
    if (!copied)
      for (int l = 0; l < 32; ++l)
        v[l] = l < lanes ? cunumpy_emulator::from_bits<T>(values[32 * w + l]) : identity;
    butterfly(v, lanes == 32 ? ~0u : (1u << lanes) - 1u, op);
    partial[w] = v[0];
  }
  T v[32];
  for (int l = 0; l < 32; ++l) v[l] = l < warps ? partial[l] : identity;
  butterfly(v, ~0u, op);
  for (int l = 0; l < 32; ++l) results[l] = cunumpy_emulator::bits_of(v[l]);
}

template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  cunumpy_emulator::WarpValues* x =
      cunumpy_emulator::gather_warp(0xffffffffu, cunumpy_emulator::bits_of(v));
  if (x->ready == 0) {
    T all[32];
    for (int l = 0; l < 32; ++l) all[l] = cunumpy_emulator::from_bits<T>(x->values[l]);
    butterfly(all, x->live, op);
    for (int l = 0; l < 32; ++l) x->results[l] = cunumpy_emulator::bits_of(all[l]);
    x->ready = 1;
  }
  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return cunumpy_emulator::from_bits<T>(x->results[t & 31]);
}

template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T identity) {
  cunumpy_emulator::BlockValues* x = cunumpy_emulator::block_exchange(cunumpy_emulator::bits_of(v));
  if (x->ready == 0) {
    block_tree(x->values, x->threads, op, identity, x->results);
    x->ready = 1;
  }
  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return cunumpy_emulator::from_bits<T>(x->results[t & 31]);
}
#else
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

#endif  // CUNUMPY_EMULATOR

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

#if defined(CUNUMPY_EMULATOR)
// The kernel emulator adds the block's sum when the block's last thread has called (no
// barrier: a kernel whose only synchronisation this is runs its threads as a loop).  The add is
// thread 0's on a GPU; here it comes later, as the other threads' calls do: read *out after
// a __syncthreads() or after the kernel, as on a GPU the other threads must.
namespace cunumpy::detail {
// The block's last value of a cunumpy_block_sum_to call: thread 0's add.
template <typename T>
[[gnu::noinline]] void add_block_sum(const cunumpy_emulator::BlockSum* sum, int threads) {
  unsigned long long results[32];
  block_tree(sum->values, threads, ReduceSum{}, static_cast<T>(0), results);
  atomicAdd(static_cast<T*>(sum->out), cunumpy_emulator::from_bits<T>(results[0]));
}
}  // namespace cunumpy::detail
// A kernel run in regions (the emulator split it at its synchronisations): a block or warp
// reduction ends a region; the exchange combines the values in the GPU's order.
namespace cunumpy::detail {
template <typename T, typename Op>
inline T identity_of() {
  if constexpr (std::is_same_v<Op, ReduceMin>)
    return highest<T>();
  else if constexpr (std::is_same_v<Op, ReduceMax>)
    return lowest<T>();
  else
    return static_cast<T>(0);
}
template <typename T, typename Op>
void region_block_exchange(cunumpy_emulator::RegionRun& run, unsigned threads) {
  unsigned long long results[32];
  block_tree(run.values, static_cast<int>(threads), Op{}, identity_of<T, Op>(), results);
  unsigned t = 0;
  for (; t + 32 <= threads; t += 32) std::memcpy(run.results + t, results, sizeof results);
  for (; t < threads; ++t) run.results[t] = results[t & 31];
}
template <typename T, typename Op>
void region_warp_exchange(cunumpy_emulator::RegionRun& run, unsigned threads) {
  for (unsigned base = 0; base < threads; base += 32) {
    const unsigned lanes = threads - base < 32 ? threads - base : 32;
    T all[32];
    for (unsigned l = 0; l < 32; ++l)
      all[l] =
          l < lanes ? cunumpy_emulator::from_bits<T>(run.values[base + l]) : identity_of<T, Op>();
    butterfly(all, lanes == 32 ? ~0u : (1u << lanes) - 1u, Op{});
    for (unsigned l = 0; l < lanes; ++l) run.results[base + l] = cunumpy_emulator::bits_of(all[l]);
  }
}
template <typename T, typename Op>
[[gnu::always_inline]] inline void region_block(long next, T v) {
  cunumpy_emulator::region_arrive(next, &region_block_exchange<T, Op>, "a block reduction",
                                  cunumpy_emulator::bits_of(v));
}
template <typename T, typename Op>
[[gnu::always_inline]] inline void region_warp(long next, T v) {
  cunumpy_emulator::region_arrive(next, &region_warp_exchange<T, Op>, "a warp reduction",
                                  cunumpy_emulator::bits_of(v));
}
}  // namespace cunumpy::detail
// Inlined into the loop over the block's threads: a few loads and stores a thread.
template <typename T>
[[gnu::always_inline]] inline void cunumpy_block_sum_to(T* out, T v) {
  using namespace cunumpy_emulator;
  Index* const index = here();
  BlockSums* const state = index->sums;
  if (state->serial != index->serial) hooks->block_sums(0);  // the block's first call
  const int t = cunumpy_block_thread(), threads = cunumpy_block_threads();
  const unsigned k = state->calls[t]++;
  if (k >= state->capacity) hooks->block_sums(k + 1);
  BlockSum* const sum = state->sums[k];
  sum->values[t] = bits_of(v);
  if (t == 0) sum->out = out;
  if (++state->counts[k] == threads) cunumpy::detail::add_block_sum<T>(sum, threads);
}
#else
template <typename T>
__device__ __forceinline__ void cunumpy_block_sum_to(T* out, T v) {
  const T s = cunumpy_block_sum(v);
  if (cunumpy_block_thread() == 0) atomicAdd(out, s);
}
#endif

#endif  // CUNUMPY_CUDA_COMPILATION()
