// cunumpy/emulator.hpp: the CUDA built-ins for a kernel compiled by the host compiler and run
// by cunumpy's kernel emulator (CUNUMPY_BACKEND=emulated).
//
// The emulator compiles a CudaKernel's source as C++ with this header first: threadIdx,
// blockIdx, blockDim and gridDim, __shared__ (one copy per block), dynamic shared memory,
// __syncthreads (the block's threads run as fibers that meet there), the warp functions,
// atomics that stay correct while blocks run on several host threads, __ldg, rsqrt, __trap (an
// exception with the message), and the function qualifiers; cunumpy/emulator_builtins.hpp adds
// the rest of the device API (vector types, intrinsics, votes, ...) and names what is refused.
// Host code only; never included by applications.
#pragma once

// Defined for kernels compiled by the kernel emulator (1).
#define CUNUMPY_EMULATOR 1

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// A kernel is inlined into the loop over its block's threads (loop() below), whatever its
// size: called once a thread, it would keep every value in memory across the call.
#define __global__ __attribute__((always_inline)) inline
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __grid_constant__
// Module-scope data is a variable of the kernel's library (not static: a value set from the
// host, CudaKernel::set_global, must not be folded into the code as a constant).
#define __constant__
// One copy per block: the threads of a block run on one host thread, one block at a time.
#define __shared__ static thread_local
#define __align__(n) alignas(n)

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
      : x(x_), y(y_), z(z_) {}
};

template <typename T>
using complex = std::complex<T>;

namespace cunumpy_emulator {
// What the emulator's engine provides, set once when the kernel's library is loaded.
enum WarpOp : int {
  warp_sync,
  warp_shfl,
  warp_shfl_up,
  warp_shfl_down,
  warp_shfl_xor,
  warp_ballot,
  warp_any,
  warp_all,
  warp_gather  // every lane's value at once: the result is the address of the warp's WarpValues
};
// A warp's values at a warp_gather, by lane (a lane that has returned: `live` lacks its bit).
// `ready` is 0 until the first lane back from the exchange has computed `results` for all.
struct WarpValues {
  unsigned long long values[32];
  unsigned long long results[32];
  unsigned live;
  int ready;
};
// A block's values at a block exchange (a barrier that also gathers), by linear thread index;
// `ready` as above.
struct BlockValues {
  unsigned long long values[1024];
  unsigned long long results[32];
  int threads;
  int ready;
};
// One cunumpy_block_sum_to of a block: the values of the threads that made that call (their
// k-th), `out` as thread 0 gave it.
struct BlockSum {
  unsigned long long values[1024];
  void* out;
};
// The cunumpy_block_sum_to calls of the block a host thread runs (the engine's): `calls` by
// thread, how many it made; `counts` by call, how many values it has; `sums` by call.  Valid
// for the block whose Index::serial equals `serial`; the hook block_sums resets it for a new
// block and makes room for more calls.
// (serial and capacity are of types no store of the loop has, so that the compiler keeps them
// in registers across a block's threads.)
struct BlockSums {
  unsigned long serial;
  unsigned* calls;
  int* counts;
  BlockSum** sums;
  std::size_t capacity;
};
struct Hooks {
  void (*syncthreads)();
  void* (*dynamic_shared)();
  void (*trap)(const char* what, uint3 thread);  // throws: it never returns
  // The lanes of the warp run to the same warp operation and exchange there.
  unsigned long long (*warp)(int op, unsigned mask, unsigned long long value, int arg, int width);
  unsigned (*active_mask)();
  // __syncthreads that also gathers each thread's value.
  BlockValues* (*block_exchange)(unsigned long long value);
  // The block's BlockSums made current (reset when the block is new), with room for `calls`.
  void (*block_sums)(unsigned calls);
  // Atomic counting (cunumpy::count_atomics): nonzero while a counter is alive in the process,
  // then each atomic operation tells the engine its address.
  const std::atomic<int>* counting;
  void (*count_atomic)(const void* address);
};
template <typename T>
inline unsigned long long bits_of(T v) {
  static_assert(sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
  unsigned long long b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T from_bits(unsigned long long b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
inline const Hooks* hooks = nullptr;
struct Index {
  uint3 thread, block;
  dim3 block_dim, grid_dim;
  unsigned long serial;  // the block's, unique on its host thread
  BlockSums* sums;       // the host thread's
};
// The calling host thread's index: the engine sets it through the entry points at the end of this
// header, and a thread suspended at a barrier or a warp operation keeps its own threadIdx on its
// stack and restores it when it resumes.  The kernels reach it through here(), a function the
// compiler may treat as constant (a block runs on one host thread from start to end, fibers
// included, so the address does not change while a kernel runs): its address is computed once
// per block, outside the loop over the block's threads, where GCC recomputed the address of a
// thread-local of a shared library (a call of __tls_get_addr) at every thread.
// Aligned to 64 bytes, so that the library's whole thread-local segment is: glibc then places
// each thread's block of it at a 64-byte boundary, never 16 bytes into a page, where the
// sanitizer runtimes of GCC up to 13 take it for glibc 2.19's layout, read a bogus size before
// it and make LeakSanitizer crash at exit (google/sanitizers#1322) in any program run under
// ASan that ran the emulator.
alignas(64) static thread_local Index index{};
[[gnu::const, gnu::noinline]] static Index* here() noexcept {
  return &index;
}
// A hook that suspends the calling thread (a barrier, a warp operation) and resumes it after
// the other threads ran: threadIdx back to this thread's.
template <typename Hook>
inline auto suspending(Hook hook) {
  Index* const at = here();
  const uint3 me = at->thread;
  if constexpr (std::is_void_v<decltype(hook())>) {
    hook();
    at->thread = me;
  } else {
    const auto result = hook();
    at->thread = me;
    return result;
  }
}
inline unsigned long long warp_op(int op, unsigned mask, unsigned long long value, int arg,
                                  int width) {
  return suspending([&] { return hooks->warp(op, mask, value, arg, width); });
}
inline WarpValues* gather_warp(unsigned mask, unsigned long long value) {
  return reinterpret_cast<WarpValues*>(warp_op(warp_gather, mask, value, 0, 32));
}
inline BlockValues* block_exchange(unsigned long long value) {
  return suspending([&] { return hooks->block_exchange(value); });
}
}  // namespace cunumpy_emulator

#define threadIdx (::cunumpy_emulator::here()->thread)
#define blockIdx (::cunumpy_emulator::here()->block)
#define blockDim (::cunumpy_emulator::here()->block_dim)
#define gridDim (::cunumpy_emulator::here()->grid_dim)
constexpr int warpSize = 32;

inline void __syncthreads() {
  cunumpy_emulator::suspending([] { cunumpy_emulator::hooks->syncthreads(); });
}
inline void* cunumpy_emulator_dynamic_shared() {
  return cunumpy_emulator::hooks->dynamic_shared();
}
[[noreturn]] inline void __trap() {
  cunumpy_emulator::hooks->trap("__trap() called", threadIdx);
  __builtin_unreachable();
}
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  using namespace cunumpy_emulator;
  return from_bits<T>(warp_op(warp_shfl, mask, bits_of(v), src, width));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace cunumpy_emulator;
  return from_bits<T>(warp_op(warp_shfl_up, mask, bits_of(v), static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace cunumpy_emulator;
  return from_bits<T>(warp_op(warp_shfl_down, mask, bits_of(v), static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  using namespace cunumpy_emulator;
  return from_bits<T>(warp_op(warp_shfl_xor, mask, bits_of(v), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(
      cunumpy_emulator::warp_op(cunumpy_emulator::warp_ballot, mask, predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(
      cunumpy_emulator::warp_op(cunumpy_emulator::warp_any, mask, predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(
      cunumpy_emulator::warp_op(cunumpy_emulator::warp_all, mask, predicate != 0, 0, 32));
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)cunumpy_emulator::warp_op(cunumpy_emulator::warp_sync, mask, 0, 0, 32);
}
inline unsigned __activemask() {
  return cunumpy_emulator::hooks->active_mask();
}

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline float __fdividef(float a, float b) {
  return a / b;
}
inline float __expf(float x) {
  return std::exp(x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __sinf(float x) {
  return std::sin(x);
}
inline float __cosf(float x) {
  return std::cos(x);
}
inline void sincos(double x, double* s, double* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline void sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
using std::ceil;
using std::cos;
using std::exp;
using std::fabs;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::log;
using std::max;
using std::min;
using std::pow;
using std::sin;
using std::sqrt;

// Atomics: std::atomic_ref, so blocks on several host threads add correctly; each tells the
// engine its address while an atomic counter is alive.
namespace cunumpy_emulator {
inline void counted(const void* p) {
  if (hooks->counting->load(std::memory_order_relaxed) != 0) [[unlikely]]
    hooks->count_atomic(p);
}
}  // namespace cunumpy_emulator
template <typename T>
inline T atomicAdd(T* p, T v) {
  cunumpy_emulator::counted(p);
  return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
}
template <typename T>
inline T atomicSub(T* p, T v) {
  cunumpy_emulator::counted(p);
  return std::atomic_ref<T>(*p).fetch_sub(v, std::memory_order_relaxed);
}
template <typename T>
inline T atomicExch(T* p, T v) {
  cunumpy_emulator::counted(p);
  return std::atomic_ref<T>(*p).exchange(v, std::memory_order_relaxed);
}
template <typename T>
inline T atomicCAS(T* p, T expected, T desired) {
  cunumpy_emulator::counted(p);
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected;
}
namespace cunumpy_emulator {
// Stores v where better(v, current) holds, atomically; returns the old value.
template <typename T, typename Better>
inline T atomic_extreme(T* p, T v, Better better) {
  counted(p);
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (better(v, old) && !a.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
}
}  // namespace cunumpy_emulator
template <typename T>
inline T atomicMax(T* p, T v) {
  return cunumpy_emulator::atomic_extreme(p, v, [](T a, T b) { return b < a; });
}
template <typename T>
inline T atomicMin(T* p, T v) {
  return cunumpy_emulator::atomic_extreme(p, v, [](T a, T b) { return a < b; });
}
template <typename T>
inline T atomicAnd(T* p, T v) {
  cunumpy_emulator::counted(p);
  return std::atomic_ref<T>(*p).fetch_and(v, std::memory_order_relaxed);
}
template <typename T>
inline T atomicOr(T* p, T v) {
  cunumpy_emulator::counted(p);
  return std::atomic_ref<T>(*p).fetch_or(v, std::memory_order_relaxed);
}
template <typename T>
inline T atomicXor(T* p, T v) {
  cunumpy_emulator::counted(p);
  return std::atomic_ref<T>(*p).fetch_xor(v, std::memory_order_relaxed);
}

// Vector types, intrinsics, conversions, votes, warp reductions, more atomics; what the
// emulator refuses, by name.
#include "cunumpy/emulator_builtins.hpp"

// The emulator's entries: calls `kernel` with the packed arguments (each points to one
// parameter's bytes, as cudaLaunchKernel takes them).
namespace cunumpy_emulator {
// The block's index, its shape and the grid's, before the block runs: the first access to the
// thread-local index on a host thread, and the first after another library was loaded.  Those
// take the slow path of __tls_get_addr (glibc allocating the thread's block, or a sanitizer's
// interceptor), which may clobber vector registers clang keeps live across that call (zmm16 to
// zmm31 with AVX-512): the address is taken before `from` is read, the empty asm keeping the two
// apart, so nothing is live across it and the kernel's own accesses find the fast path.
inline void set_index(const Index& from) {
  Index* to = &index;
  asm volatile("" : "+r"(to) : : "memory");
  *to = from;
}
inline void set_thread(const uint3& thread) {
  here()->thread = thread;
}
template <typename... P, std::size_t... I>
void call(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}
template <typename... P>
void call(void (*kernel)(P...), void** args) {
  call(kernel, args, std::index_sequence_for<P...>{});
}

// Every thread of a block without barriers, one after the other: the arguments unpacked once,
// the kernel (a constant) inlined into the loop.
template <auto Kernel, typename... P, std::size_t... I>
void loop(void (*)(P...), void** args, std::index_sequence<I...>) {
  const std::tuple<std::remove_cv_t<std::remove_reference_t<P>>...> a(
      *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
  // The index's address once (see `index`); the stores of threadIdx are forwarded to the
  // kernel's reads, and the reads of blockIdx and blockDim leave the loop.
  Index* const ip = here();
  const dim3 b = ip->block_dim;
  for (unsigned z = 0; z < b.z; ++z)
    for (unsigned y = 0; y < b.y; ++y) {
      ip->thread.z = z;
      ip->thread.y = y;
      for (unsigned x = 0; x < b.x; ++x) {
        ip->thread.x = x;
#if defined(CUNUMPY_BOUNDS_CHECK)
        // Debug mode: the index in memory at every thread, for the report of a failing one
        // (the compiler would otherwise keep it in a register and store it after the loop).
        asm volatile("" : : "r"(ip) : "memory");
#endif
        Kernel(std::get<I>(a)...);
      }
    }
}
template <auto Kernel, typename... P>
void loop(void (*k)(P...), void** args) {
  loop<Kernel>(k, args, std::index_sequence_for<P...>{});
}
}  // namespace cunumpy_emulator
