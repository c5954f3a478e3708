// cunumpy/arithmetic.cuh: integer helpers shared by host and device code.
//
//   auto blocks = cunumpy::ceil_div(n, 256);           // blocks of 256 that cover n
//   auto bytes = cunumpy::round_up(bytes, 64);         // the next multiple of 64
//   auto [begin, end] = cunumpy::split_range(n, t, nt);  // part t of nt equal parts of [0, n)
#pragma once

#include "cunumpy/config.cuh"

namespace cunumpy {

// ceil(a / b) for a >= 0, b > 0.
template <typename I>
CUNUMPY_HD_INLINE constexpr I ceil_div(I a, I b) {
  return (a + b - 1) / b;
}

// The smallest multiple of `multiple` (> 0) that is >= value (>= 0).
template <typename I>
CUNUMPY_HD_INLINE constexpr I round_up(I value, I multiple) {
  return ceil_div(value, multiple) * multiple;
}

// A half-open range of indices, [begin, end).
struct IndexRange {
  long long begin;
  long long end;
};

// Part `part` of `parts` contiguous, nearly equal parts of [0, n): [n*part/parts,
// n*(part+1)/parts), so the parts cover [0, n) in order whatever n and parts are.
CUNUMPY_HD_INLINE constexpr IndexRange split_range(long long n, int part, int parts) {
  return {n * part / parts, n * (part + 1) / parts};
}

}  // namespace cunumpy
