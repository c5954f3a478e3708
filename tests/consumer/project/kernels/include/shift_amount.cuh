// The consumer's own device header, found through include_dirs as <shift_amount.cuh>.
#pragma once
__device__ inline double shift_amount(long long i) {
  return 0.5 * static_cast<double>(i);
}
