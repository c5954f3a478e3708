// kernels/src/host_fast.hpp: host loops for the hottest generators, compiled by the host
// compiler in several instruction-set versions (x86-64-v4, v3 and baseline, chosen at run
// time), so that they vectorise on the CPUs that allow it.  Same formulas as the device
// (random.cuh), so the same bits.
#pragma once

#include <cstdint>
#include <string>

namespace cunumpy::detail::host_fast {

// Whether the hand-vectorised AVX-512 paths run: this CPU has AVX-512 F, DQ, VL and BW (what
// they use; every CPU with DQ has the other two, x86-64-v4) and CUNUMPY_HOST_SIMD does not say
// portable.  simd_report() says which and why (cunumpy::host_simd()).
bool cpu_has_avx512();
std::string simd_report();

// out0[i] (and out1[i] when not null) = cunumpy_uniform2(seed, stream[i], counter).
void philox_uniform_ids(double* out0, double* out1, std::uint64_t seed, const std::uint64_t* stream,
                        std::uint64_t counter, long long n);

// Pairs p in [0, pairs): out[2p], out[2p + 1] = uniform2(seed, stream, base + p) mapped to
// a + (b - a) * u (kind 0) or normal2 mapped to a + b * z (kind 1); out has n elements.
void generator_fill(double* out, long long n, std::uint64_t seed, std::uint64_t stream,
                    std::uint64_t base, int kind, double a, double b);

// keys[i] = cunumpy_morton_key2/3 of row i of positions (n, ndim), ndim 2 or 3.
void morton_keys(std::uint64_t* keys, const double* positions, long long n, int ndim,
                 const double* lower, const double* scale, int levels);

}  // namespace cunumpy::detail::host_fast
