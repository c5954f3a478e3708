// cunumpy/host_targets.hpp: a scalar host function compiled for several x86-64 levels, the best
// the CPU runs chosen when the program starts (GCC's function multiversioning).
//
//   CUNUMPY_HOST_CLONES void scatter(...) { ... }   // AVX-512 (x86-64-v4), AVX2 (v3), baseline
//
// Nothing elsewhere (clang, other architectures): the function is compiled once, for the
// build's target.  Vector loops use Highway and cunumpy/host_vectors-inl.h instead.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
// Compiled for x86-64-v4, x86-64-v3 and the baseline; the CPU's best runs.
#define CUNUMPY_HOST_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
// Compiled once, for the build's target.
#define CUNUMPY_HOST_CLONES
#endif
