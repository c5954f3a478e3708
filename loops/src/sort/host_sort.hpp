// loops/src/sort/host_sort.hpp: the host's stable radix sort behind sort_by_key (host memory
// and the emulated device's arena).  Compiled by the host compiler only: host_sort.cpp (the top
// digit), bucket_sort.cpp (each bucket), sort_simd.cpp (their vector pieces, one Highway
// source for every target, chosen at run time: host_simd/targets.hpp).
#pragma once

#include <cstdint>
#include <span>

#include <cunumpy/algorithms.hpp>

namespace cunumpy::detail {

// Sorts n words stably into out_keys, the permutation into out_order (out_order[j] = the index
// of the word that ends at j), and moves the rows of every carried array with them
// (rows[a].out row j = rows[a].in row out_order[j]).  Fewer than 2^32 words (ValueError).
void host_sort_words(const std::uint64_t* words, long long n, std::uint64_t* out_keys,
                     std::int64_t* out_order, std::span<const CarriedRows> rows);

}  // namespace cunumpy::detail
