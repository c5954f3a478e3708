#include "host_fast.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

#include <cunumpy/morton.cuh>
#include <cunumpy/parallel.hpp>
#include <cunumpy/random.cuh>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CUNUMPY_HOST_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CUNUMPY_HOST_CLONES
#endif

// Hand-vectorised Philox for CPUs with AVX-512 (F and DQ), chosen at run time.
#if defined(__GNUC__) && defined(__x86_64__)
#define CUNUMPY_HOST_AVX512 1
#define CUNUMPY_AVX512_TARGET __attribute__((target("avx512f,avx512dq")))
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_*() (GCC
// bug 105593); the warning is about the header, not this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#else
#define CUNUMPY_HOST_AVX512 0
#endif

namespace cunumpy::detail::host_fast {

namespace {

// Whether the hand-vectorised paths run, and why: the CPU's AVX-512 (F, DQ, VL, BW) and
// CUNUMPY_HOST_SIMD (auto, the default: when the CPU has it; portable: never; avx512: when the
// CPU has it, saying so when it does not).  Read once.
struct SimdChoice {
  bool avx512 = false;
  std::string report;
};

const SimdChoice& simd_choice() {
  static const SimdChoice choice = [] {
    SimdChoice c;
#if CUNUMPY_HOST_AVX512
    const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    const std::string why_not = "this CPU lacks AVX-512 F, DQ, VL or BW";
#else
    const bool cpu = false;
    const std::string why_not = "built without the x86-64 AVX-512 paths (not GCC/Clang on x86-64)";
#endif
    const char* env = std::getenv("CUNUMPY_HOST_SIMD");
    const std::string asked = env == nullptr ? "" : env;
    std::string lower;
    for (const char ch : asked)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "portable") {
      c.report = "portable (CUNUMPY_HOST_SIMD=" + asked + ")";
      return c;
    }
    std::string note;
    if (!lower.empty() && lower != "auto" && lower != "avx512")
      note = "; CUNUMPY_HOST_SIMD=" + asked + " is not understood (auto, avx512 or portable)";
    c.avx512 = cpu;
    c.report = cpu ? "avx512" + note : "portable (" + why_not + ")" + note;
    return c;
  }();
  return choice;
}

}  // namespace

bool cpu_has_avx512() {
  return simd_choice().avx512;
}
std::string simd_report() {
  return simd_choice().report;
}

namespace {

#if CUNUMPY_HOST_AVX512
bool has_avx512() {
  return cpu_has_avx512();
}

// Philox4x32-10 of eight counters at once, one per 64-bit lane (the 32-bit words in the low
// halves; what the high halves hold is ignored: the multiplies read only the low halves, and
// the results are masked).  The same rounds as cunumpy_philox4x32_10, so the same words.
struct Philox8 {
  __m512i k0[10], k1[10];
  CUNUMPY_AVX512_TARGET explicit Philox8(std::uint64_t seed) {
    const auto s0 = static_cast<std::uint32_t>(seed), s1 = static_cast<std::uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      k0[r] = _mm512_set1_epi64(
          static_cast<std::uint32_t>(s0 + static_cast<std::uint32_t>(r) * 0x9E3779B9u));
      k1[r] = _mm512_set1_epi64(
          static_cast<std::uint32_t>(s1 + static_cast<std::uint32_t>(r) * 0xBB67AE85u));
    }
  }
  // Rounds `first`..9 of the state c[4]; round 9 (the last) computes every word.
  CUNUMPY_AVX512_TARGET void rounds(__m512i c[4], int first) const {
    const __m512i m0 = _mm512_set1_epi64(0xD2511F53u), m1 = _mm512_set1_epi64(0xCD9E8D57u);
    for (int r = first; r < 10; ++r) {
      const __m512i q0 = _mm512_mul_epu32(c[0], m0), q1 = _mm512_mul_epu32(c[2], m1);
      // 0x96: a ^ b ^ c
      c[0] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(q1, 32), c[1], k0[r], 0x96);
      c[2] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(q0, 32), c[3], k1[r], 0x96);
      c[1] = q1;
      c[3] = q0;
    }
  }
};

// bits_to_uniform(lo, hi) of eight word pairs (words_to_uniform's rule: the pair's first word
// is hi): the 53-bit integer (hi << 21 | lo >> 11), exact
// as a double, times 2^-53.
CUNUMPY_AVX512_TARGET inline __m512d uniform8(__m512i lo, __m512i hi) {
  const __m512i low21 =
      _mm512_and_si512(_mm512_srli_epi64(lo, 11), _mm512_set1_epi64((1 << 21) - 1));
  // 0xEA: (a & b) | c
  const __m512i bits = _mm512_ternarylogic_epi64(_mm512_slli_epi64(hi, 21),
                                                 _mm512_set1_epi64((1LL << 53) - 1), low21, 0xEA);
  return _mm512_mul_pd(_mm512_cvtepu64_pd(bits), _mm512_set1_pd(kTwoPowMinus53));
}

// uniform_ids_range for multiples of eight elements; returns where it stopped.  The counter is
// the same for every element, so the first round's multiply of counter word 0 is done once.
CUNUMPY_AVX512_TARGET long long uniform_ids_avx512(double* __restrict out0, double* __restrict out1,
                                                   std::uint64_t seed,
                                                   const std::uint64_t* __restrict stream,
                                                   std::uint64_t counter, long long begin,
                                                   long long end) {
  const Philox8 philox(seed);
  const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * static_cast<std::uint32_t>(counter);
  const __m512i hi0 = _mm512_set1_epi64(static_cast<std::uint32_t>(p0 >> 32));
  const __m512i lo0 = _mm512_set1_epi64(static_cast<std::uint32_t>(p0));
  const __m512i c1k0 = _mm512_set1_epi64(static_cast<std::uint32_t>(counter >> 32) ^
                                         static_cast<std::uint32_t>(seed));
  const __m512i m1 = _mm512_set1_epi64(0xCD9E8D57u);
  long long i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m512i s = _mm512_loadu_si512(stream + i);  // words 2 (low half) and 3 (high half)
    const __m512i q1 = _mm512_mul_epu32(s, m1);
    __m512i c[4] = {_mm512_xor_si512(_mm512_srli_epi64(q1, 32), c1k0), q1,
                    _mm512_ternarylogic_epi64(hi0, _mm512_srli_epi64(s, 32), philox.k1[0], 0x96),
                    lo0};
    philox.rounds(c, 1);
    _mm512_storeu_pd(out0 + i, uniform8(/*lo=*/c[1], /*hi=*/c[0]));
    if (out1 != nullptr) _mm512_storeu_pd(out1 + i, uniform8(/*lo=*/c[3], /*hi=*/c[2]));
  }
  return i;
}

// uniform_pairs_range for multiples of eight pairs (counters base + p, one stream): out[2p] and
// out[2p + 1] = a + (b - a) * u, a multiply then an add (no fused multiply-add), as on the device.
CUNUMPY_AVX512_TARGET long long uniform_pairs_avx512(double* __restrict out, std::uint64_t seed,
                                                     std::uint64_t stream, std::uint64_t base,
                                                     double a, double b, long long begin,
                                                     long long end) {
  const Philox8 philox(seed);
  const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i c2 = _mm512_set1_epi64(static_cast<std::uint32_t>(stream));
  const __m512i c3 = _mm512_set1_epi64(static_cast<std::uint32_t>(stream >> 32));
  const __m512d va = _mm512_set1_pd(a), vs = _mm512_set1_pd(b - a);
  const __m512i first_half = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
  const __m512i second_half = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
  long long p = begin;
  for (; p + 8 <= end; p += 8) {
    const __m512i ctr = _mm512_add_epi64(
        _mm512_set1_epi64(static_cast<long long>(base + static_cast<std::uint64_t>(p))), lane);
    __m512i c[4] = {ctr, _mm512_srli_epi64(ctr, 32), c2, c3};
    philox.rounds(c, 0);
    const __m512d u01 = uniform8(/*lo=*/c[1], /*hi=*/c[0]),
                  u23 = uniform8(/*lo=*/c[3], /*hi=*/c[2]);
    const __m512d x01 = _mm512_add_pd(va, _mm512_mul_pd(vs, u01)),
                  x23 = _mm512_add_pd(va, _mm512_mul_pd(vs, u23));
    _mm512_storeu_pd(out + 2 * p, _mm512_permutex2var_pd(x01, first_half, x23));
    _mm512_storeu_pd(out + 2 * p + 8, _mm512_permutex2var_pd(x01, second_half, x23));
  }
  return p;
}

// Spreads the low 21 bits of each lane to every third bit (cunumpy_morton_spread3).
CUNUMPY_AVX512_TARGET inline __m512i spread3x8(__m512i v) {
  // 0xA8: (a | b) & c
  v = _mm512_and_si512(v, _mm512_set1_epi64(0x1FFFFF));
  v = _mm512_ternarylogic_epi64(v, _mm512_slli_epi64(v, 32),
                                _mm512_set1_epi64(0x001F00000000FFFFLL), 0xA8);
  v = _mm512_ternarylogic_epi64(v, _mm512_slli_epi64(v, 16),
                                _mm512_set1_epi64(0x001F0000FF0000FFLL), 0xA8);
  v = _mm512_ternarylogic_epi64(v, _mm512_slli_epi64(v, 8), _mm512_set1_epi64(0x100F00F00F00F00FLL),
                                0xA8);
  v = _mm512_ternarylogic_epi64(v, _mm512_slli_epi64(v, 4), _mm512_set1_epi64(0x10C30C30C30C30C3LL),
                                0xA8);
  v = _mm512_ternarylogic_epi64(v, _mm512_slli_epi64(v, 2), _mm512_set1_epi64(0x1249249249249249LL),
                                0xA8);
  return v;
}

// cunumpy_morton_cell of eight coordinates, levels <= 21: (x - lower) * scale (a rounded
// product, no fused multiply-add), NaN and below the box to 0, above it to the last cell,
// truncated.
CUNUMPY_AVX512_TARGET inline __m512i cell8(__m512d x, __m512d lower, __m512d scale, __m512d top) {
  __m512d c = _mm512_mul_pd(_mm512_sub_pd(x, lower), scale);
  c = _mm512_max_pd(c, _mm512_setzero_pd());  // (c > 0) ? c : 0, so NaN -> 0
  c = _mm512_min_pd(c, top);                  // (c < top) ? c : top
  return _mm512_cvtepu32_epi64(_mm512_cvttpd_epi32(c));
}

// morton3_range for multiples of eight points; returns where it stopped.
CUNUMPY_AVX512_TARGET long long morton3_avx512(std::uint64_t* __restrict keys,
                                               const double* __restrict x, double l0, double l1,
                                               double l2, double s0, double s1, double s2,
                                               int levels, long long begin, long long end) {
  const __m512d lo0 = _mm512_set1_pd(l0), lo1 = _mm512_set1_pd(l1), lo2 = _mm512_set1_pd(l2);
  const __m512d sc0 = _mm512_set1_pd(s0), sc1 = _mm512_set1_pd(s1), sc2 = _mm512_set1_pd(s2);
  const __m512d top = _mm512_set1_pd(static_cast<double>((1ull << levels) - 1ull));
  // Rows (x, y, z) of eight points are 24 doubles in three vectors a, b, c; axis k of point p
  // is element 3p + k.  Two two-source permutes per axis pick its eight values.
  const __m512i first[3] = {_mm512_set_epi64(0, 0, 15, 12, 9, 6, 3, 0),
                            _mm512_set_epi64(0, 0, 0, 13, 10, 7, 4, 1),
                            _mm512_set_epi64(0, 0, 0, 14, 11, 8, 5, 2)};
  const __m512i second[3] = {_mm512_set_epi64(13, 10, 5, 4, 3, 2, 1, 0),
                             _mm512_set_epi64(14, 11, 8, 4, 3, 2, 1, 0),
                             _mm512_set_epi64(15, 12, 9, 4, 3, 2, 1, 0)};
  long long i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m512d a = _mm512_loadu_pd(x + 3 * i), b = _mm512_loadu_pd(x + 3 * i + 8),
                  c = _mm512_loadu_pd(x + 3 * i + 16);
    const __m512d px = _mm512_permutex2var_pd(_mm512_permutex2var_pd(a, first[0], b), second[0], c);
    const __m512d py = _mm512_permutex2var_pd(_mm512_permutex2var_pd(a, first[1], b), second[1], c);
    const __m512d pz = _mm512_permutex2var_pd(_mm512_permutex2var_pd(a, first[2], b), second[2], c);
    const __m512i kx = spread3x8(cell8(px, lo0, sc0, top));
    const __m512i ky = spread3x8(cell8(py, lo1, sc1, top));
    const __m512i kz = spread3x8(cell8(pz, lo2, sc2, top));
    // 0xFE: a | b | c
    _mm512_storeu_si512(keys + i, _mm512_ternarylogic_epi64(kx, _mm512_slli_epi64(ky, 1),
                                                            _mm512_slli_epi64(kz, 2), 0xFE));
  }
  return i;
}
#endif

CUNUMPY_HOST_CLONES
void uniform_ids_range(double* __restrict out0, double* __restrict out1, std::uint64_t seed,
                       const std::uint64_t* __restrict stream, std::uint64_t counter,
                       long long begin, long long end) {
#if CUNUMPY_HOST_AVX512
  if (has_avx512()) begin = uniform_ids_avx512(out0, out1, seed, stream, counter, begin, end);
#endif
  if (out1 == nullptr) {
    for (long long i = begin; i < end; ++i) out0[i] = cunumpy_uniform(seed, stream[i], counter);
  } else {
    for (long long i = begin; i < end; ++i) {
      const cunumpy_u32x4 w = cunumpy_philox_words(seed, stream[i], counter);
      out0[i] = words_to_uniform(w, 0);
      out1[i] = words_to_uniform(w, 1);
    }
  }
}

CUNUMPY_HOST_CLONES
void uniform_pairs_range(double* __restrict out, long long n, std::uint64_t seed,
                         std::uint64_t stream, std::uint64_t base, double a, double b,
                         long long begin, long long end) {
  const long long full_end = end < n / 2 ? end : n / 2;  // pairs with both elements inside
#if CUNUMPY_HOST_AVX512
  if (has_avx512() && begin < full_end)
    begin = uniform_pairs_avx512(out, seed, stream, base, a, b, begin, full_end);
#endif
  for (long long p = begin; p < full_end; ++p) {
    const cunumpy_u32x4 w =
        cunumpy_philox_words(seed, stream, base + static_cast<std::uint64_t>(p));
    out[2 * p] = scale_shift(a, b - a, words_to_uniform(w, 0));
    out[2 * p + 1] = scale_shift(a, b - a, words_to_uniform(w, 1));
  }
  for (long long p = full_end > begin ? full_end : begin; p < end; ++p) {  // the odd last element
    const cunumpy_u32x4 w =
        cunumpy_philox_words(seed, stream, base + static_cast<std::uint64_t>(p));
    out[2 * p] = scale_shift(a, b - a, words_to_uniform(w, 0));
  }
}
CUNUMPY_HOST_CLONES
void morton3_range(std::uint64_t* __restrict keys, const double* __restrict x, double l0, double l1,
                   double l2, double s0, double s1, double s2, int levels, long long begin,
                   long long end) {
#if CUNUMPY_HOST_AVX512
  if (has_avx512()) begin = morton3_avx512(keys, x, l0, l1, l2, s0, s1, s2, levels, begin, end);
#endif
  for (long long i = begin; i < end; ++i)
    keys[i] =
        cunumpy_morton_key3(x[3 * i], x[3 * i + 1], x[3 * i + 2], l0, l1, l2, s0, s1, s2, levels);
}

CUNUMPY_HOST_CLONES
void morton2_range(std::uint64_t* __restrict keys, const double* __restrict x, double l0, double l1,
                   double s0, double s1, int levels, long long begin, long long end) {
  for (long long i = begin; i < end; ++i)
    keys[i] = cunumpy_morton_key2(x[2 * i], x[2 * i + 1], l0, l1, s0, s1, levels);
}
}  // namespace

void morton_keys(std::uint64_t* keys, const double* positions, long long n, int ndim,
                 const double* lower, const double* scale, int levels) {
#pragma omp parallel
  {
    const auto [begin, end] = omp_thread_range(n);
    if (ndim == 3)
      morton3_range(keys, positions, lower[0], lower[1], lower[2], scale[0], scale[1], scale[2],
                    levels, begin, end);
    else
      morton2_range(keys, positions, lower[0], lower[1], scale[0], scale[1], levels, begin, end);
  }
}

void philox_uniform_ids(double* out0, double* out1, std::uint64_t seed, const std::uint64_t* stream,
                        std::uint64_t counter, long long n) {
#pragma omp parallel
  {
    const auto [begin, end] = omp_thread_range(n);
    uniform_ids_range(out0, out1, seed, stream, counter, begin, end);
  }
}

void generator_fill(double* out, long long n, std::uint64_t seed, std::uint64_t stream,
                    std::uint64_t base, int kind, double a, double b) {
  const long long pairs = (n + 1) / 2;
  if (kind == 0) {
#pragma omp parallel
    {
      const auto [begin, end] = omp_thread_range(pairs);
      uniform_pairs_range(out, n, seed, stream, base, a, b, begin, end);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (long long p = 0; p < pairs; ++p) {
    double z0, z1;
    cunumpy_normal2(seed, stream, base + static_cast<std::uint64_t>(p), &z0, &z1);
    out[2 * p] = scale_shift(a, b, z0);
    if (2 * p + 1 < n) out[2 * p + 1] = scale_shift(a, b, z1);
  }
}

}  // namespace cunumpy::detail::host_fast
