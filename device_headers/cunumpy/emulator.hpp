// cunumpy/emulator.hpp: the CUDA built-ins for a kernel compiled by the host compiler and run
// by cunumpy's kernel emulator (CUNUMPY_BACKEND=emulated).
//
// The emulator compiles a CudaKernel's source as C++ with this header first: threadIdx,
// blockIdx, blockDim and gridDim, __shared__ (one copy per block), dynamic shared memory,
// __syncthreads (the block's threads run as fibers that meet there, or the kernel is split into
// regions at it: regions() below), the warp functions,
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
#include <new>
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
// A block run in regions (a kernel whose barriers and warp operations the emulator's compiler
// split it at, regions.cpp): every thread runs region `region` to its end, one thread after the
// other, then the block exchanges what they brought to the synchronisation that ends it.
struct RegionRun;
using RegionExchange = void (*)(RegionRun& run, unsigned threads);
// (Counters of types a kernel rarely stores, so that the compiler forwards the block loop's
// stores of them to the kernel's loads.)
struct RegionRun {
  long region;          // the region the block's threads run now (0 first)
  std::size_t current;  // the running thread's linear index
  // Set as the threads arrive (each thread's stores of its own, no count that chains them):
  // the exchange and the synchronisation of the region's end, for a report.
  RegionExchange exchange;
  const char* what;
  // Where each thread goes on (-1: it returned).
  long* nexts;
  // By linear thread index: what each thread brings, what it gets; a shuffle's source lane or
  // offset and its width.
  unsigned long long* values;
  unsigned long long* results;
  int* args;
  int* widths;
  unsigned char* state;  // each thread's values that live across regions
  std::size_t state_capacity;
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
  // Room for `bytes` of the state of a block run in regions (RegionRun::state).
  void (*region_state)(std::size_t bytes);
  // A block run in regions whose threads did not all reach the same synchronisation: throws.
  void (*region_divergence)(const RegionRun* run, unsigned threads);
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
  RegionRun* regions;    // the host thread's
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
// The block's RegionRun (see regions() below): the same for the whole block, so a constant.
[[gnu::const, gnu::noinline]] static RegionRun* region_run() noexcept {
  return index.regions;
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

// A kernel split into regions at its barriers and warp operations (regions.cpp rewrites its
// body into a switch over them): each region a loop over the block's threads, as loop() runs a
// kernel without any, then the exchange of the synchronisation that ended it.  Values that
// live across regions are each thread's region_state.
template <auto Kernel, typename... P, std::size_t... I>
void regions(void (*)(P...), void** args, std::index_sequence<I...>) {
  const std::tuple<std::remove_cv_t<std::remove_reference_t<P>>...> a(
      *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
  Index* const ip = here();
  RegionRun& run = *region_run();
  const dim3 b = ip->block_dim;
  const unsigned threads = b.x * b.y * b.z;
  // A first call as region -1, which runs none of the kernel's regions: its state's room is
  // made there, once a block, not tested at every thread.
  run.region = -1;
  run.current = 0;
  ip->thread = uint3{0, 0, 0};
  Kernel(std::get<I>(a)...);
  run.region = 0;
  for (;;) {
    std::fill(run.nexts, run.nexts + threads, -1L);
    std::size_t t = 0;
    for (unsigned z = 0; z < b.z; ++z)
      for (unsigned y = 0; y < b.y; ++y) {
        ip->thread.z = z;
        ip->thread.y = y;
        for (unsigned x = 0; x < b.x; ++x, ++t) {
          ip->thread.x = x;
          run.current = t;
#if defined(CUNUMPY_BOUNDS_CHECK)
          asm volatile("" : : "r"(ip) : "memory");  // as in loop()
#endif
          Kernel(std::get<I>(a)...);
        }
      }
    // Where the threads go on: all to one region (or all returned), else a report.
    const long next = run.nexts[0];
    long differ = 0;  // (a long's bits, not a bool: the compiler vectorises this loop)
    for (unsigned u = 1; u < threads; ++u) differ |= run.nexts[u] ^ next;
    if (differ != 0) hooks->region_divergence(&run, threads);
    if (next < 0) return;  // every thread returned
    run.exchange(run, threads);
    run.region = next;
  }
}
template <auto Kernel, typename... P>
void regions(void (*k)(P...), void** args) {
  regions<Kernel>(k, args, std::index_sequence_for<P...>{});
}
[[gnu::always_inline]] inline long region_now() {
  return region_run()->region;
}
// The calling thread's values that live across regions: made (default-initialised) in the
// first region, the same object in the later ones; the block's room for them made by the call
// as region -1 (regions() above).
template <typename S>
[[gnu::always_inline]] inline S& region_state() {
  RegionRun& run = *region_run();
  if (run.region < 0) [[unlikely]] {
    const std::size_t bytes = sizeof(S) * static_cast<std::size_t>(here()->block_dim.x) *
                              here()->block_dim.y * here()->block_dim.z;
    if (bytes > run.state_capacity) hooks->region_state(bytes);
  }
  void* p = run.state + sizeof(S) * run.current;
  if (run.region == 0) return *::new (p) S;
  return *std::launder(static_cast<S*>(p));
}
// The calling thread reaches the synchronisation that ends its region (a barrier: nothing
// brought); the block goes on at region `next` once every thread has arrived and `exchange` has
// run.
[[gnu::always_inline]] inline void region_arrive(long next, RegionExchange exchange,
                                                 const char* what) {
  RegionRun& run = *region_run();
  run.nexts[run.current] = next;
  run.exchange = exchange;
  run.what = what;
}
// The same bringing `value` (a reduction, a vote of the block).
[[gnu::always_inline]] inline void region_arrive(long next, RegionExchange exchange,
                                                 const char* what, unsigned long long value) {
  RegionRun& run = *region_run();
  run.values[run.current] = value;
  region_arrive(next, exchange, what);
}
// The same with a shuffle's source lane or offset (a vote's mask) and its width: the exchanges
// that read args and widths follow this form alone.
[[gnu::always_inline]] inline void region_arrive(long next, RegionExchange exchange,
                                                 const char* what, unsigned long long value,
                                                 int arg, int width = 32) {
  RegionRun& run = *region_run();
  run.args[run.current] = arg;
  run.widths[run.current] = width;
  region_arrive(next, exchange, what, value);
}
// What the synchronisation that ended the previous region gave the calling thread.
template <typename T>
[[gnu::always_inline]] inline T region_result() {
  RegionRun& run = *region_run();
  return from_bits<T>(run.results[run.current]);
}

// The exchanges.  A barrier (and __syncwarp: every thread of the block has arrived) exchanges
// nothing.
inline void region_barrier(RegionRun&, unsigned) {}
// The lane a shuffle of kind Op reads for `lane` (`arg`: the source lane or the offset), within
// its segment of `width` lanes (a power of two up to 32, as CUDA requires; other widths are
// taken as 32); a source outside the segment gives the lane itself.
template <int Op>
inline int shuffle_source(int lane, int arg, int width) {
  width = width > 0 && width <= 32 ? width : 32;
  const int segment = lane & ~(width - 1);
  if constexpr (Op == warp_shfl)
    return segment + (arg & (width - 1));
  else if constexpr (Op == warp_shfl_up)
    return lane - arg >= segment ? lane - arg : lane;
  else if constexpr (Op == warp_shfl_down)
    return lane + arg < segment + width ? lane + arg : lane;
  else
    return (lane ^ arg) < segment + width ? lane ^ arg : lane;
}
// A warp shuffle: each lane the value of its source lane (its own where that lane lies past the
// block's last thread), as the fiber engine's.
template <int Op>
inline void region_shuffle(RegionRun& run, unsigned threads) {
  for (unsigned base = 0; base < threads; base += 32) {
    const unsigned end = std::min(base + 32, threads);
    for (unsigned l = base; l < end; ++l) {
      const unsigned from = base + static_cast<unsigned>(shuffle_source<Op>(
                                       static_cast<int>(l - base), run.args[l], run.widths[l]));
      run.results[l] = run.values[from < end ? from : l];
    }
  }
}
// A loop of shuffles, each combined with the lane's value (regions.cpp's warp-shuffle idiom):
// for each warp the whole loop (Loop calls its argument with each offset) in lock step, every
// lane's combination (Combine: value, shuffled value, offset) from the values of the step
// before, as on a GPU.
template <typename T, int Op, typename Combine, typename Loop>
void region_shuffle_loop(RegionRun& run, unsigned threads) {
  for (unsigned base = 0; base < threads; base += 32) {
    const int n = static_cast<int>(std::min(base + 32, threads) - base);
    const int width = run.widths[base] > 0 && run.widths[base] <= 32 ? run.widths[base] : 32;
    T v[32];
    // (8-byte values whole: copies of whole vectors, which the stores before them forward to.)
    if constexpr (sizeof(T) == 8)
      std::memcpy(v, run.values + base, static_cast<std::size_t>(n) * 8);
    else
      for (int l = 0; l < n; ++l) v[l] = from_bits<T>(run.values[base + l]);
    Loop{}([&](auto offset) {
      const int arg = static_cast<int>(offset);
      const auto combine = [&](T a, T b) { return static_cast<T>(Combine{}(a, b, offset)); };
      if (n == 32 && width == 32 && arg >= 0 && arg < 32) {
        // A whole warp in place, no copy: each lane reads a source the loop has not yet
        // combined (upwards for a shuffle down, downwards for one up).
        if constexpr (Op == warp_shfl_down) {
          for (int l = 0; l < 32 - arg; ++l) v[l] = combine(v[l], v[l + arg]);
          for (int l = 32 - arg; l < 32; ++l) v[l] = combine(v[l], v[l]);
        } else if constexpr (Op == warp_shfl_up) {
          for (int l = 31; l >= arg; --l) v[l] = combine(v[l], v[l - arg]);
          for (int l = 0; l < arg; ++l) v[l] = combine(v[l], v[l]);
        } else if constexpr (Op == warp_shfl_xor) {
          T x[32];
          for (int l = 0; l < 32; ++l) x[l] = v[l ^ arg];
          for (int l = 0; l < 32; ++l) v[l] = combine(v[l], x[l]);
        } else {
          const T from = v[arg];
          for (int l = 0; l < 32; ++l) v[l] = combine(v[l], from);
        }
        return;
      }
      T x[32];
      for (int l = 0; l < n; ++l) {
        const int src = shuffle_source<Op>(l, arg, width);
        x[l] = src < n ? v[src] : v[l];
      }
      for (int l = 0; l < n; ++l) v[l] = combine(v[l], x[l]);
    });
    if constexpr (sizeof(T) == 8)
      std::memcpy(run.results + base, v, static_cast<std::size_t>(n) * 8);
    else
      for (int l = 0; l < n; ++l) run.results[base + l] = bits_of(v[l]);
  }
}
// __ballot_sync, __any_sync, __all_sync over each warp's lanes.
template <int Op>
inline void region_vote(RegionRun& run, unsigned threads) {
  for (unsigned base = 0; base < threads; base += 32) {
    const unsigned end = std::min(base + 32, threads);
    unsigned ballot = 0;
    for (unsigned l = base; l < end; ++l) ballot |= (run.values[l] != 0 ? 1u : 0u) << (l - base);
    const unsigned all = end - base == 32 ? ~0u : (1u << (end - base)) - 1;
    for (unsigned l = base; l < end; ++l) {
      if constexpr (Op == warp_ballot)
        run.results[l] = ballot & static_cast<unsigned>(run.args[l]);
      else if constexpr (Op == warp_any)
        run.results[l] = ballot != 0;
      else
        run.results[l] = ballot == all;
    }
  }
}
// __syncthreads_count / _and / _or over the block (0, 1, 2).
template <int Op>
inline void region_block_vote(RegionRun& run, unsigned threads) {
  unsigned long long count = 0;
  for (unsigned t = 0; t < threads; ++t) count += run.values[t] != 0;
  const unsigned long long r = Op == 0 ? count : Op == 1 ? count == threads : count != 0;
  for (unsigned t = 0; t < threads; ++t) run.results[t] = r;
}
}  // namespace cunumpy_emulator
