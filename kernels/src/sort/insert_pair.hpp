// kernels/src/sort/insert_pair.hpp: the insertion step of a bucket's sort, shared by the plain
// loops (bucket_sort.cpp) and the vector settle's slow path (sort_simd.cpp).
#pragma once

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

}  // namespace cunumpy::detail::host_sort
