// cunumpy/host_targets.hpp: the instruction sets the host's vector loops run with, and the way
// to run one's own Highway loop on the one the library chose.
//
// The library compiles its vector loops with Google Highway for AVX-512, AVX2, NEON, SVE and
// SVE2 (and the portable EMU128) and picks one when first asked (CUNUMPY_HOST_SIMD: auto, the
// default, the best this CPU runs; avx512, avx2, neon, sve, sve2 for that one; portable for the
// plain loops).  An application's own Highway source follows the same choice: include this
// header before Highway's, so that it compiles the library's targets, export its function, and
// call it through CUNUMPY_HOST_DISPATCH:
//
//   #undef HWY_TARGET_INCLUDE
//   #define HWY_TARGET_INCLUDE "my_loop.cpp"
//   #include <cunumpy/host_targets.hpp>   // first: the targets compiled
//   #include <hwy/foreach_target.h>
//   #include <hwy/highway.h>
//   ... namespace HWY_NAMESPACE { void Scale(double* x, long long n) { ... } } ...
//   #if HWY_ONCE
//   HWY_EXPORT(Scale);
//   void scale(double* x, long long n) {
//     if (cunumpy::host_target() == cunumpy::HostTarget::portable) return scale_plain(x, n);
//     CUNUMPY_HOST_DISPATCH(Scale)(x, n);      // the target of cunumpy::host_target()
//   }
//   #endif
//
// Unlike HWY_DYNAMIC_DISPATCH, which follows a process-wide choice any Highway user may change
// (hwy::DisableTargets), CUNUMPY_HOST_DISPATCH follows CUNUMPY_HOST_SIMD alone.  The baseline
// is Highway's EMU128 or, with GCC before 12.3, its one-lane SCALAR (CUNUMPY_WIDE_VECTORS of
// cunumpy/host_vectors-inl.h tells them apart).
//
// CUNUMPY_HOST_CLONES marks a scalar function to be compiled for several x86-64 levels, the best
// the CPU runs chosen when the program starts (GCC's function multiversioning):
//
//   CUNUMPY_HOST_CLONES void scatter(...) { ... }   // AVX-512 (x86-64-v4), AVX2 (v3), baseline
//
// Elsewhere (clang, other architectures) it is compiled once, for the build's target.
#pragma once

// The targets compiled: x86-64's AVX-512 (Highway's AVX3: Skylake-SP and later, AMD Zen 4) and
// AVX2 (Haswell, AMD Zen 1-3); SSSE3, SSE4 and AVX3_DL are left out (no HPC node lacks AVX2, and
// each target is one more compilation of every loop).  ARM: NEON and, where the compiler can
// target them, SVE and SVE2 (Grace: Neoverse V2).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <hwy/targets.h>

namespace cunumpy {

// The host vector target the library's loops (and CUNUMPY_HOST_DISPATCH) run with.
enum class HostTarget { portable, avx2, avx512, neon, sve, sve2 };

// Chosen once, at the first call of this or any host vector loop (CUNUMPY_HOST_SIMD).
HostTarget host_target();

// "portable", "avx2", "avx512", "neon", "sve" or "sve2".
std::string_view to_string(HostTarget target);

namespace detail {

// Highway's bits: the chosen target and those below it (0 under portable).
std::int64_t host_highway_targets();

namespace {
// The index of the chosen target in this translation unit's dispatch tables (HWY_EXPORT), which
// depend on the targets compiled here: computed here, once.
inline std::size_t host_dispatch_index() {
  static const std::size_t index = [] {
    hwy::ChosenTarget chosen;
    const std::int64_t targets = host_highway_targets();
    chosen.Update(targets != 0 ? targets : HWY_STATIC_TARGET);
    return chosen.GetIndex();
  }();
  return index;
}
}  // namespace

}  // namespace detail
}  // namespace cunumpy

// The function of Highway table FUNC (HWY_EXPORT) for cunumpy::host_target(); the baseline's
// under portable.
#define CUNUMPY_HOST_DISPATCH(FUNC) \
  (*(HWY_DISPATCH_TABLE(FUNC)[::cunumpy::detail::host_dispatch_index()]))

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
// Compiled for x86-64-v4, x86-64-v3 and the baseline; the CPU's best runs.
#define CUNUMPY_HOST_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
// Compiled once, for the build's target.
#define CUNUMPY_HOST_CLONES
#endif
