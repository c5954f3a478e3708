// loops/src/host_simd/generators.hpp: the vector loops of the Philox fills and the Morton
// keys (generators.cpp: one Highway source, every target of config.hpp).  Each handles whole
// vectors from `begin` on and returns where it stopped; the caller's plain loop (the device's
// formulas) finishes the last elements.  Only called when host_simd::vector_loops().
#pragma once

#include <cstdint>

namespace cunumpy::detail::host_simd {

// out0[i] (and out1[i] when not null) = cunumpy_uniform2(seed, stream[i], counter).
long long uniform_ids(double* out0, double* out1, std::uint64_t seed, const std::uint64_t* stream,
                      std::uint64_t counter, long long begin, long long end);

// Pairs p: out[2p], out[2p + 1] = a + (b - a) * uniform2(seed, stream, base + p), a multiply
// then an add (as on the device).
long long uniform_pairs(double* out, std::uint64_t seed, std::uint64_t stream, std::uint64_t base,
                        double a, double b, long long begin, long long end);

// keys[i] = cunumpy_morton_key3 / key2 of row i of x (rows of 3 / 2 doubles).
// *non_finite becomes true when a coordinate of the rows done is NaN or infinite.
long long morton3(std::uint64_t* keys, const double* x, const double* lower, const double* scale,
                  int levels, long long begin, long long end, bool* non_finite);
long long morton2(std::uint64_t* keys, const double* x, const double* lower, const double* scale,
                  int levels, long long begin, long long end, bool* non_finite);

}  // namespace cunumpy::detail::host_simd
