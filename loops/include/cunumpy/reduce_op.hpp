// cunumpy/reduce_op.hpp: the reduction operations of parallel_reduce (sum, min, max), their
// identities and how two partial results combine, shared by host and device code.
#pragma once

#include <limits>

#include <cunumpy/config.cuh>

namespace cunumpy {

// The reductions parallel_reduce computes.
enum class ReduceOp { sum, min, max };

namespace detail {

// The value that leaves any other unchanged: 0, +inf (or max), -inf (or lowest).
template <typename T>
CUNUMPY_HD_INLINE T reduce_identity(ReduceOp op) {
  if (op == ReduceOp::sum) return T(0);
  using limits = std::numeric_limits<T>;
  if (op == ReduceOp::min) return limits::has_infinity ? limits::infinity() : limits::max();
  return limits::has_infinity ? -limits::infinity() : limits::lowest();
}

template <typename T>
CUNUMPY_HD_INLINE T reduce_combine(ReduceOp op, T a, T b) {
  if (op == ReduceOp::sum) return a + b;
  if (op == ReduceOp::min) return b < a ? b : a;
  return a < b ? b : a;
}

}  // namespace detail
}  // namespace cunumpy
