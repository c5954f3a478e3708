// Uses only cunumpy::device_headers (no library to link).
#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>

double consumer_sum(cunumpy::Array1D<double> v) {
  double s = 0.0;
  for (long long i = 0; i < v.shape[0]; ++i) cunumpy_atomic_add(&s, v(i));
  return s;
}
