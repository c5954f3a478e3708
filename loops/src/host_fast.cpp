#include "host_fast.hpp"

#include <string>

#include <cunumpy/morton.cuh>
#include <cunumpy/parallel.hpp>
#include <cunumpy/random.cuh>

#include "host_simd/generators.hpp"
#include "host_simd/targets.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cunumpy::detail::host_fast {

namespace {

void uniform_ids_range(double* __restrict out0, double* __restrict out1, std::uint64_t seed,
                       const std::uint64_t* __restrict stream, std::uint64_t counter,
                       long long begin, long long end) {
  if (host_simd::vector_loops())
    begin = host_simd::uniform_ids(out0, out1, seed, stream, counter, begin, end);
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

void uniform_pairs_range(double* __restrict out, long long n, std::uint64_t seed,
                         std::uint64_t stream, std::uint64_t base, double a, double b,
                         long long begin, long long end) {
  const long long full_end = end < n / 2 ? end : n / 2;  // pairs with both elements inside
  if (host_simd::vector_loops() && begin < full_end)
    begin = host_simd::uniform_pairs(out, seed, stream, base, a, b, begin, full_end);
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
// The plain loops' share of the finite check: x - x is 0 unless x is NaN or infinite.
inline bool finite(double x) {
  return x - x == 0.0;
}

bool morton3_range(std::uint64_t* __restrict keys, const double* __restrict x, double l0, double l1,
                   double l2, double s0, double s1, double s2, int levels, long long begin,
                   long long end) {
  bool non_finite = false;
  if (host_simd::vector_loops()) {
    const double lower[] = {l0, l1, l2}, scale[] = {s0, s1, s2};
    begin = host_simd::morton3(keys, x, lower, scale, levels, begin, end, &non_finite);
  }
  for (long long i = begin; i < end; ++i) {
    non_finite = non_finite || !finite(x[3 * i]) || !finite(x[3 * i + 1]) || !finite(x[3 * i + 2]);
    keys[i] =
        cunumpy_morton_key3(x[3 * i], x[3 * i + 1], x[3 * i + 2], l0, l1, l2, s0, s1, s2, levels);
  }
  return non_finite;
}

bool morton2_range(std::uint64_t* __restrict keys, const double* __restrict x, double l0, double l1,
                   double s0, double s1, int levels, long long begin, long long end) {
  bool non_finite = false;
  if (host_simd::vector_loops()) {
    const double lower[] = {l0, l1}, scale[] = {s0, s1};
    begin = host_simd::morton2(keys, x, lower, scale, levels, begin, end, &non_finite);
  }
  for (long long i = begin; i < end; ++i) {
    non_finite = non_finite || !finite(x[2 * i]) || !finite(x[2 * i + 1]);
    keys[i] = cunumpy_morton_key2(x[2 * i], x[2 * i + 1], l0, l1, s0, s1, levels);
  }
  return non_finite;
}
}  // namespace

bool morton_keys(std::uint64_t* keys, const double* positions, long long n, int ndim,
                 const double* lower, const double* scale, int levels) {
  bool non_finite = false;
#pragma omp parallel reduction(|| : non_finite)
  {
    const auto [begin, end] = omp_thread_range(n);
    if (ndim == 3)
      non_finite = morton3_range(keys, positions, lower[0], lower[1], lower[2], scale[0], scale[1],
                                 scale[2], levels, begin, end);
    else
      non_finite = morton2_range(keys, positions, lower[0], lower[1], scale[0], scale[1], levels,
                                 begin, end);
  }
  return non_finite;
}

namespace {
template <typename R>
void cell_keys_of(const host_simd::CellKeyColumns<R>& c, int dim, long long n,
                  std::uint64_t* keys) {
#pragma omp parallel
  {
    auto [begin, end] = omp_thread_range(n);
    if (host_simd::vector_loops()) begin = host_simd::cell_keys(c, dim, begin, end, keys);
    for (long long i = begin; i < end; ++i) keys[i] = host_simd::cell_key(c, dim, i);
  }
}
}  // namespace

void cell_keys(const host_simd::CellKeyColumns<float>& c, int dim, long long n,
               std::uint64_t* keys) {
  cell_keys_of(c, dim, n, keys);
}
void cell_keys(const host_simd::CellKeyColumns<double>& c, int dim, long long n,
               std::uint64_t* keys) {
  cell_keys_of(c, dim, n, keys);
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
