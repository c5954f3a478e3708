// loops/src/sort/plain_steps.hpp: the plain steps of a bucket's sort (the insertion of a
// pair, the prefix scan of the counts), shared by the plain loops (bucket_sort.cpp) and the
// vector ones' slow paths and one-lane entries (sort_simd.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

namespace cunumpy::detail::host_sort {

// Moves pair i, which is below pair i - 1, back among the sorted pairs [0, i) to its stable
// place.
template <typename T>
inline void move_back(std::uint64_t* k, T* t, long long i) {
  const std::uint64_t key = k[i];
  const T v = t[i];
  long long j = i - 1;
  do {
    k[j + 1] = k[j];
    t[j + 1] = t[j];
    --j;
  } while (j >= 0 && k[j] > key);
  k[j + 1] = key;
  t[j + 1] = v;
}

// Moves pair i back among the sorted pairs [0, i) to its stable place.
template <typename T>
inline void insert_pair(std::uint64_t* k, T* t, long long i) {
  if (k[i] < k[i - 1]) move_back(k, t, i);
}

template <typename T>
void insertion_sort(std::uint64_t* k, T* t, long long n) {
  for (long long i = 1; i < n; ++i) insert_pair(k, t, i);
}

// count[0, digits) -> exclusive prefix sums; returns the largest count.
template <typename C>
std::uint32_t scan_counts_scalar(C* count, int digits) {
  std::uint32_t offset = 0, largest = 0;
  for (int d = 0; d < digits; ++d) {
    const std::uint32_t c = count[d];
    count[d] = static_cast<C>(offset);
    offset += c;
    largest = std::max(largest, c);
  }
  return largest;
}

}  // namespace cunumpy::detail::host_sort
