// cunumpy/emulator_builtins.hpp: the CUDA device API beyond the thread model, for kernels run by
// cunumpy's kernel emulator (included by cunumpy/emulator.hpp after the built-in indices).
//
// Following the CUDA Programming Guide's lists: the built-in vector types and their make_*
// functions; the integer intrinsics; bit casts; conversions with a rounding mode; single- and
// double-precision intrinsics in round-to-nearest; extra mathematical functions; the block votes
// (__syncthreads_count/and/or); the warp reductions and matches; atomics on every width, with
// their _block and _system scopes; cache-hinted loads and stores; clocks.  What the emulator
// cannot do (directed-rounding arithmetic, textures and surfaces, half precision, cooperative
// groups, the pre-CUDA 9 warp functions) is refused by name when a kernel calls it: the host
// compiler stops with "the kernel emulator does not support ...".  Host code only.
#pragma once

#include "cunumpy/emulator.hpp"  // the indices, barriers and warp functions used below

#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <type_traits>

// ---- built-in vector types --------------------------------------------------------------------
// Sizes and alignments as CUDA's vector_types.h: two components aligned to their size, four to
// at most 16 bytes, one and three to the element's.
#define CUNUMPY_EMULATOR_VECTOR(T, name)                            \
  struct name##1 {                                                  \
    T x;                                                            \
  };                                                                \
  struct alignas(2 * sizeof(T)) name##2 {                           \
    T x, y;                                                         \
  };                                                                \
  struct alignas(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16) name##4 { \
    T x, y, z, w;                                                   \
  };                                                                \
  inline name##1 make_##name##1(T x) {                              \
    return {x};                                                     \
  }                                                                 \
  inline name##2 make_##name##2(T x, T y) {                         \
    return {x, y};                                                  \
  }                                                                 \
  inline name##4 make_##name##4(T x, T y, T z, T w) {               \
    return {x, y, z, w};                                            \
  }
#define CUNUMPY_EMULATOR_VECTOR3(T, name)        \
  struct name##3 {                               \
    T x, y, z;                                   \
  };                                             \
  inline name##3 make_##name##3(T x, T y, T z) { \
    return {x, y, z};                            \
  }
CUNUMPY_EMULATOR_VECTOR(signed char, char)
CUNUMPY_EMULATOR_VECTOR3(signed char, char)
CUNUMPY_EMULATOR_VECTOR(unsigned char, uchar)
CUNUMPY_EMULATOR_VECTOR3(unsigned char, uchar)
CUNUMPY_EMULATOR_VECTOR(short, short)
CUNUMPY_EMULATOR_VECTOR3(short, short)
CUNUMPY_EMULATOR_VECTOR(unsigned short, ushort)
CUNUMPY_EMULATOR_VECTOR3(unsigned short, ushort)
CUNUMPY_EMULATOR_VECTOR(int, int)
CUNUMPY_EMULATOR_VECTOR3(int, int)
CUNUMPY_EMULATOR_VECTOR(unsigned int, uint)  // uint3 is the emulator's own (threadIdx)
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return {x, y, z};
}
CUNUMPY_EMULATOR_VECTOR(long, long)
CUNUMPY_EMULATOR_VECTOR3(long, long)
CUNUMPY_EMULATOR_VECTOR(unsigned long, ulong)
CUNUMPY_EMULATOR_VECTOR3(unsigned long, ulong)
CUNUMPY_EMULATOR_VECTOR(long long, longlong)
CUNUMPY_EMULATOR_VECTOR3(long long, longlong)
CUNUMPY_EMULATOR_VECTOR(unsigned long long, ulonglong)
CUNUMPY_EMULATOR_VECTOR3(unsigned long long, ulonglong)
CUNUMPY_EMULATOR_VECTOR(float, float)
CUNUMPY_EMULATOR_VECTOR3(float, float)
CUNUMPY_EMULATOR_VECTOR(double, double)
CUNUMPY_EMULATOR_VECTOR3(double, double)
#undef CUNUMPY_EMULATOR_VECTOR
#undef CUNUMPY_EMULATOR_VECTOR3
inline dim3 make_dim3(unsigned int x, unsigned int y = 1, unsigned int z = 1) {
  return dim3(x, y, z);
}

namespace cunumpy_emulator {
template <typename...>
inline constexpr bool unsupported = false;
}  // namespace cunumpy_emulator

// A CUDA function the emulator refuses: calling it stops the host compiler with its name.
#define CUNUMPY_EMULATOR_REFUSE(name, why)                                 \
  template <typename... A>                                                 \
  inline int name(A&&...) {                                                \
    static_assert(::cunumpy_emulator::unsupported<A...>,                   \
                  "the kernel emulator does not support " #name ": " why); \
    return 0;                                                              \
  }

// ---- integer intrinsics -----------------------------------------------------------------------
inline int __popc(unsigned int x) {
  return std::popcount(x);
}
inline int __popcll(unsigned long long x) {
  return std::popcount(x);
}
inline int __clz(int x) {
  return std::countl_zero(static_cast<unsigned int>(x));
}
inline int __clzll(long long x) {
  return std::countl_zero(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) {  // 1 + the least significant set bit, 0 for 0
  return x == 0 ? 0 : 1 + std::countr_zero(static_cast<unsigned int>(x));
}
inline int __ffsll(long long x) {
  return x == 0 ? 0 : 1 + std::countr_zero(static_cast<unsigned long long>(x));
}
inline unsigned int __brev(unsigned int x) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned int>(x))) << 32) |
         __brev(static_cast<unsigned int>(x >> 32));
}
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  const unsigned long long both = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned int r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned selector = (s >> (4 * i)) & 7u;
    r |= static_cast<unsigned int>((both >> (8 * selector)) & 0xffu) << (8 * i);
  }
  return r;
}
inline int __mul24(int x, int y) {  // the low 24 bits of each, sign-extended
  return ((x << 8) >> 8) * ((y << 8) >> 8);
}
inline unsigned int __umul24(unsigned int x, unsigned int y) {
  return (x & 0xffffffu) * (y & 0xffffffu);
}
inline int __mulhi(int x, int y) {
  return static_cast<int>((static_cast<long long>(x) * y) >> 32);
}
inline unsigned int __umulhi(unsigned int x, unsigned int y) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(x) * y) >> 32);
}
namespace cunumpy_emulator {
__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;
}  // namespace cunumpy_emulator
inline long long __mul64hi(long long x, long long y) {
  return static_cast<long long>((static_cast<cunumpy_emulator::int128>(x) * y) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return static_cast<unsigned long long>((static_cast<cunumpy_emulator::uint128>(x) * y) >> 64);
}
inline unsigned int __sad(int x, int y, unsigned int z) {
  return z + static_cast<unsigned int>(x > y ? static_cast<long long>(x) - y
                                             : static_cast<long long>(y) - x);
}
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) {
  return z + (x > y ? x - y : y - x);
}
inline int __hadd(int x, int y) {
  return static_cast<int>((static_cast<long long>(x) + y) >> 1);
}
inline int __rhadd(int x, int y) {
  return static_cast<int>((static_cast<long long>(x) + y + 1) >> 1);
}
inline unsigned int __uhadd(unsigned int x, unsigned int y) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(x) + y) >> 1);
}
inline unsigned int __urhadd(unsigned int x, unsigned int y) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(x) + y + 1) >> 1);
}
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
  const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned int>((both << (shift & 31u)) >> 32);
}
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
  const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned int>((both << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
  const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned int>(both >> (shift & 31u));
}
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
  const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned int>(both >> (shift < 32u ? shift : 32u));
}

// ---- bit casts ----------------------------------------------------------------------------------
inline int __float_as_int(float x) {
  return std::bit_cast<int>(x);
}
inline unsigned int __float_as_uint(float x) {
  return std::bit_cast<unsigned int>(x);
}
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
inline float __uint_as_float(unsigned int x) {
  return std::bit_cast<float>(x);
}
inline long long __double_as_longlong(double x) {
  return std::bit_cast<long long>(x);
}
inline double __longlong_as_double(long long x) {
  return std::bit_cast<double>(x);
}
inline int __double2hiint(double x) {
  return static_cast<int>(std::bit_cast<unsigned long long>(x) >> 32);
}
inline int __double2loint(double x) {
  return static_cast<int>(static_cast<unsigned int>(std::bit_cast<unsigned long long>(x)));
}
inline double __hiloint2double(int hi, int lo) {
  return std::bit_cast<double>(
      (static_cast<unsigned long long>(static_cast<unsigned int>(hi)) << 32) |
      static_cast<unsigned int>(lo));
}

// ---- conversions with a rounding mode -----------------------------------------------------------
namespace cunumpy_emulator {
enum class Round { rn, rz, ru, rd };
template <Round R, typename F>
inline F rounded(F x) {
  if constexpr (R == Round::rn) return std::nearbyint(x);  // ties to even (the default mode)
  if constexpr (R == Round::rz) return std::trunc(x);
  if constexpr (R == Round::ru) return std::ceil(x);
  if constexpr (R == Round::rd) return std::floor(x);
}
// As CUDA converts: rounded, then saturated to I's range; NaN gives 0.
template <typename I, Round R, typename F>
inline I to_integer(F x) {
  if (std::isnan(x)) return 0;
  const F r = rounded<R>(x);
  if (r <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}
// The value v (exact in long double) to To with rounding R: the nearest, then one step toward
// the side R asks for when the nearest lies on the other side.
template <typename To, Round R>
inline To narrowed(long double v) {
  To t = static_cast<To>(v);
  if constexpr (R == Round::rz) {
    if (std::fabs(static_cast<long double>(t)) > std::fabs(v)) t = std::nextafter(t, To(0));
  } else if constexpr (R == Round::ru) {
    if (static_cast<long double>(t) < v) t = std::nextafter(t, std::numeric_limits<To>::infinity());
  } else if constexpr (R == Round::rd) {
    if (static_cast<long double>(t) > v)
      t = std::nextafter(t, -std::numeric_limits<To>::infinity());
  }
  return t;
}
}  // namespace cunumpy_emulator

#define CUNUMPY_EMULATOR_TO_INT(from, F, to, I)                             \
  inline I __##from##2##to##_rn(F x) {                                      \
    return cunumpy_emulator::to_integer<I, cunumpy_emulator::Round::rn>(x); \
  }                                                                         \
  inline I __##from##2##to##_rz(F x) {                                      \
    return cunumpy_emulator::to_integer<I, cunumpy_emulator::Round::rz>(x); \
  }                                                                         \
  inline I __##from##2##to##_ru(F x) {                                      \
    return cunumpy_emulator::to_integer<I, cunumpy_emulator::Round::ru>(x); \
  }                                                                         \
  inline I __##from##2##to##_rd(F x) {                                      \
    return cunumpy_emulator::to_integer<I, cunumpy_emulator::Round::rd>(x); \
  }
CUNUMPY_EMULATOR_TO_INT(float, float, int, int)
CUNUMPY_EMULATOR_TO_INT(float, float, uint, unsigned int)
CUNUMPY_EMULATOR_TO_INT(float, float, ll, long long)
CUNUMPY_EMULATOR_TO_INT(float, float, ull, unsigned long long)
CUNUMPY_EMULATOR_TO_INT(double, double, int, int)
CUNUMPY_EMULATOR_TO_INT(double, double, uint, unsigned int)
CUNUMPY_EMULATOR_TO_INT(double, double, ll, long long)
CUNUMPY_EMULATOR_TO_INT(double, double, ull, unsigned long long)
#undef CUNUMPY_EMULATOR_TO_INT

#define CUNUMPY_EMULATOR_TO_FLOAT(from, F, to, T)                         \
  inline T __##from##2##to##_rn(F x) {                                    \
    return cunumpy_emulator::narrowed<T, cunumpy_emulator::Round::rn>(x); \
  }                                                                       \
  inline T __##from##2##to##_rz(F x) {                                    \
    return cunumpy_emulator::narrowed<T, cunumpy_emulator::Round::rz>(x); \
  }                                                                       \
  inline T __##from##2##to##_ru(F x) {                                    \
    return cunumpy_emulator::narrowed<T, cunumpy_emulator::Round::ru>(x); \
  }                                                                       \
  inline T __##from##2##to##_rd(F x) {                                    \
    return cunumpy_emulator::narrowed<T, cunumpy_emulator::Round::rd>(x); \
  }
CUNUMPY_EMULATOR_TO_FLOAT(double, double, float, float)
CUNUMPY_EMULATOR_TO_FLOAT(int, int, float, float)
CUNUMPY_EMULATOR_TO_FLOAT(uint, unsigned int, float, float)
CUNUMPY_EMULATOR_TO_FLOAT(ll, long long, float, float)
CUNUMPY_EMULATOR_TO_FLOAT(ull, unsigned long long, float, float)
CUNUMPY_EMULATOR_TO_FLOAT(ll, long long, double, double)
CUNUMPY_EMULATOR_TO_FLOAT(ull, unsigned long long, double, double)
#undef CUNUMPY_EMULATOR_TO_FLOAT
inline double __int2double_rn(int x) {
  return x;
}
inline double __uint2double_rn(unsigned int x) {
  return x;
}

// ---- single- and double-precision intrinsics (round to nearest) --------------------------------
// The emulator compiles with -ffp-contract=off, so a * b + c is not fused, as these promise.
inline float __saturatef(float x) {
  return std::isnan(x) ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __frcp_rn(float a) {
  return 1.0f / a;
}
inline float __fsqrt_rn(float a) {
  return std::sqrt(a);
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dsub_rn(double a, double b) {
  return a - b;
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
inline double __ddiv_rn(double a, double b) {
  return a / b;
}
inline double __drcp_rn(double a) {
  return 1.0 / a;
}
inline double __dsqrt_rn(double a) {
  return std::sqrt(a);
}
inline double __fma_rn(double a, double b, double c) {
  return std::fma(a, b, c);
}
inline float __tanf(float x) {
  return std::tan(x);
}
inline float __exp10f(float x) {
  return std::pow(10.0f, x);
}
inline float __log2f(float x) {
  return std::log2(x);
}
inline float __log10f(float x) {
  return std::log10(x);
}
inline float __powf(float x, float y) {
  return std::pow(x, y);
}
inline void __sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
#define CUNUMPY_EMULATOR_DIRECTED(op)                                                     \
  CUNUMPY_EMULATOR_REFUSE(__f##op##_rz, "directed-rounding arithmetic; use the _rn form") \
  CUNUMPY_EMULATOR_REFUSE(__f##op##_ru, "directed-rounding arithmetic; use the _rn form") \
  CUNUMPY_EMULATOR_REFUSE(__f##op##_rd, "directed-rounding arithmetic; use the _rn form") \
  CUNUMPY_EMULATOR_REFUSE(__d##op##_rz, "directed-rounding arithmetic; use the _rn form") \
  CUNUMPY_EMULATOR_REFUSE(__d##op##_ru, "directed-rounding arithmetic; use the _rn form") \
  CUNUMPY_EMULATOR_REFUSE(__d##op##_rd, "directed-rounding arithmetic; use the _rn form")
CUNUMPY_EMULATOR_DIRECTED(add)
CUNUMPY_EMULATOR_DIRECTED(sub)
CUNUMPY_EMULATOR_DIRECTED(mul)
CUNUMPY_EMULATOR_DIRECTED(div)
#undef CUNUMPY_EMULATOR_DIRECTED

// ---- mathematical functions beyond <cmath> -----------------------------------------------------
inline double sinpi(double x) {
  return std::sin(M_PI * x);
}
inline float sinpif(float x) {
  return static_cast<float>(std::sin(M_PI * static_cast<double>(x)));
}
inline double cospi(double x) {
  return std::cos(M_PI * x);
}
inline float cospif(float x) {
  return static_cast<float>(std::cos(M_PI * static_cast<double>(x)));
}
inline void sincospi(double x, double* s, double* c) {
  *s = sinpi(x);
  *c = cospi(x);
}
inline void sincospif(float x, float* s, float* c) {
  *s = sinpif(x);
  *c = cospif(x);
}
inline double rcbrt(double x) {
  return 1.0 / std::cbrt(x);
}
inline float rcbrtf(float x) {
  return 1.0f / std::cbrt(x);
}
inline double rhypot(double x, double y) {
  return 1.0 / std::hypot(x, y);
}
inline float rhypotf(float x, float y) {
  return 1.0f / std::hypot(x, y);
}
inline double norm3d(double a, double b, double c) {
  return std::hypot(a, b, c);
}
inline float norm3df(float a, float b, float c) {
  return std::hypot(a, b, c);
}
inline double rnorm3d(double a, double b, double c) {
  return 1.0 / std::hypot(a, b, c);
}
inline float rnorm3df(float a, float b, float c) {
  return 1.0f / std::hypot(a, b, c);
}
inline double exp10(double x) {
  return std::pow(10.0, x);
}
inline float exp10f(float x) {
  return std::pow(10.0f, x);
}
inline double normcdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}
inline float normcdff(float x) {
  return 0.5f * std::erfc(-x / std::sqrt(2.0f));
}
inline double saturate(double x) {
  return x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x;
}
using std::abs;
using std::acos;
using std::asin;
using std::atan;
using std::atan2;
using std::cbrt;
using std::copysign;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp2;
using std::expm1;
using std::fmod;
using std::hypot;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::lgamma;
using std::llrint;
using std::llround;
using std::log10;
using std::log1p;
using std::log2;
using std::lrint;
using std::lround;
using std::nearbyint;
using std::remainder;
using std::rint;
using std::round;
using std::signbit;
using std::sinh;
using std::tan;
using std::tanh;
using std::tgamma;
using std::trunc;
CUNUMPY_EMULATOR_REFUSE(erfinv, "no host equivalent in the C++ standard library")
CUNUMPY_EMULATOR_REFUSE(erfinvf, "no host equivalent in the C++ standard library")
CUNUMPY_EMULATOR_REFUSE(erfcinv, "no host equivalent in the C++ standard library")
CUNUMPY_EMULATOR_REFUSE(normcdfinv, "no host equivalent in the C++ standard library")

// ---- block votes --------------------------------------------------------------------------------
namespace cunumpy_emulator {
// One barrier that gathers every thread's predicate; the first thread back counts them.
inline int block_count(int predicate) {
  BlockValues* x = block_exchange(predicate != 0);
  if (x->ready == 0) {
    unsigned long long count = 0;
    for (int t = 0; t < x->threads; ++t) count += x->values[t];
    x->results[0] = count;
    x->ready = 1;
  }
  return static_cast<int>(x->results[0]);
}
}  // namespace cunumpy_emulator
inline int __syncthreads_count(int predicate) {
  return cunumpy_emulator::block_count(predicate);
}
inline int __syncthreads_and(int predicate) {
  return cunumpy_emulator::block_count(predicate) ==
         static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int predicate) {
  return cunumpy_emulator::block_count(predicate) != 0;
}

// ---- warp reductions and matches (sm_80 / sm_70) ------------------------------------------------
namespace cunumpy_emulator {
// Every lane of `mask` brings its value (one exchange); f folds them in lane order.
template <typename T, typename F>
inline T warp_fold(unsigned mask, T value, F f) {
  const WarpValues* x = gather_warp(mask, bits_of(value));
  bool first = true;
  T acc{};
  for (int lane = 0; lane < 32; ++lane) {
    if (((mask >> lane) & 1u) == 0) continue;
    const T v = ((x->live >> lane) & 1u) != 0 ? from_bits<T>(x->values[lane]) : value;
    acc = first ? v : f(acc, v);
    first = false;
  }
  return acc;
}
}  // namespace cunumpy_emulator
template <typename T>
inline T __reduce_add_sync(unsigned mask, T value) {
  return cunumpy_emulator::warp_fold(mask, value, [](T a, T b) { return static_cast<T>(a + b); });
}
template <typename T>
inline T __reduce_min_sync(unsigned mask, T value) {
  return cunumpy_emulator::warp_fold(mask, value, [](T a, T b) { return b < a ? b : a; });
}
template <typename T>
inline T __reduce_max_sync(unsigned mask, T value) {
  return cunumpy_emulator::warp_fold(mask, value, [](T a, T b) { return a < b ? b : a; });
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned value) {
  return cunumpy_emulator::warp_fold(mask, value, [](unsigned a, unsigned b) { return a & b; });
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value) {
  return cunumpy_emulator::warp_fold(mask, value, [](unsigned a, unsigned b) { return a | b; });
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value) {
  return cunumpy_emulator::warp_fold(mask, value, [](unsigned a, unsigned b) { return a ^ b; });
}
// The lanes of `mask` whose value equals this lane's.
template <typename T>
inline unsigned __match_any_sync(unsigned mask, T value) {
  using namespace cunumpy_emulator;
  const WarpValues* x = gather_warp(mask, bits_of(value));
  unsigned same = 0;
  for (int lane = 0; lane < 32; ++lane) {
    if (((mask >> lane) & 1u) == 0) continue;
    const T v = ((x->live >> lane) & 1u) != 0 ? from_bits<T>(x->values[lane]) : value;
    if (v == value) same |= 1u << lane;
  }
  return same;
}
template <typename T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {
  const unsigned same = __match_any_sync(mask, value);
  *pred = same == mask;
  return same == mask ? mask : 0u;
}
CUNUMPY_EMULATOR_REFUSE(__shfl,
                        "the warp functions without _sync were removed in CUDA 9; use __shfl_sync")
CUNUMPY_EMULATOR_REFUSE(__shfl_up, "use __shfl_up_sync")
CUNUMPY_EMULATOR_REFUSE(__shfl_down, "use __shfl_down_sync")
CUNUMPY_EMULATOR_REFUSE(__shfl_xor, "use __shfl_xor_sync")
CUNUMPY_EMULATOR_REFUSE(__ballot, "use __ballot_sync")
CUNUMPY_EMULATOR_REFUSE(__any, "use __any_sync")
CUNUMPY_EMULATOR_REFUSE(__all, "use __all_sync")

// ---- atomics beyond the arithmetic ones ---------------------------------------------------------
inline unsigned int atomicInc(unsigned int* p, unsigned int limit) {
  cunumpy_emulator::counted(p);
  std::atomic_ref<unsigned int> a(*p);
  unsigned int old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, old >= limit ? 0u : old + 1u, std::memory_order_relaxed)) {
  }
  return old;
}
inline unsigned int atomicDec(unsigned int* p, unsigned int limit) {
  cunumpy_emulator::counted(p);
  std::atomic_ref<unsigned int> a(*p);
  unsigned int old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, (old == 0u || old > limit) ? limit : old - 1u,
                                  std::memory_order_relaxed)) {
  }
  return old;
}
// The _block and _system scopes: the emulator's atomics are atomic for the whole process.
#define CUNUMPY_EMULATOR_SCOPES(name)                       \
  template <typename... A>                                  \
  inline auto name##_block(A... a)->decltype(name(a...)) {  \
    return name(a...);                                      \
  }                                                         \
  template <typename... A>                                  \
  inline auto name##_system(A... a)->decltype(name(a...)) { \
    return name(a...);                                      \
  }
CUNUMPY_EMULATOR_SCOPES(atomicAdd)
CUNUMPY_EMULATOR_SCOPES(atomicSub)
CUNUMPY_EMULATOR_SCOPES(atomicExch)
CUNUMPY_EMULATOR_SCOPES(atomicMin)
CUNUMPY_EMULATOR_SCOPES(atomicMax)
CUNUMPY_EMULATOR_SCOPES(atomicInc)
CUNUMPY_EMULATOR_SCOPES(atomicDec)
CUNUMPY_EMULATOR_SCOPES(atomicCAS)
CUNUMPY_EMULATOR_SCOPES(atomicAnd)
CUNUMPY_EMULATOR_SCOPES(atomicOr)
CUNUMPY_EMULATOR_SCOPES(atomicXor)
#undef CUNUMPY_EMULATOR_SCOPES
inline void __threadfence_system() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// ---- cache-hinted loads and stores, clocks ------------------------------------------------------
template <typename T>
inline T __ldcg(const T* p) {
  return *p;
}
template <typename T>
inline T __ldca(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcs(const T* p) {
  return *p;
}
template <typename T>
inline T __ldlu(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcv(const T* p) {
  return *p;
}
template <typename T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stwt(T* p, T v) {
  *p = v;
}
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline void __nanosleep(unsigned int ns) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

// ---- what the emulator refuses ------------------------------------------------------------------
CUNUMPY_EMULATOR_REFUSE(tex1Dfetch, "texture objects; read the array through a pointer or a view")
CUNUMPY_EMULATOR_REFUSE(tex1D, "texture objects; read the array through a pointer or a view")
CUNUMPY_EMULATOR_REFUSE(tex2D, "texture objects; read the array through a pointer or a view")
CUNUMPY_EMULATOR_REFUSE(tex3D, "texture objects; read the array through a pointer or a view")
CUNUMPY_EMULATOR_REFUSE(surf2Dread, "surface objects")
CUNUMPY_EMULATOR_REFUSE(surf2Dwrite, "surface objects")
CUNUMPY_EMULATOR_REFUSE(__float2half, "half precision (cuda_fp16.h)")
CUNUMPY_EMULATOR_REFUSE(__half2float, "half precision (cuda_fp16.h)")
CUNUMPY_EMULATOR_REFUSE(__float2bfloat16, "bfloat16 (cuda_bf16.h)")
#undef CUNUMPY_EMULATOR_REFUSE
