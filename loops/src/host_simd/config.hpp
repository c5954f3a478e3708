// loops/src/host_simd/config.hpp: the Highway targets the host's vector loops are compiled
// for.  Included first by every translation unit that includes Highway (before its headers).
//
// x86-64: AVX-512 (Highway's AVX3: Skylake-SP and later, AMD Zen 4), AVX2 (Haswell, AMD Zen 1-3
// such as Milan) and EMU128 (Highway's portable fallback); SSSE3 and SSE4 are left out (no HPC
// node lacks AVX2, and each target is one more compilation of every kernel).  ARM: NEON and,
// where the compiler can target them, SVE and SVE2 (Grace: Neoverse V2).
#pragma once

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif
