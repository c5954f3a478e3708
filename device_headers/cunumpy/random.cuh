// cunumpy/random.cuh: counter-based random numbers (Philox4x32-10, as in Random123 and
// cuRAND), one source for host and device.
//
// A draw is a pure function of (seed, stream, counter): no generator state, so each thread
// draws from, e.g., (seed, particle id, step) and the host computes the very same numbers.
//   key     = seed            (key0 = low 32 bits, key1 = high 32 bits)
//   counter = {counter low, counter high, stream low, stream high}
// The uniforms use 53 random bits and lie in [0, 1); they are bit-identical on every
// backend.  The normals (Box-Muller) use log/sqrt/sin/cos, whose last bits may differ between
// the GPU and the host.  Use a different counter for every random decision of a step.
#pragma once

#include "cunumpy/config.cuh"

#if !CUNUMPY_NVRTC()
#include <cmath>
#endif

struct cunumpy_u32x4 {
  unsigned int v[4];
};

namespace cunumpy::detail {

CUNUMPY_HD_INLINE void philox_mulhilo(unsigned int a, unsigned int b, unsigned int& hi,
                                      unsigned int& lo) {
  const unsigned long long p = static_cast<unsigned long long>(a) * b;
  hi = static_cast<unsigned int>(p >> 32);
  lo = static_cast<unsigned int>(p);
}

CUNUMPY_HD_INLINE void philox_round(unsigned int c[4], unsigned int k0, unsigned int k1) {
  unsigned int hi0, lo0, hi1, lo1;
  philox_mulhilo(0xD2511F53u, c[0], hi0, lo0);
  philox_mulhilo(0xCD9E8D57u, c[2], hi1, lo1);
  const unsigned int n0 = hi1 ^ c[1] ^ k0;
  const unsigned int n2 = hi0 ^ c[3] ^ k1;
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

// 2^-53: turns 53 random bits into [0, 1).
constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;
constexpr double kTwoPi = 6.283185307179586476925286766559;

// The top 53 bits of (hi:lo) times 2^-53, i.e. (hi * 2^21 + (lo >> 11)) * 2^-53.  Every term
// is exact, so any evaluation gives the same bits; the split into 16-bit halves and 21-bit
// parts lets host compilers vectorise it with 32-bit integer conversions.
CUNUMPY_HD_INLINE double bits_to_uniform(unsigned int lo, unsigned int hi) {
  const double high = static_cast<double>(static_cast<int>(hi >> 16)) * 65536.0 +
                      static_cast<double>(static_cast<int>(hi & 0xFFFFu));
  const double low = static_cast<double>(static_cast<int>(lo >> 11));
  return (high * 2097152.0 + low) * kTwoPowMinus53;
}

// Uniform `pair` (0: words 0 and 1, 1: words 2 and 3) of a Philox output: the first word of
// the pair gives the high 32 bits, the second the low ones (as the Python library does; every
// uniform of cunumpy comes from here or from host_fast's vector form of the same rule).
CUNUMPY_HD_INLINE double words_to_uniform(const cunumpy_u32x4& w, int pair) {
  return bits_to_uniform(/*lo=*/w.v[2 * pair + 1], /*hi=*/w.v[2 * pair]);
}

// a + s * u with two roundings (never a fused multiply-add, which nvcc would otherwise use on
// the device), so scaled uniforms are the same bits on host and device.
CUNUMPY_HD_INLINE double scale_shift(double a, double s, double u) {
#if CUNUMPY_DEVICE_PASS()
  return __dadd_rn(a, __dmul_rn(s, u));
#else
  return a + s * u;
#endif
}

}  // namespace cunumpy::detail

// The raw generator: 10 rounds of Philox4x32 on `ctr` with key (key0, key1).
CUNUMPY_HD_INLINE cunumpy_u32x4 cunumpy_philox4x32_10(cunumpy_u32x4 ctr, unsigned int key0,
                                                      unsigned int key1) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    cunumpy::detail::philox_round(ctr.v, key0, key1);
  }
  return ctr;
}

// The four words of (seed, stream, counter).
CUNUMPY_HD_INLINE cunumpy_u32x4 cunumpy_philox_words(unsigned long long seed,
                                                     unsigned long long stream,
                                                     unsigned long long counter) {
  cunumpy_u32x4 c;
  c.v[0] = static_cast<unsigned int>(counter);
  c.v[1] = static_cast<unsigned int>(counter >> 32);
  c.v[2] = static_cast<unsigned int>(stream);
  c.v[3] = static_cast<unsigned int>(stream >> 32);
  return cunumpy_philox4x32_10(c, static_cast<unsigned int>(seed),
                               static_cast<unsigned int>(seed >> 32));
}

// One uniform in [0, 1) (words 0 and 1: word 0 the high bits).
CUNUMPY_HD_INLINE double cunumpy_uniform(unsigned long long seed, unsigned long long stream,
                                         unsigned long long counter) {
  const cunumpy_u32x4 w = cunumpy_philox_words(seed, stream, counter);
  return cunumpy::detail::words_to_uniform(w, 0);
}

// Two uniforms from one call (words 0,1 and 2,3); u0 equals cunumpy_uniform's value.
CUNUMPY_HD_INLINE void cunumpy_uniform2(unsigned long long seed, unsigned long long stream,
                                        unsigned long long counter, double* u0, double* u1) {
  const cunumpy_u32x4 w = cunumpy_philox_words(seed, stream, counter);
  *u0 = cunumpy::detail::words_to_uniform(w, 0);
  *u1 = cunumpy::detail::words_to_uniform(w, 1);
}

// Two standard normals from one call (Box-Muller on uniform2; 1 - u0 keeps the log finite).
CUNUMPY_HD_INLINE void cunumpy_normal2(unsigned long long seed, unsigned long long stream,
                                       unsigned long long counter, double* z0, double* z1) {
  double u0, u1;
  cunumpy_uniform2(seed, stream, counter, &u0, &u1);
  const double r = sqrt(-2.0 * log(1.0 - u0));
  const double a = cunumpy::detail::kTwoPi * u1;
  *z0 = r * cos(a);
  *z1 = r * sin(a);
}

// One standard normal (the first of normal2).
CUNUMPY_HD_INLINE double cunumpy_normal(unsigned long long seed, unsigned long long stream,
                                        unsigned long long counter) {
  double z0, z1;
  cunumpy_normal2(seed, stream, counter, &z0, &z1);
  return z0;
}
