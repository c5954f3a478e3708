// loops/src/host_fast.hpp: host loops for the hottest generators, run over OpenMP threads:
// whole vectors through host_simd/generators.cpp (one Highway source, the target chosen at run
// time), the last elements (and everything under CUNUMPY_HOST_SIMD=portable) by the device's
// formulas (random.cuh, morton.cuh) one at a time.  The same bits either way.
#pragma once

#include <cstdint>
#include <string>

#include "host_simd/cell_keys.hpp"

namespace cunumpy::detail::host_fast {

// out0[i] (and out1[i] when not null) = cunumpy_uniform2(seed, stream[i], counter).
void philox_uniform_ids(double* out0, double* out1, std::uint64_t seed, const std::uint64_t* stream,
                        std::uint64_t counter, long long n);

// Pairs p in [0, pairs): out[2p], out[2p + 1] = uniform2(seed, stream, base + p) mapped to
// a + (b - a) * u (kind 0) or normal2 mapped to a + b * z (kind 1); out has n elements.
void generator_fill(double* out, long long n, std::uint64_t seed, std::uint64_t stream,
                    std::uint64_t base, int kind, double a, double b);

// keys[i] = cunumpy_morton_key2/3 of row i of positions (n, ndim), ndim 2 or 3.  True when a
// coordinate is NaN or infinite (found in the same pass).
bool morton_keys(std::uint64_t* keys, const double* positions, long long n, int ndim,
                 const double* lower, const double* scale, int levels);

// keys[i] = host_simd::cell_key(c, dim, i) for i in [0, n) (cunumpy::periodic_cell_keys).
void cell_keys(const host_simd::CellKeyColumns<float>& c, int dim, long long n,
               std::uint64_t* keys);
void cell_keys(const host_simd::CellKeyColumns<double>& c, int dim, long long n,
               std::uint64_t* keys);

}  // namespace cunumpy::detail::host_fast
