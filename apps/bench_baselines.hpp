// apps/bench_baselines.hpp: what a user would write instead of cunumpy's host loops, for
// apps/bench_algorithms to compare against in the same run: bench_baselines.cpp compiled with
// -O3 -march=native (namespace baseline) and, on x86-64, again with -O3 -march=x86-64-v3
// (namespace baseline_avx2: what -march=native gives on an AVX2 machine such as AMD Milan, the
// peer of cunumpy's AVX2 target when CUNUMPY_HOST_SIMD=avx2 runs on an AVX-512 machine).
// No include guard: bench_algorithms.cpp includes it once per namespace (BASELINE_NAMESPACE).

#include <cstdint>
#include <string>

#ifndef BASELINE_NAMESPACE
#define BASELINE_NAMESPACE baseline
#endif

namespace BASELINE_NAMESPACE {

// Scalar Philox4x32-10 with Random123's rounds (philox4x32_R(10, ...)), one call per output:
// counter (ctr, ctr >> 32, id, id >> 32), key (seed, seed >> 32); the uniform from words 0 (high)
// and 1 (low) as a 53-bit fraction.  The same values as cunumpy::philox_uniform.
void philox_uniform(double* out, std::uint64_t seed, const std::uint64_t* ids,
                    std::uint64_t counter, long long n);

// 3D Morton keys of n points (rows x, y, z) from doubles: the cell (x - lower) * scale clamped
// to the box and truncated, then encoded with BMI2 pdep (libmorton's fastest host method), or
// with the shift-and-mask method where the CPU or compiler has no BMI2.
void morton3(std::uint64_t* keys, const double* x, long long n, const double* lower,
             const double* scale, int levels);
// Which encoder morton3 uses ("bmi2 pdep" or "shift-and-mask").
std::string morton3_method();

}  // namespace BASELINE_NAMESPACE
