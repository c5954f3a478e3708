// cunumpy/host_vectors-inl.h: the vector operations host loops need beyond Google Highway's
// (1.0.3, Debian 12's), each instruction set's code here and nowhere in an application.
//
// A Highway per-target header: include it after <hwy/highway.h> in a source that Highway
// compiles once per target (HWY_TARGET_INCLUDE / foreach_target.h), outside any namespace; its
// operations are in cunumpy::HWY_NAMESPACE:
//
//   namespace hn = hwy::HWY_NAMESPACE;
//   namespace cv = cunumpy::HWY_NAMESPACE;
//   const auto cells = cv::TruncInRange(d, positions);        // in-range truncation to int32
//   const auto w = cv::TwoTablesLookupLanes(dd, a, b, idx);    // lanes of a (0..N-1), b (N..2N-1)
//   #if CUNUMPY_TWO_TABLES_ONE_INSTRUCTION ...                 // where that is one instruction
//   #if CUNUMPY_CHEAP_BLOCK_BROADCASTS ...                     // 128-bit broadcast loads, blends
//   #if CUNUMPY_WIDE_VECTORS ...                                // more than one lane
//
// (The three are macros, set anew for each target, so that code using operations a target lacks
// can be left out of it.)
//
// Every operation has a portable form with the same results on every target (NEON, SVE, the
// baseline); the x86 forms are faster.  CUNUMPY_HOST_CLONES (outside the per-target part) marks
// a scalar function to be compiled for x86-64-v4, -v3 and the baseline, chosen at run time.

// Per target (Highway's include guard convention for -inl headers).
#if defined(CUNUMPY_HOST_VECTORS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CUNUMPY_HOST_VECTORS_INL_H_
#undef CUNUMPY_HOST_VECTORS_INL_H_
#else
#define CUNUMPY_HOST_VECTORS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

// 1 where a vector holds more than one lane, 0 on Highway's SCALAR target (the baseline of
// GCC before 12.3, whose EMU128 Highway leaves out): one lane has no halves, no interleaving, no
// shuffles; a loop over whole vectors leaves it to the plain loop.
#undef CUNUMPY_WIDE_VECTORS
#if HWY_TARGET == HWY_SCALAR
#define CUNUMPY_WIDE_VECTORS 0
#else
#define CUNUMPY_WIDE_VECTORS 1
#endif

HWY_BEFORE_NAMESPACE();
namespace cunumpy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Truncation (toward zero) to int32 of floats or doubles inside int32's range (never NaN):
// Highway's ConvertTo (floats) or DemoteTo (doubles) less their handling of lanes out of range,
// four instructions a vector (floats) or one (doubles) on x86; ARM's conversions saturate by
// themselves.  The same integers for every lane in range.
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<std::int32_t, D>> TruncInRange(D d, hn::Vec<D> v) {
  const hn::Rebind<std::int32_t, D> d32;
  constexpr bool kFloat = std::is_same_v<hn::TFromD<D>, float>;
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  using VI = hn::Vec<decltype(d32)>;
  if constexpr (sizeof(v.raw) == 16) {
    if constexpr (kFloat)
      return VI{_mm_cvttps_epi32(v.raw)};
    else
      return VI{_mm_cvttpd_epi32(v.raw)};
#if HWY_TARGET <= HWY_AVX2
  } else if constexpr (sizeof(v.raw) == 32) {
    if constexpr (kFloat)
      return VI{_mm256_cvttps_epi32(v.raw)};
    else
      return VI{_mm256_cvttpd_epi32(v.raw)};
#endif
#if HWY_TARGET <= HWY_AVX3
  } else if constexpr (sizeof(v.raw) == 64) {
    if constexpr (kFloat)
      return VI{_mm512_cvttps_epi32(v.raw)};
    else
      return VI{_mm512_cvttpd_epi32(v.raw)};
#endif
  }
#endif
  (void)d;
  if constexpr (kFloat)
    return hn::ConvertTo(d32, v);
  else
    return hn::DemoteTo(d32, v);
}

// Lane i of the result: lane idx[i] of a where idx[i] < N (the lanes of a vector), else lane
// idx[i] - N of b; 64-bit lanes.  One two-source permute on AVX-512 (where
// CUNUMPY_TWO_TABLES_ONE_INSTRUCTION is 1), elsewhere through memory.
#undef CUNUMPY_TWO_TABLES_ONE_INSTRUCTION
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define CUNUMPY_TWO_TABLES_ONE_INSTRUCTION 1
#else
#define CUNUMPY_TWO_TABLES_ONE_INSTRUCTION 0
#endif
template <class D>
HWY_INLINE hn::Vec<D> TwoTablesLookupLanes(D d, hn::Vec<D> a, hn::Vec<D> b,
                                           hn::Vec<hn::RebindToSigned<D>> idx) {
  static_assert(sizeof(hn::TFromD<D>) == 8, "64-bit lanes");
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if constexpr (hn::MaxLanes(D()) == 8 && std::is_same_v<hn::TFromD<D>, double>)
    return hn::Vec<D>{_mm512_permutex2var_pd(a.raw, idx.raw, b.raw)};
#endif
  constexpr std::size_t kMax = hn::MaxLanes(D());
  const std::size_t n = hn::Lanes(d);
  HWY_ALIGN hn::TFromD<D> both[2 * kMax];
  HWY_ALIGN hn::TFromD<hn::RebindToSigned<D>> at[kMax];
  hn::StoreU(a, d, both);
  hn::StoreU(b, d, both + n);
  hn::StoreU(idx, hn::RebindToSigned<D>(), at);
  HWY_ALIGN hn::TFromD<D> out[kMax];
  for (std::size_t i = 0; i < n; ++i) out[i] = both[static_cast<std::size_t>(at[i])];
  return hn::LoadU(d, out);
}

// 1 where 128-bit broadcast loads merged under masks (LoadDup128, IfThenElse) are cheaper than
// copying and transposing: x86's 256- and 512-bit vectors.
#undef CUNUMPY_CHEAP_BLOCK_BROADCASTS
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
#define CUNUMPY_CHEAP_BLOCK_BROADCASTS 1
#else
#define CUNUMPY_CHEAP_BLOCK_BROADCASTS 0
#endif

}  // namespace HWY_NAMESPACE
}  // namespace cunumpy
HWY_AFTER_NAMESPACE();

#endif  // CUNUMPY_HOST_VECTORS_INL_H_
